#!/bin/bash
# Broken installs as findings, on the GPU machine: `attndoctor check --format json` reads the compiled extensions
# (torch's libtorch_cuda.so, cudnn-frontend's _compiled_module, xformers' _C.so, ...) without importing them, and
# reports the GPU archs of their device code, whether their torch symbols resolve, and the findings. Also times the
# inspection, cold and cached, and replays the machine's JSON on another GPU (--gpu RTX5090, sm120).
#
# Carry in .whl/ (installed with --no-deps by device_env.sh): pyelftools (pure Python, required), and for real
# cases nvidia-cudnn-frontend 1.32.0 (cp312) and xformers 0.0.35 (built for torch 2.10: a mismatched extension).
# Run from the repository root on the device:  bash benchmarks/binaries_gpu.sh
source benchmarks/device_env.sh
export XDG_CACHE_HOME=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import elftools" 2>/dev/null || { echo "pyelftools is not installed: put its wheel in .whl/"; exit 2; }

s=$(ms); python3 -m attndoctor check --no-cache --format json > "$OUT/check.json" 2> "$OUT/check.err"; rc=$?
echo "check --no-cache --format json: exit $rc, $(( $(ms) - s )) ms (binaries read cold)"
s=$(ms); python3 -m attndoctor check --format json > "$OUT/check_warm.json" 2>/dev/null
echo "check --format json (warm, binaries from the cache): exit $?, $(( $(ms) - s )) ms"
python3 -m attndoctor check > "$OUT/check.txt" 2>&1
python3 -m attndoctor explain --env-file "$OUT/check.json" --gpu RTX5090 --hdim 128 --heads 16 --seqlen 4096 \
  --dtype bf16 --format json > "$OUT/whatif_rtx5090.json" 2>/dev/null

python3 - "$OUT" <<'PY'
import json, sys, time
out = sys.argv[1]
from attndoctor.probe.binaries import probe_binaries, torch_library_paths

for use_cache, what in ((False, "cold"), (True, "cached")):
    t = time.perf_counter()
    entries = probe_binaries(use_cache=use_cache)
    print(f"probe_binaries ({what}): {len(entries)} files in {1000 * (time.perf_counter() - t):.0f} ms")
print("torch libraries checked against:", ", ".join(p.rsplit("/", 1)[-1] for p in torch_library_paths()))

doc = json.load(open(f"{out}/check.json"))
env = doc["environment"]
print(f"\nGPU {env.get('gpu')} (sm{env.get('sm')}), torch {env['versions'].get('torch')}")
rows = env.get("binaries") or []
print(f"{'package':<15} {'version':<14} {'file':<48} {'SASS':<28} {'PTX':<12} ABI")
for b in rows:
    sass = " ".join(f"sm{a}" for a in b["sass"]) or ("-" if b["device_code"] else "no device code")
    ptx = " ".join(f"sm{a}" for a in b["ptx"]) or "-"
    abi = str(b["abi"]) + (f" ({b['unresolved_count']}: {b['unresolved'][0]})" if b["unresolved"] else "")
    print(f"{b['package']:<15} {str(b['version']):<14} {b['file'][:48]:<48} {sass[:28]:<28} {ptx[:12]:<12} "
          f"{abi if not b['error'] else 'UNREADABLE: ' + b['error']}")
if not rows:
    print("(no compiled extension found)")
print("\nfindings on this GPU:")
for b in rows:
    for f in b.get("findings") or []:
        print(f"  [{f['severity']}] {f['message']}\n      fix: {f['fix']}")
if not any(b.get("findings") for b in rows):
    print("  none")
whatif = json.load(open(f"{out}/whatif_rtx5090.json"))["environment"]
print("\nthe same binaries judged on an RTX 5090 (sm120), from the JSON above:")
found = [f for b in whatif.get("binaries") or [] for f in b.get("findings") or []]
for f in found:
    print(f"  [{f['severity']}] {f['message']}")
if not found:
    print("  none")
PY
if python3 -c "import pytest" 2>/dev/null; then
  python3 -m pytest -q -p no:cacheprovider tests/test_binaries.py 2>&1 | tail -3
fi
