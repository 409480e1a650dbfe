# Sourced by the GPU scripts, from the repository root: install carried wheels from .whl/ into /tmp/site, make the
# source tree importable under the wheel's package names, and create $OUT.
OUT=${OUT:-device-out}
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
SHIM=$(mktemp -d)
ln -s "$PWD/kernels" "$SHIM/attndoctor_kernels"
ln -s "$PWD/rules" "$SHIM/attndoctor_rules"
export PYTHONPATH="$PWD:$SHIM:/tmp/site${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
ms() { date +%s%3N; }
