#!/usr/bin/env bash
# On a GPU machine, from the repository root: FlexAttention (backend flex-attention) verified over a sweep of head
# dims, dtypes, train/infer, masks, score_mods and GQA (benchmarks/flex_grid.py), each probe compiled with
# torch.compile and compared with the float64 reference; recorded as observations; then flex-attention timed
# against sdpa-cudnn and sdpa-flash on one shape. About 7 minutes on an H100 for the whole sweep.
#   SHARD=0/2 bash benchmarks/flex_gpu.sh   # every 2nd config from the first (run 1/2 on a second machine)
#   BENCH=0 skips the timing. Results go to $OUT: flex.jsonl (observations), verify.txt, bench.txt, table.txt.
set -u
OUT=${OUT:-flex-out}
SHARD=${SHARD:-0/1}
. benchmarks/device_env.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -c 'A-Za-z0-9\n' '_')
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, \
'sm', torch.cuda.get_device_capability(), 'smem/block optin', \
torch.cuda.get_device_properties(0).shared_memory_per_block_optin)" 2>&1 | tail -1 | tee "$OUT/timing.txt"
python3 benchmarks/flex_grid.py configs /tmp/flex_grid.jsonl --shard "$SHARD"
record="$OUT/flex_${gpu}_shard${SHARD/\//of}.jsonl"
t=$(ms); timeout 450 python3 -m attndoctor verify --config-file /tmp/flex_grid.jsonl --backend flex-attention \
  --repeats 1 --timeout 120 --record "$record" > "$OUT/verify.txt" 2> "$OUT/stderr.txt"
echo "flex sweep (shard $SHARD) exit $? wall $(( $(ms) - t )) ms" | tee -a "$OUT/timing.txt"
if [ "${BENCH:-1}" = 1 ]; then
  t=$(ms); timeout 120 python3 -m attndoctor bench --backend flex-attention --backend sdpa-cudnn \
    --backend sdpa-flash --batch 2 --heads 16 --seqlen 4096 --hdim 128 --dtype bf16 --causal --train \
    --timeout 100 > "$OUT/bench.txt" 2>> "$OUT/stderr.txt"
  echo "bench exit $? wall $(( $(ms) - t )) ms" | tee -a "$OUT/timing.txt"
  tail -12 "$OUT/bench.txt"
fi
tail -5 "$OUT/stderr.txt"
python3 benchmarks/flex_grid.py table "$record" | tee "$OUT/table.txt"
