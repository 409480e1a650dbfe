"""Summarise `verify --record` files: outcomes per backend, agreement, timing and the per-probe overhead.

overhead = round trip seen by the parent - (repeats + 1) * kernel ms: what a probe costs beyond its kernel runs
(inputs, the shape's fp64 reference when this probe computed it, the library's first-call costs, comparison, JSON,
process hop); recent records also split out ms_setup (data + reference) and ms_first (the checked call). Usage: python benchmarks/verify_summary.py FILE.jsonl...
"""

from __future__ import annotations

import collections
import json
import statistics
import sys


def summarise(path: str, repeats: int) -> None:
    rows = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    print(f"== {path}: {len(rows)} observations, {len({json.dumps(r['config'], sort_keys=True) for r in rows})} "
          "configs")
    by = collections.Counter((r["backend"], r["outcome"]) for r in rows)
    for backend in dict.fromkeys(r["backend"] for r in rows):
        parts = ", ".join(f"{o} {n}" for (b, o), n in sorted(by.items()) if b == backend)
        print(f"  {backend:15s} {parts}")
    print("  agreement:", dict(collections.Counter(r["agreement"] for r in rows)))
    timed = [r for r in rows if r.get("ms") is not None and r.get("round_trip_ms") is not None]
    if timed:
        over = [r["round_trip_ms"] - (repeats + 1) * r["ms"] for r in timed]
        trips = [r["round_trip_ms"] for r in rows if r.get("round_trip_ms") is not None]
        print(f"  per-probe overhead beyond kernel time: median {statistics.median(over):.1f} ms, "
              f"p90 {sorted(over)[int(0.9 * (len(over) - 1))]:.1f} ms (n={len(over)}); round trips total "
              f"{sum(trips) / 1000:.1f} s")
        every = [r["round_trip_ms"] - (repeats + 1) * (r.get("ms") or 0.0) for r in rows
                 if r.get("round_trip_ms") is not None]
        print(f"  over every probe (refusals included): median {statistics.median(every):.1f} ms (n={len(every)})")
        split = [r for r in timed if r.get("ms_first") is not None and r.get("ms_setup") is not None]
        if split:
            harness = [r["round_trip_ms"] - r["ms_setup"] - r["ms_first"] - repeats * r["ms"] for r in split]
            print(f"  without the shape's data + fp64 reference (shared by its backends) and the library's first "
                  f"call (plan builds, lazy kernel loading): median {statistics.median(harness):.1f} ms, "
                  f"p90 {sorted(harness)[int(0.9 * (len(harness) - 1))]:.1f} ms")
    errs = collections.defaultdict(list)
    for r in rows:
        if r["outcome"] == "ok" and isinstance(r.get("rel_error"), (int, float)):
            errs[(r["backend"], r["config"]["dtype"])].append(r["rel_error"])
    for (backend, dtype), values in sorted(errs.items()):
        print(f"  error vs fp64 {backend:15s} {dtype}: max {max(values):.2e} median {statistics.median(values):.2e}")
    for r in rows:
        if r["agreement"] in ("contradicted", "undecided"):
            c = r["config"]
            print(f"  ≠ {r['backend']:15s} {c.get('name', '')[:20]:20s} rules {r['predicted']:12s} saw "
                  f"{r['outcome']:13s} {r['error'][:150]}")


if __name__ == "__main__":
    args = sys.argv[1:]
    repeats = 3
    if "--repeats" in args:
        i = args.index("--repeats")
        repeats = int(args[i + 1])
        del args[i:i + 2]
    for p in args:
        summarise(p, repeats)
