#!/usr/bin/env bash
# On a GPU machine, from the repository root: SDPA on nested (jagged) tensors against the rules.
#   1. the medium grid of benchmarks/verify_grid.py (160 configs, a third of them thd) with the four SDPA backends
#      and cudnn-fe, `--jobs 8`, recorded;
#   2. benchmarks/nested_cudnn_bwd.jsonl (jagged training, one head dim against shorter and longer sequences) on
#      sdpa-cudnn and sdpa-efficient, recorded.
# Records and reports go to $OUT; a table of outcomes against predictions is printed last.
set -u
. benchmarks/device_env.sh
OUT=$(cd "$OUT" && pwd)
B="--backend sdpa-flash --backend sdpa-efficient --backend sdpa-cudnn --backend sdpa-math --backend cudnn-fe"
python3 benchmarks/verify_grid.py "$OUT/grid.jsonl" --size medium
(cd "$(mktemp -d)" && timeout 200 python3 -m attndoctor verify --config-file "$OUT/grid.jsonl" --seed 7 $B --jobs 8 \
  --format json --record "$OUT/grid.jsonl.rec" > "$OUT/grid.json" 2>> "$OUT/stderr.txt")
echo "grid exit $?"
(ROOT=$PWD; cd "$(mktemp -d)" && timeout 200 python3 -m attndoctor verify --config-file "$ROOT/benchmarks/nested_cudnn_bwd.jsonl" \
  --seed 7 --backend sdpa-cudnn --backend sdpa-efficient --jobs 4 --format json --record "$OUT/bwd.jsonl" \
  > "$OUT/bwd.json" 2>> "$OUT/stderr.txt")
echo "bwd exit $?"
python3 benchmarks/grid_report.py "$OUT/grid.jsonl.rec"
python3 benchmarks/grid_report.py "$OUT/bwd.jsonl" --all
