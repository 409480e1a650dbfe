"""Summarise `verify --record` files: agreement counts, and one line per contradicted probe (per probe with --all).

    python benchmarks/grid_report.py RECORD.jsonl [--all]
"""

from __future__ import annotations

import collections
import json
import sys


def line(r: dict) -> str:
    c = r["config"]
    return (f"  {r['backend']:15} {r['predicted']:12} {r['outcome']:14} {c['layout']} {c['mask']:20} "
            f"h{c['heads']}/{c['kv_heads']} d{c['hdim']}/{c['hdim_v']} {c['seqlen_q']}/{c['seqlen_kv']} {c['dtype']} "
            f"{'train' if c['train'] else 'infer'}{' fused' if c.get('qkv_fused') else ''} "
            f"{str(r.get('error') or '')[:80]}")


def main(path: str, every: bool = False) -> None:
    rows = [json.loads(text) for text in open(path, encoding="utf-8") if text.strip()]
    print(path.rsplit("/", 1)[-1], len(rows), "probes", dict(collections.Counter(r["agreement"] for r in rows)))
    bad = [r for r in rows if r["agreement"] == "contradicted"]
    print(dict(collections.Counter((r["backend"], r["predicted"], r["outcome"], r["config"]["layout"]) for r in bad)))
    for r in (rows if every else bad[:60]):
        print(line(r))


if __name__ == "__main__":
    main(sys.argv[1], "--all" in sys.argv[2:])
