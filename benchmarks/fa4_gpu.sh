#!/usr/bin/env bash
# On a GPU machine, from the repository root: flash-attn 4 (a pure-Python wheel) with its CuTe-DSL libraries, which
# are larger than one call may carry. The libraries (the unpacked libs-cu13 or, before 4.6, libs-base wheel as an xz
# tarball, split into libs.part.aa, .ab and maybe .ac) and the small wheels travel in .fa4a/, .fa4b/ and .fa4c/ (made
# here by benchmarks/fa4_pack.sh), one per call;
# each call before the last runs `mkdir -p /tmp/keep && cp .fa4?/* /tmp/keep/` (a carried path not named again is
# removed there, /tmp stays while the machine is warm). Then grids of benchmarks/verify_grid.py ($GRIDS, default
# "medium features"; "" for none) through `verify --backend flash-attn-4 --jobs 8`; with CONFIGS="a.jsonl ..." verify
# over those config files; with STRESS=1 `verify --stress` over the bundled shapes; with PROBE=script.py that script
# (its lines kept under $OUT). Records gzipped under $OUT, contradictions printed last.
set -u
. benchmarks/device_env.sh
OUT=$(cd "$OUT" && pwd)
T0=$(ms)
mkdir -p /tmp/keep && cp .fa4?/* /tmp/keep/ 2>/dev/null
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site /tmp/keep/*.whl \
  || exit 1
cat /tmp/keep/libs.part.* | xz -d | tar x -C /tmp/site || exit 1
export PYTHONPATH="$PYTHONPATH:/tmp/site/nvidia_cutlass_dsl/dsl_packages:/tmp/site/nvidia_cutlass_dsl/python_packages"
echo "install $(( ($(ms) - T0) / 1000 )) s"
python3 - <<'PY' 2>&1 | tail -4
import importlib.metadata as m, torch, flash_attn.cute as f
q = torch.randn(1, 256, 4, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
o = f.flash_attn_func(q, q, q, causal=True)
o = o[0] if isinstance(o, tuple) else o
o.sum().backward()
print("smoke ok", m.version("flash-attn-4"), m.version("nvidia-cutlass-dsl"), tuple(o.shape), q.grad.isfinite().all().item())
PY
if [ -n "${PROBE:-}" ]; then python3 "$PROBE" 2>&1 | tee "$OUT/$(basename "$PROBE" .py).jsonl" | tail -20; fi
for G in ${GRIDS-medium features}; do
  python3 benchmarks/verify_grid.py "$OUT/$G.jsonl" --size "$G"
  verify_recorded "$G" "${LIMIT:-240}" "$OUT/$G.rec.jsonl" --config-file "$OUT/$G.jsonl" --backend flash-attn-4
done
for F in ${CONFIGS:-}; do
  G=$(basename "$F" .jsonl); GRIDS="${GRIDS-medium features} $G"
  verify_recorded "$G" "${LIMIT:-240}" "$OUT/$G.rec.jsonl" --config-file "$PWD/$F" --backend flash-attn-4
done
if [ -n "${STRESS:-}" ]; then
  verify_recorded stress "${LIMIT:-240}" "$OUT/stress.rec.jsonl" --stress --backend flash-attn-4
  python3 benchmarks/grid_report.py "$OUT/stress.rec.jsonl"; gzip -f "$OUT/stress.rec.jsonl"
fi
tail -c 3000 "$OUT/stderr.txt"
for G in ${GRIDS-medium features}; do python3 benchmarks/grid_report.py "$OUT/$G.rec.jsonl"; gzip -f "$OUT/$G.rec.jsonl"; done
