"""`--summary`: one line per backend (its verdicts over every config, the rules behind them, the fix), then the gate."""

from __future__ import annotations

from typing import IO

from ..engine.evaluate import Report, Verdict
from ..engine.gate import GateResult
from ..words import plural
from .term import Console, Text
from .text import MARK

MAX_RULES = 3
"""Rule ids named per backend; the rest are counted."""


def _rules(verdicts: list[Verdict]) -> list[str]:
    """The rules that stop the backend (or put it at risk), in the order first met."""
    ids: dict[str, None] = {}
    for v in verdicts:
        if v.status in ("supported", "not-installed"):
            continue
        for f in v.findings:
            if f.blocking or f.at_risk:
                ids.setdefault(f.id, None)
    return list(ids)


def backend_line(backend: str, verdicts: list[Verdict], width: int) -> Text:
    """`sdpa-cudnn   ✗ refused 2/5, ✓ runs 3/5  [RULE-A, RULE-B]  fix: …` (counts only over several configs)."""
    line = Text(backend.ljust(width))
    counts: dict[str, int] = {}
    for v in verdicts:
        counts[v.status] = counts.get(v.status, 0) + 1
    for i, status in enumerate(s for s in MARK if s in counts):
        symbol, style, word = MARK[status]
        tally = f" {counts[status]}/{len(verdicts)}" if len(verdicts) > 1 else ""
        line.append(", " if i else "  ")
        line.append(f"{symbol} {word}{tally}", style=style)
    rules = _rules(verdicts)
    if rules:
        more = f", +{len(rules) - MAX_RULES}" if len(rules) > MAX_RULES else ""
        line.append(f"  [{', '.join(rules[:MAX_RULES])}{more}]", style="dim")
    fixes = list(dict.fromkeys(v.fix.describe() for v in verdicts if v.fix))
    if len(fixes) == 1:
        line.append(f"  fix: {fixes[0]}", style="green")
    elif fixes:
        line.append(f"  fixes: {len(fixes)} (see the full report)", style="green")
    return line


def gate_line(gate: GateResult) -> Text:
    """`gate passed`, or `gate failed: the first reason (+N more)`."""
    if gate.passed:
        return Text("gate passed", style="green")
    reasons = gate.reasons
    more = f" (+{plural(len(reasons) - 1, 'more reason')})" if len(reasons) > 1 else ""
    return Text(f"gate failed: {reasons[0] if reasons else 'see the full report'}{more}", style="bold red")


def render_summary(report: Report, gate: GateResult, file: IO[str] | None = None) -> None:
    """Write one line per backend shown, in the report's order, and the gate's line; lines are never wrapped."""
    console = Console(file)
    backends = [v.backend.id for v in report.results[0].verdicts] if report.results else []
    width = max((len(b) for b in backends), default=0)
    lines = [backend_line(b, [r.verdict(b) for r in report.results], width) for b in backends]
    lines.append(gate_line(gate))
    console.file.write("".join(line.render(console.color).rstrip(" ") + "\n" for line in lines))
