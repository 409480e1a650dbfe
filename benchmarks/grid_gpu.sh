#!/usr/bin/env bash
# On a GPU machine, from the repository root: a grid of benchmarks/verify_grid.py ($SIZE, default large) through
# `verify --jobs 8` with the four SDPA backends and cudnn-fe (or $BACKENDS, space-separated), recorded under $OUT;
# prints the contradictions last.
set -u
SIZE=${SIZE:-large}
BACKENDS=${BACKENDS:-sdpa-flash sdpa-efficient sdpa-cudnn sdpa-math cudnn-fe}
B=""; for b in $BACKENDS; do B="$B --backend $b"; done
. benchmarks/device_env.sh
OUT=$(cd "$OUT" && pwd)
python3 benchmarks/verify_grid.py "$OUT/grid.jsonl" --size "$SIZE"
verify_recorded grid "${LIMIT:-540}" "$OUT/grid.rec.jsonl" --config-file "$OUT/grid.jsonl" $B
python3 benchmarks/grid_report.py "$OUT/grid.rec.jsonl"
