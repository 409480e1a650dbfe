"""What both corpus scorers share: asking the command line in-process, the left-out threads, the report."""
from __future__ import annotations

import argparse
import io
import json
import re
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]


def run_cli(args: list[str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `attndoctor ARGS`, run in this process."""
    from attndoctor.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with redirect_stdout(out), redirect_stderr(err):
        try:
            main(args)
        except SystemExit as exit_:
            code = exit_.code or 0
    return code, out.getvalue(), err.getvalue()


def contaminated() -> set[str]:
    """Held-out threads a rule came to cite (tests/corpus/contaminated.txt): left out of the held-out figures."""
    path = ROOT / "tests" / "corpus" / "contaminated.txt"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return {line.split()[0] for line in lines if line.strip() and not line.startswith("#")}


def corpus_files(directory: Path, half: str, part: str | None = None) -> list[Path]:
    """A half's files (`heldout.jsonl`, `heldout-2.jsonl`, ...), or one collection part's: part 1 is the unnumbered file."""
    files = sorted(p for p in directory.glob(f"{half}*.jsonl") if re.fullmatch(rf"{half}(-\d+)?\.jsonl", p.name))
    if part is None:
        return files
    return [p for p in files if (p.stem.partition("-")[2] or "1") == part]


def load_cases(directory: Path, half: str, part: str | None = None) -> list[dict]:
    """The cases of a half (or of one collection part of it), without the held-out threads a rule came to cite."""
    cases = []
    for path in corpus_files(directory, half, part):
        cases += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    skip = contaminated() if half == "heldout" else set()
    return [c for c in cases if c["source"] not in skip]


def report(description: str, load: Callable[..., list[dict]], score: Callable[[list[dict]], dict],
           row: Callable[[dict], str], summary: Callable[[str, dict], str], argv: list[str] | None) -> int:
    """Score the halves asked for, print the tuning half's rows on request and each half's figures."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--half", choices=("heldout", "tuning", "both"), default="both")
    parser.add_argument("--cases", action="store_true", help="print each case's result (tuning half only)")
    parser.add_argument("--part", help="one collection part only (1 is the first; the files' -N suffix)")
    parser.add_argument("--json", help="write the figures and rows to this file")
    ns = parser.parse_args(argv)
    halves = ("tuning", "heldout") if ns.half == "both" else (ns.half,)
    results = {h: score(load(h, ns.part)) for h in halves}
    if ns.cases and "tuning" in results:
        for r in results["tuning"]["rows"]:
            print(row(r))
    for h, result in results.items():
        print(summary(h, result))
    if ns.json:
        Path(ns.json).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0
