#!/usr/bin/env bash
# On the GPU machine, from the repository root: record the SDPA acceptance grid and time the bundled sweep.
# Wheels in .whl/ (cudnn-frontend) are installed to /tmp/site first when present. Results go to $OUT.
set -u
OUT=${OUT:-record-out}
. benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/timing.txt"
python3 benchmarks/sdpa_acceptance_grid.py /tmp/grid.jsonl --count "${GRID:-400}"
t=$(ms); timeout 330 python3 -m attndoctor verify --config-file /tmp/grid.jsonl --backend sdpa-flash \
  --backend sdpa-efficient --backend sdpa-cudnn --backend sdpa-math --repeats 1 --record "$OUT/grid.jsonl" \
  > "$OUT/verify_grid.txt" 2> "$OUT/stderr.txt"; echo "grid exit $? wall $(( $(ms) - t )) ms" | tee -a "$OUT/timing.txt"
t=$(ms); timeout 120 python3 -m attndoctor verify --record "$OUT/bundled.jsonl" > "$OUT/verify_bundled.txt" \
  2>> "$OUT/stderr.txt"; echo "bundled sweep exit $? wall $(( $(ms) - t )) ms" | tee -a "$OUT/timing.txt"
python3 benchmarks/verify_summary.py --repeats 1 "$OUT/grid.jsonl" > "$OUT/summary.txt" 2>&1
python3 benchmarks/verify_summary.py "$OUT/bundled.jsonl" >> "$OUT/summary.txt" 2>&1
tail -c 4000 "$OUT/summary.txt"; tail -5 "$OUT/stderr.txt"; cat "$OUT/timing.txt"
