"""GitHub Actions: ::error / ::warning annotations, and a Markdown job summary in GITHUB_STEP_SUMMARY."""

from __future__ import annotations

from typing import IO, Any

from ..engine.results import Report
from ..engine.gate import GateResult
from ..console.output import shown
from ..words import plural
from .location import github_file, sources_by_label

MARK = {"supported": "✅", "known-bug": "✅❗", "outside-rules": "❔", "depends": "❔", "unsupported": "❌", "api-mismatch": "❌", "wrong-results": "⚠️",
        "not-installed": "–"}


def _escape(text: str) -> str:
    return shown(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def _prop(text: str) -> str:
    return _escape(text).replace(":", "%3A").replace(",", "%2C")


def _command(kind: str, source: tuple[str, int] | None, title: str, message: str) -> str:
    """One workflow command; `file` and `line` when the config came from a file (escaped as @actions/core does)."""
    props = []
    where = github_file(source)
    if where:
        props.append(f"file={_prop(where[0])}")
        if where[1] > 0:
            props.append(f"line={where[1]}")
    props.append(f"title={_prop(title)}")
    return f"::{kind} {','.join(props)}::{_escape(message)}"


def render_github(report: Report, gate: GateResult, stream: IO[str], **_: Any) -> None:
    """Workflow commands for stdout (the command appends `summary_markdown` to $GITHUB_STEP_SUMMARY)."""
    lines: list[str] = []
    sources = sources_by_label(report)
    for check in gate.checks:
        if not check.passed:
            body = "; ".join(check.reasons) + ("" if not check.fixes else " — fix: " + check.fixes[0])
            lines.append(_command("error", sources.get(check.config), f"attndoctor: {check.config}: {check.name}",
                                  body))
    for result in report.results:
        label = result.config.name or result.config.label()
        source = result.config.source
        for s in result.selected:
            if s.status in ("fails", "wrong-results", "none"):
                continue  # already an error through the gate when it matters
            if s.backend:
                v = result.verdict(s.backend)
                for f in v.findings:
                    if f.applies and f.effect in ("slow", "info"):
                        lines.append(_command("notice", source, f"{label}: {f.id}", f.message))
        for v in result.verdicts:
            for f in v.findings:
                if f.applies is True and f.effect in ("wrong-results", "api-mismatch"):
                    lines.append(_command("warning", source, f"{label}: {v.backend.id} {f.id}", f.message))
    lines.append(f"attndoctor: gate {'passed' if gate.passed else 'FAILED'} "
                 f"({plural(sum(not c.passed for c in gate.checks), 'failing check')} of {len(gate.checks)})")
    stream.write("\n".join(lines) + "\n")


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
