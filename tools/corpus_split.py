"""Assign each incident to the held-out or tuning half by its source thread, and check both files obey it."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

DIR = Path(__file__).resolve().parent.parent / "tests" / "corpus" / "incidents"
HALVES = ("heldout", "tuning")


def half(source: str) -> str:
    """The half a thread belongs to, fixed by a hash of "owner/repo#number" so nobody chooses it."""
    return "heldout" if int(hashlib.sha1(source.encode()).hexdigest(), 16) % 2 == 0 else "tuning"


def check(directory: Path = DIR) -> list[str]:
    """Every problem found: a case in the wrong half, a source in two files, an id seen twice, a bad line."""
    problems: list[str] = []
    seen: dict[str, str] = {}
    ids: dict[str, str] = {}
    files = sorted(p for p in directory.glob("*.jsonl") if re.fullmatch(r"(heldout|tuning)(-\d+)?\.jsonl", p.name))
    for name in HALVES:
        if not any(p.name.startswith(name) for p in files):
            problems.append(f"{directory}: no {name} file")
    for path in files:
        name = path.stem.partition("-")[0]
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                case = json.loads(line)
            except json.JSONDecodeError as err:
                problems.append(f"{path.name}:{number}: not JSON ({err})")
                continue
            source = case.get("source") if isinstance(case, dict) else None
            if not isinstance(source, str):
                problems.append(f"{path.name}:{number}: no source")
                continue
            if half(source) != name:
                problems.append(f"{path.name}:{number}: {source} belongs in the {half(source)} half")
            if seen.setdefault(source, path.name) != path.name:
                problems.append(f"{path.name}:{number}: {source} also in {seen[source]}")
            ident = case.get("id")
            if ident in ids:
                problems.append(f"{path.name}:{number}: id {ident} already at {ids[ident]}")
            else:
                ids[ident] = f"{path.name}:{number}"
    return problems


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    problems = check(Path(args[0]) if args else DIR)
    for problem in problems:
        print(problem)
    print("ok" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
