"""Checks that `attndoctor why` answers a pasted text the same way however it was pasted: each tuning text it
diagnoses right is given again wrapped at 80 columns, quoted as in a mail reply, with a logger's or rank's prefix on
every line, with Windows line ends, coloured by a terminal, in a Markdown fence, indented as a Markdown code block
and HTML-escaped as a web page's source holds it, and every text no longer answered right is listed.

    python tools/corpus/perturb_why.py [--part N] [--only NAME] [--cases] [--json FILE]
Tuning half only: the held-out half is for reporting.
"""
from __future__ import annotations

import argparse
import html
import json
import sys
import textwrap
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from score_why import CORPUS, ask, judge  # noqa: E402
from corpus_common import load_cases  # noqa: E402


def _each_line(prefix: str) -> Callable[[str], str]:
    return lambda text: "\n".join(prefix + line for line in text.splitlines())


def _wrapped(text: str) -> str:
    return "\n".join(part for line in text.splitlines()
                     for part in (textwrap.wrap(line, 80, drop_whitespace=False, break_on_hyphens=False) or [""]))


PASTES: dict[str, Callable[[str], str]] = {
    "wrapped": _wrapped,
    "quoted": _each_line("> "),
    "logger": _each_line("2026-11-28 10:15:42,118 - train - ERROR - "),
    "rank": _each_line("[rank3]: "),
    "crlf": lambda text: text.replace("\n", "\r\n"),
    "coloured": lambda text: "\n".join(f"\x1b[31m{line}\x1b[0m" for line in text.splitlines()),
    "fenced": lambda text: f"```python\n{text}\n```",
    "indented": _each_line("    "),
    "escaped": lambda text: html.escape(text, quote=True),
}
"""How people paste a text: each changes how it looks, none what it says."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", help="one collection part only")
    parser.add_argument("--only", choices=sorted(PASTES), action="append", help="these pastes only")
    parser.add_argument("--cases", action="store_true", help="print each text no longer answered right")
    parser.add_argument("--json", help="write the texts no longer answered right to this file")
    ns = parser.parse_args(argv)
    pastes = {name: PASTES[name] for name in (ns.only or PASTES)}
    changed: dict[str, list[dict]] = {name: [] for name in pastes}
    right = 0
    for case in load_cases(CORPUS, "tuning", ns.part):
        first = judge(case, ask(case))
        if not first["right"]:
            continue
        right += 1
        for name, paste in pastes.items():
            again = judge(case, ask({**case, "text": paste(case["text"])}))
            if not again["right"]:
                changed[name].append({"id": case["id"], "before": first["top"], "after": again["top"]})
                if ns.cases:
                    print(f"{name:9} {case['id']:32} {first['top']} -> {again['top']}")
    for name, rows in changed.items():
        print(f"{name:9} {right - len(rows)}/{right} still answered right")
    if ns.json:
        Path(ns.json).write_text(json.dumps(changed, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
