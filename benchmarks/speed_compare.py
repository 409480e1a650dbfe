"""Compare two `--record` files of verify or verify --stress (before / after a change): every probe's outcome, and
its errors against float64, must be the same. Prints one line of counts and the differences; exit 1 on any.

    python benchmarks/speed_compare.py BEFORE.jsonl AFTER.jsonl
"""

from __future__ import annotations

import json
import sys


def _key(record: dict) -> tuple:
    return (record["config"].get("name") or json.dumps(record["config"], sort_keys=True), record["backend"],
            record.get("regime", ""))


def main(before: str, after: str) -> int:
    a = {_key(r): r for r in map(json.loads, open(before, encoding="utf-8")) if r}
    b = {_key(r): r for r in map(json.loads, open(after, encoding="utf-8")) if r}
    missing, extra = sorted(set(a) - set(b)), sorted(set(b) - set(a))
    outcome = [k for k in a.keys() & b.keys() if a[k]["outcome"] != b[k]["outcome"]]
    errors = [k for k in a.keys() & b.keys() if a[k].get("errors") != b[k].get("errors")]
    print(f"{len(a)} probes before, {len(b)} after: {len(outcome)} outcomes differ, {len(errors)} error figures "
          f"differ, {len(missing)} missing, {len(extra)} new")
    for k in outcome[:20]:
        print("  outcome", k, a[k]["outcome"], "->", b[k]["outcome"], str(b[k].get("error") or "")[:160])
    for k in errors[:10]:
        print("  errors", k, a[k].get("errors"), "->", b[k].get("errors"))
    for k in missing[:10]:
        print("  missing", k)
    return 1 if (outcome or missing or extra) else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
