#!/usr/bin/env bash
# On a GPU machine, from the repository root: flash-attn 4 (a pure-Python wheel) with its CuTe-DSL libraries, which
# are larger than one call may carry: .fa4a/ holds the small wheels and the first part of the CUDA 13 libraries
# (an xz tarball of the unpacked nvidia-cutlass-dsl-libs-cu13 wheel, split), .fa4b/ the rest; a first call copies
# .fa4a/ to /tmp/keep on the warm machine (carried paths not named again are removed). Then grids of benchmarks/verify_grid.py ($GRIDS, default "medium features") through
# `verify --backend flash-attn-4 --jobs 8`, records gzipped under $OUT, contradictions printed last.
set -u
. benchmarks/device_env.sh
OUT=$(cd "$OUT" && pwd)
T0=$(ms)
A=.fa4a; [ -d "$A" ] || A=/tmp/keep/.fa4a; [ -d "$A" ] || A=build/.fa4a
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$A"/*.whl || exit 1
cat "$A"/libs.part.* .fa4b/libs.part.* | xz -d | tar x -C /tmp/site || exit 1
export PYTHONPATH="$PYTHONPATH:/tmp/site/nvidia_cutlass_dsl/dsl_packages"
echo "install $(( ($(ms) - T0) / 1000 )) s"
python3 - <<'PY' 2>&1 | tail -4
import importlib.metadata as m, torch, flash_attn.cute as f
q = torch.randn(1, 256, 4, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
o = f.flash_attn_func(q, q, q, causal=True)
o = o[0] if isinstance(o, tuple) else o
o.sum().backward()
print("smoke ok", m.version("flash-attn-4"), m.version("nvidia-cutlass-dsl"), tuple(o.shape), q.grad.isfinite().all().item())
PY
for G in ${GRIDS:-medium features}; do
  python3 benchmarks/verify_grid.py "$OUT/$G.jsonl" --size "$G"
  T0=$(ms)
  (cd "$(mktemp -d)" && timeout "${LIMIT:-240}" python3 -m attndoctor verify --config-file "$OUT/$G.jsonl" --seed 7 \
    --backend flash-attn-4 --jobs 8 --format json --record "$OUT/$G.rec.jsonl" > /dev/null 2>> "$OUT/stderr.txt")
  echo "$G: verify exit $? wall $(( ($(ms) - T0) / 1000 )) s"
done
tail -c 3000 "$OUT/stderr.txt"
for G in ${GRIDS:-medium features}; do python3 benchmarks/grid_report.py "$OUT/$G.rec.jsonl"; gzip -f "$OUT/$G.rec.jsonl"; done
