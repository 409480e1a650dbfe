#!/bin/bash
# `attndoctor check` wall time on the GPU machine: the first run imports torch (and keeps its build facts), the next
# ones reuse them; --no-cache imports torch again. The JSON of a cached and an uncached run must agree.
# Run from the repository root on the device: bash benchmarks/check_timing.sh
source benchmarks/device_env.sh
export XDG_CACHE_HOME=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for i in 1 2 3 4 5; do
  s=$(ms); python3 -m attndoctor check > "$OUT/check_$i.txt" 2>&1; rc=$?
  echo "check run $i: exit $rc, $(( $(ms) - s )) ms"
done
s=$(ms); python3 -m attndoctor check --no-cache > /dev/null 2>&1; echo "check --no-cache: exit $?, $(( $(ms) - s )) ms"
python3 -m attndoctor check --format json > "$OUT/cached.json" 2>/dev/null
python3 -m attndoctor check --no-cache --format json > "$OUT/uncached.json" 2>/dev/null
python3 - "$OUT/cached.json" "$OUT/uncached.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
strip = lambda d: {k: v for k, v in d["environment"].items() if k not in ("notes", "torch_cuda_available")}
same_env = strip(a) == strip(b)
same_results = [r["verdicts"] for r in a["results"]] == [r["verdicts"] for r in b["results"]] and \
    [r["selected"] for r in a["results"]] == [r["selected"] for r in b["results"]]
print(f"cached vs uncached: environment facts equal: {same_env}; verdicts and selections equal: {same_results}")
PY
head -4 "$OUT/check_2.txt"
