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
T0=$(ms)
(cd "$(mktemp -d)" && timeout "${LIMIT:-540}" python3 -m attndoctor verify --config-file "$OUT/grid.jsonl" --seed 7 \
  $B --jobs 8 --format json --record "$OUT/grid.rec.jsonl" > /dev/null 2>> "$OUT/stderr.txt")
echo "verify exit $? wall $(( ($(ms) - T0) / 1000 )) s"
python3 benchmarks/grid_report.py "$OUT/grid.rec.jsonl"
