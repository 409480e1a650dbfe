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
# verify_recorded LABEL LIMIT RECORD ARGS...: `attndoctor verify --seed 7 --jobs 8 ARGS` in an empty folder within
# LIMIT seconds, every probe recorded to RECORD, stderr kept in $OUT/stderr.txt; prints LABEL, the exit and the wall.
verify_recorded() {
  local label=$1 limit=$2 record=$3 t0
  shift 3
  t0=$(ms)
  (cd "$(mktemp -d)" && timeout "$limit" python3 -m attndoctor verify --seed 7 --jobs 8 --format json \
    --record "$record" "$@" > /dev/null 2>> "$OUT/stderr.txt")
  echo "$label: verify exit $? wall $(( ($(ms) - t0) / 1000 )) s"
}
