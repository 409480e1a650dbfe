#!/usr/bin/env bash
# On a GPU machine, from the repository root: `verify --stress` proves pytorch#196678 blind (its advisory ignored
# through a settings file), then with the advisory, then sweeps the bundled shapes (timed). Results go to $OUT.
set -u
OUT=${OUT:-stress-out}
. benchmarks/device_env.sh
OUT=$(cd "$OUT" && pwd)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/timing.txt"
CASE="--heads 1 --hdim 64 --dtype bf16 --mask arbitrary --train --seed 7"
BLIND=$(mktemp -d)
printf 'ignore = [{ rule = "ADV-CUDNN-SM90-BWD-KV64-LSE-NAN", reason = "prove verify --stress finds it blind" }]\n' \
  > "$BLIND/attndoctor.toml"
for L in 704 640; do
  t=$(ms); (cd "$BLIND" && timeout 200 python3 -m attndoctor verify --stress $CASE --seqlen $L --details \
    --record "$OUT/blind_$L.jsonl") > "$OUT/blind_$L.txt" 2>> "$OUT/stderr.txt"
  echo "blind L=$L exit $? wall $(( $(ms) - t )) ms" | tee -a "$OUT/timing.txt"
done
t=$(ms); timeout 200 python3 -m attndoctor verify --stress $CASE --seqlen 704 --format json \
  > "$OUT/known_704.json" 2>> "$OUT/stderr.txt"; echo "with the advisory exit $? wall $(( $(ms) - t )) ms" \
  | tee -a "$OUT/timing.txt"
t=$(ms); timeout 400 python3 -m attndoctor verify --stress --seed 7 --details --record "$OUT/bundled.jsonl" \
  > "$OUT/bundled.txt" 2>> "$OUT/stderr.txt"; echo "bundled stress sweep exit $? wall $(( $(ms) - t )) ms" \
  | tee -a "$OUT/timing.txt"
echo "== blind 704"; sed -n '1,40p' "$OUT/blind_704.txt" | cut -c1-200
echo "== blind 640"; grep -v "^#\|^import\|^from\|^torch\|^B, \|^dt\|^u = \|^q = \|^k = \|^v = \|^mask\|^with\|^    \|^print\|^g = \|^out\|^for" \
  "$OUT/blind_640.txt" | head -20 | cut -c1-200
echo "== bundled"; grep -v "^#\|^import\|^from\|^torch\|^B, \|^dt\|^u = \|^q = \|^k = \|^v = \|^mask\|^with\|^    \|^print\|^g = \|^out\|^for" \
  "$OUT/bundled.txt" | head -60 | cut -c1-200
tail -5 "$OUT/stderr.txt"; cat "$OUT/timing.txt"
