#!/usr/bin/env bash
# On a GPU machine, from the root of a tree holding this change, with the code before it at $BASE (default base/):
#   PART=stress: the bundled `verify --stress --seed 7`, before then after, each in a cold compile cache
#   PART=verify: the bundled `verify --seed 7`, before then after; then `bench` on benchmarks/memory_shapes.jsonl
#   PART=jobs: this tree alone, `--jobs 1` against `--jobs $JOBS` (default 8), each in a cold compile cache: the
#     bundled `verify` ($VARGS), then the bundled `verify --stress` with --jobs $JOBS, again with that run's compile
#     cache warm, then with --jobs 1 in what is left of $BUDGET seconds (or $STRESS_J1: that run's record from an
#     earlier call); $RECORDED: a recorded stress run to compare
#   PART=grid: this tree alone, the medium grid of benchmarks/verify_grid.py (160 configs) with $VARGS, `--jobs 1`
#     against `--jobs $JOBS`, each in a cold compile cache
# Each run records its observations; benchmarks/speed_compare.py says whether every outcome is the same.
# Wheels in .whl/ (cudnn-frontend) go to /tmp/site first. Results go to $OUT; a short table is printed last.
set -u
OUT=${OUT:-speed-out}
BASE=${BASE:-base}
PART=${PART:-stress}
VARGS=${VARGS:-}  # extra verify arguments (--backend ...)
. benchmarks/device_env.sh
OUT=$(cd "$OUT" && pwd)
AFTER_PATH=$PYTHONPATH
ROOT=$PWD
BSHIM=$(mktemp -d)
ln -s "$PWD/$BASE/kernels" "$BSHIM/attndoctor_kernels"
ln -s "$PWD/$BASE/rules" "$BSHIM/attndoctor_rules"
BEFORE_PATH="$PWD/$BASE:$BSHIM:/tmp/site"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; echo "cores: $(nproc)"; } \
  > "$OUT/table.txt"
START=$(ms)
left() { echo $(( ${BUDGET:-560} - ($(ms) - START) / 1000 )); }
one() {  # label, python path, limit s, attndoctor arguments... ($CACHE: a compile cache folder to use)
  local label=$1 path=$2 limit=$3; shift 3
  local cache=${CACHE:-}; [ -n "$cache" ] || cache=$(mktemp -d)
  local t; t=$(ms)
  (cd "$(mktemp -d)" && PYTHONPATH=$path TORCHINDUCTOR_CACHE_DIR=$cache/inductor TRITON_CACHE_DIR=$cache/triton \
    timeout "$limit" python3 -m attndoctor "$@") > "$OUT/$label.txt" 2>> "$OUT/stderr.txt"
  local code=$?
  printf '%-16s exit %s wall %6.1f s\n' "$label" "$code" "$(awk "BEGIN{print ($(ms) - $t) / 1000}")" \
    | tee -a "$OUT/table.txt"
}
if [ "$PART" = stress ]; then
  one stress_before "$BEFORE_PATH" 280 verify --stress --seed 7 --format json --record "$OUT/stress_before.jsonl"
  one stress_after "$AFTER_PATH" 280 verify --stress --seed 7 --format json --record "$OUT/stress_after.jsonl"
  python3 benchmarks/speed_compare.py "$OUT/stress_before.jsonl" "$OUT/stress_after.jsonl" | tee -a "$OUT/table.txt"
elif [ "$PART" = grid ]; then
  J=${JOBS:-8}
  python3 benchmarks/verify_grid.py "$OUT/grid.jsonl" --size medium >> "$OUT/table.txt"
  one grid_j$J "$AFTER_PATH" 200 verify --config-file "$OUT/grid.jsonl" --seed 7 $VARGS --jobs "$J" --format json \
    --record "$OUT/grid_j$J.jsonl"
  one grid_j1 "$AFTER_PATH" 280 verify --config-file "$OUT/grid.jsonl" --seed 7 $VARGS --jobs 1 --format json \
    --record "$OUT/grid_j1.jsonl"
  python3 benchmarks/speed_compare.py "$OUT/grid_j1.jsonl" "$OUT/grid_j$J.jsonl" | tee -a "$OUT/table.txt"
