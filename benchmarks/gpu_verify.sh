#!/usr/bin/env bash
# On a GPU machine, from the repository root: the GPU tests (isolation with planted crashes, small configs), then
# `verify` over the bundled shapes (recorded, timed), then a small SDPA grid through one worker (recorded).
# Wheels in .whl/ (cudnn-frontend, pytest) are installed to /tmp/site first when present. Results go to $OUT.
set -u
OUT=${OUT:-verify-out}
. benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/timing.txt"
python3 -c "import torch, cudnn; print('torch', torch.__version__, 'cudnn', torch.backends.cudnn.version(), \
'frontend backend', cudnn.backend_version())" 2>&1 | tail -2 | tee -a "$OUT/timing.txt"
t=$(ms); timeout 170 python3 -m pytest -q -p no:cacheprovider -rs tests/test_kernels_gpu.py \
  tests/test_kernels_worker.py > "$OUT/gpu_tests.txt" 2>&1; echo "gpu tests exit $? in $(( $(ms) - t )) ms" \
  | tee -a "$OUT/timing.txt"; tail -15 "$OUT/gpu_tests.txt"
t=$(ms); timeout 220 python3 -m attndoctor verify --record "$OUT/bundled.jsonl" > "$OUT/verify_bundled.txt" \
  2> "$OUT/stderr.txt"; echo "bundled sweep (train+infer, all installed backends) exit $? wall \
$(( $(ms) - t )) ms" | tee -a "$OUT/timing.txt"
python3 benchmarks/verify_grid.py /tmp/grid.jsonl
t=$(ms); timeout 110 python3 -m attndoctor verify --config-file /tmp/grid.jsonl --backend sdpa-flash \
  --backend sdpa-efficient --backend sdpa-cudnn --backend sdpa-math --repeats 1 --record "$OUT/grid.jsonl" \
  > "$OUT/verify_grid.txt" 2>> "$OUT/stderr.txt"; echo "grid exit $? wall $(( $(ms) - t )) ms" \
  | tee -a "$OUT/timing.txt"
python3 benchmarks/verify_summary.py "$OUT/bundled.jsonl" > "$OUT/summary.txt" 2>&1
python3 benchmarks/verify_summary.py --repeats 1 "$OUT/grid.jsonl" >> "$OUT/summary.txt" 2>&1
head -c 6000 "$OUT/summary.txt"; tail -8 "$OUT/stderr.txt"
