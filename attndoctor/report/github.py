"""GitHub Actions: ::error / ::warning annotations, and a Markdown job summary in GITHUB_STEP_SUMMARY."""

from __future__ import annotations

import os

from ..engine.evaluate import Report
from ..engine.gate import GateResult
from ..words import plural

MARK = {"supported": "✅", "depends": "❔", "unsupported": "❌", "api-mismatch": "❌", "wrong-results": "⚠️",
        "not-installed": "–"}


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _escape(text).replace(":", "%3A").replace(",", "%2C")


def render_github(report: Report, gate: GateResult) -> str:
    """Workflow commands on stdout; the summary file is written as a side effect when the variable is set."""
    lines: list[str] = []
    for check in gate.checks:
        if not check.passed:
            body = "; ".join(check.reasons) + ("" if not check.fixes else " — fix: " + check.fixes[0])
            lines.append(f"::error title={_prop('attndoctor: ' + check.config + ': ' + check.name)}::{_escape(body)}")
    for result in report.results:
        label = result.config.name or result.config.label()
        for s in result.selected:
            if s.status in ("fails", "wrong-results", "none"):
                continue  # already an error through the gate when it matters
            if s.backend:
                v = result.verdict(s.backend)
                for f in v.findings:
                    if f.applies and f.effect in ("slow", "info"):
                        lines.append(f"::notice title={_prop(label + ': ' + f.id)}::{_escape(f.message)}")
        for v in result.verdicts:
            for f in v.findings:
                if f.applies is True and f.effect in ("wrong-results", "api-mismatch"):
                    lines.append(f"::warning title={_prop(label + ': ' + v.backend.id + ' ' + f.id)}::"
                                 f"{_escape(f.message)}")
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        with open(summary_path, "a", encoding="utf-8") as out:
            out.write(summary_markdown(report, gate))
    lines.append(f"attndoctor: gate {'passed' if gate.passed else 'FAILED'} "
                 f"({plural(sum(not c.passed for c in gate.checks), 'failing check')} of {len(gate.checks)})")
    return "\n".join(lines) + "\n"


def summary_markdown(report: Report, gate: GateResult) -> str:
    """The job summary: one row per config, one column per backend, then the failing checks."""
    backends = [v.backend.id for v in report.results[0].verdicts] if report.results else []
    out = [f"## attndoctor {report.command}: gate {'passed ✅' if gate.passed else 'failed ❌'}", ""]
    out.append("| config | " + " | ".join(backends) + " | selected |")
    out.append("|---|" + "|".join(":-:" for _ in backends) + "|---|")
    for r in report.results:
        sel = ", ".join(f"{s.framework}: {s.backend or s.status}" for s in r.selected)
        out.append(f"| {r.config.name or r.config.label()} | "
                   + " | ".join(MARK[v.status] for v in r.verdicts) + f" | {sel} |")
    failing = [c for c in gate.checks if not c.passed]
    if failing:
        out += ["", "### Failing checks", ""]
        for c in failing:
            out.append(f"- **{c.config}** — {c.name}: {'; '.join(c.reasons)}"
                       + (f" (fix: {c.fixes[0]})" if c.fixes else ""))
    return "\n".join(out) + "\n\n"
