#!/usr/bin/env bash
# On a GPU machine, from the repository root: the cudnn-fe grids with older cudnn-frontend releases against the
# machine's one cuDNN. .few/ holds nvidia-cudnn-frontend cp312 wheels (pip download --no-deps, one per release);
# each is installed alone and `verify --backend cudnn-fe` runs $GRIDS (default "features medium") of
# benchmarks/verify_grid.py with it; records gzipped under $OUT, contradictions printed last.
set -u
. benchmarks/device_env.sh
OUT=$(cd "$OUT" && pwd)
BASE=$PYTHONPATH
for W in .few/*.whl; do
  V=$(basename "$W" | cut -d- -f2)
  rm -rf "/tmp/fe$V" && python3 -m pip install -q --no-index --no-deps --no-compile --target "/tmp/fe$V" "$W" || continue
  export PYTHONPATH="/tmp/fe$V:$BASE"
  python3 -c "import cudnn; print('frontend', cudnn.__version__, 'backend', cudnn.backend_version())" 2>&1 | tail -1
  for G in ${GRIDS:-features medium}; do
    python3 benchmarks/verify_grid.py "$OUT/$G.jsonl" --size "$G" > /dev/null
    verify_recorded "fe $V $G" "${LIMIT:-120}" "$OUT/fe$V.$G.rec.jsonl" --config-file "$OUT/$G.jsonl" --backend cudnn-fe
  done
done
for R in "$OUT"/fe*.rec.jsonl; do python3 benchmarks/grid_report.py "$R"; gzip -f "$R"; done