elif [ "$PART" = jobs ]; then
  J=${JOBS:-8}
  one verify_j1 "$AFTER_PATH" 120 verify --seed 7 $VARGS --jobs 1 --format json --record "$OUT/verify_j1.jsonl"
  one verify_j$J "$AFTER_PATH" 120 verify --seed 7 $VARGS --jobs "$J" --format json --record "$OUT/verify_j$J.jsonl"
  python3 benchmarks/speed_compare.py "$OUT/verify_j1.jsonl" "$OUT/verify_j$J.jsonl" | tee -a "$OUT/table.txt"
  WARM=$(mktemp -d)
  CACHE=$WARM one stress_j$J "$AFTER_PATH" 300 verify --stress --seed 7 --jobs "$J" --format json \
    --record "$OUT/stress_j$J.jsonl"
  CACHE=$WARM one stress_j${J}_warm "$AFTER_PATH" 150 verify --stress --seed 7 --jobs "$J" --format json \
    --record "$OUT/stress_j${J}_warm.jsonl"
  python3 benchmarks/speed_compare.py "$OUT/stress_j$J.jsonl" "$OUT/stress_j${J}_warm.jsonl" | head -3 \
    | tee -a "$OUT/table.txt"
  [ -f "${RECORDED:-}" ] && { echo "against $RECORDED:"; python3 benchmarks/speed_compare.py "$RECORDED" \
    "$OUT/stress_j$J.jsonl"; } | head -3 | tee -a "$OUT/table.txt"
  if [ -f "${STRESS_J1:-}" ]; then cp "$STRESS_J1" "$OUT/stress_j1.jsonl"; else
  T=$(( $(left) - 8 )); [ "$T" -gt 30 ] || T=30
  one stress_j1 "$AFTER_PATH" "$T" verify --stress --seed 7 --jobs 1 --format json --record "$OUT/stress_j1.jsonl"
  fi
  [ -f "$OUT/stress_j1.jsonl" ] && python3 benchmarks/speed_compare.py "$OUT/stress_j1.jsonl" "$OUT/stress_j$J.jsonl" \
    | tee -a "$OUT/table.txt"
else
  one verify_before "$BEFORE_PATH" 60 verify --seed 7 $VARGS --format json --record "$OUT/verify_before.jsonl"
  one verify_after "$AFTER_PATH" 60 verify --seed 7 $VARGS --format json --record "$OUT/verify_after.jsonl"
  python3 benchmarks/speed_compare.py "$OUT/verify_before.jsonl" "$OUT/verify_after.jsonl" | tee -a "$OUT/table.txt"
  one bench_memory "$AFTER_PATH" 50 bench --config-file "$ROOT/benchmarks/memory_shapes.jsonl" --seed 7
  (cd "$(mktemp -d)" && PYTHONPATH=$AFTER_PATH COLUMNS=160 timeout 40 python3 -m attndoctor bench --config-file \
    "$ROOT/benchmarks/memory_shapes.jsonl" --seed 7 --format json > "$OUT/bench_memory.json" 2>> "$OUT/stderr.txt")
fi
for f in "$OUT"/*_before.txt "$OUT"/*_after.txt "$OUT"/*_j*.txt; do
  [ -f "$f" ] && python3 - "$f" <<'PY' | tee -a "$OUT/table.txt"
import json, sys
try:
    doc = json.load(open(sys.argv[1]))
except ValueError:
    sys.exit(0)
name = sys.argv[1].rsplit("/", 1)[-1][:-4]
if "observations" in doc:
    obs = doc["observations"]
    record = [json.loads(line) for line in open(sys.argv[1][:-4] + ".jsonl")]
    trips = sum(float(r.get("round_trip_ms") or 0) for r in record)
    print(f"{name}: {len(obs)} probes, {doc['summary']['wall_s']} s from the worker's start, "
          f"{1000 * doc['summary']['wall_s'] / max(1, len(obs)):.0f} ms a probe; probes alone (round trips) "
          f"{trips / 1000:.1f} s, {trips / max(1, len(record)):.0f} ms a probe")
else:
    print(f"{name}: {doc['probes']} probes, {doc['shared']} shared, wall {doc['wall_s']} s, {len(doc['findings'])} "
          f"findings ({doc['new']} new)")
PY
done
tail -5 "$OUT/stderr.txt"
cat "$OUT/table.txt"
