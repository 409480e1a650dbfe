#!/usr/bin/env bash
# attndoctor fleet over torchrun on a 2-GPU machine (nvidia-h200-x2), one process per GPU:
#   identical ranks; NVTE_FUSED_ATTN=0 on rank 1 only; TORCH_CUDNN_SDPA_DEPRIORITIZED=1 on rank 1 only.
# Each run's JSON (rank 0's stdout) and exit code land in $OUT; copy them to benchmarks/results/fleet_h200x2_*.
set -u
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1  # leave NVLink multicast off
export PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT=${OUT:-/tmp/fleet_out}; mkdir -p "$OUT"
PYTHON=${PYTHON:-python3}; export PYTHON
log="$OUT/fleet_h200x2.log"
{ nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv 2>&1
  "$PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count(), "cudnn", torch.backends.cudnn.version())' 2>&1
  command -v attndoctor > /dev/null || "$PYTHON" -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
  command -v attndoctor; } > "$log"
if command -v attndoctor > /dev/null; then fleet=(--no-python attndoctor fleet); else fleet=(-m attndoctor fleet); fi
port=29611
run() {  # name, then the torchrun arguments after --nproc-per-node and --master-port
  local name=$1 ext=$2; shift 2
  port=$((port + 1))
  local t0; t0=$(date +%s%N)
  timeout 90 torchrun --nproc-per-node 2 --master-port "$port" "$@" > "$OUT/fleet_h200x2_$name.$ext" 2>> "$log"
  local code=$?
  echo "$name.$ext exit=$code ms=$(( ($(date +%s%N) - t0) / 1000000 ))" | tee -a "$log"
}
wrap=(--no-python benchmarks/fleet_rank_env.sh)
run identical json "${fleet[@]}" --format json
run nvte_fused_attn_0_rank1 json "${wrap[@]}" 1 NVTE_FUSED_ATTN=0 fleet --format json
run cudnn_sdpa_deprioritized_rank1 json "${wrap[@]}" 1 TORCH_CUDNN_SDPA_DEPRIORITIZED=1 fleet --format json
run cudnn_sdpa_deprioritized_rank1 txt "${wrap[@]}" 1 TORCH_CUDNN_SDPA_DEPRIORITIZED=1 fleet --details
