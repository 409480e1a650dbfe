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
python3 - "$OUT/grid.rec.jsonl" <<'PY'
import collections, json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(len(rows), "probes", dict(collections.Counter(r["agreement"] for r in rows)))
bad = [r for r in rows if r["agreement"] == "contradicted"]
print(dict(collections.Counter((r["backend"], r["predicted"], r["outcome"], r["config"]["layout"]) for r in bad)))
for r in bad[:60]:
    c = r["config"]
    print(f"  {r['backend']:15} {r['predicted']:12} {r['outcome']:14} {c['layout']} {c['mask']:20} h{c['heads']}/{c['kv_heads']}"
          f" d{c['hdim']}/{c['hdim_v']} {c['seqlen_q']}/{c['seqlen_kv']} {c['dtype']} {'train' if c['train'] else 'infer'}"
          f"{' fused' if c.get('qkv_fused') else ''} {str(r.get('error') or '')[:80]}")
PY
