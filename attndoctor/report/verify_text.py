"""The text and JSON of `verify`: what the rules said beside what the kernels did."""

from __future__ import annotations

from typing import IO, Any

from ..runs.verification import DEFAULTS, Observation, VerifyReport
from ..words import plural
from .text import MARK, environment_lines
from .term import Console, Table, Text
from .formats import dump_json

OBSERVED_STYLE = {
    "ok": ("ok", "green"), "rejected": ("rejected", "red"), "api-mismatch": ("API mismatch", "red"),
    "wrong-results": ("WRONG RESULTS", "bold magenta"), "crashed": ("CRASHED", "bold red"),
    "not-installed": ("not installed", "dim"), "out-of-memory": ("out of memory", "yellow"),
    "skipped": ("skipped", "dim"),
}
AGREEMENT_STYLE = {
    "confirmed": ("confirmed", "green"), "contradicted": ("CONTRADICTED", "bold red reverse"),
    "undecided": ("UNDECIDED", "bold yellow reverse"), "inconclusive": ("inconclusive", "dim"),
}
SHORT = {"ok": "ok", "rejected": "rej", "api-mismatch": "api", "wrong-results": "WRONG", "crashed": "CRASH",
         "not-installed": "–", "out-of-memory": "oom", "skipped": "skip"}
DETAIL_LIMIT = 6
"""Up to this many configs get one table each; more get one matrix (unless --details)."""


def _err(value: object) -> str:
    if value is None:
        return ""
    if value == "inf" or value == float("inf"):
        return "inf"
    return f"{float(value):.1e}"  # type: ignore[arg-type]


def _error_cell(o: Observation) -> Text:
    text = Text(_err(o.result.get("rel_error")))
    if o.baseline_error is not None and o.result.get("rel_error") is not None:
        text.append(f" (math {_err(o.baseline_error)})", style="dim")
    return text


def _said(o: Observation) -> Text:
    if o.outcome == "ok":
        return Text(", ".join(o.result.get("warnings", [])[:1])[:160], style="dim")
    text = Text(o.error[:400])
    if o.result.get("expressible") is False:
        text.append(" [not expressible through this API]", style="dim")
    if o.result.get("phase") not in (None, "", "done", "setup", "import"):
        text.append(f" [{o.result['phase']}]", style="dim")
    return text


def _cell(o: Observation) -> Text:
    label, style = OBSERVED_STYLE.get(o.outcome, (o.outcome, ""))
    return Text(label, style=style)


def _agree(o: Observation) -> Text:
    label, style = AGREEMENT_STYLE.get(o.agreement, (o.agreement, ""))
    return Text(label, style=style)


def _rules_cell(o: Observation) -> Text:
    symbol, style, word = MARK.get(o.predicted, ("?", "yellow", o.predicted))
    return Text(f"{symbol} {word}", style=style)


def _header(report: VerifyReport) -> list[Text]:
    lines = environment_lines(report.environment)
    n_cfg, n_b = len(report.configs), len(report.backends)
    head = Text()
    head.append("verify: ", style="bold")
    head.append(f"{n_cfg} config{'s' * (n_cfg != 1)} × {n_b} backend{'s' * (n_b != 1)}"
                f" ({', '.join(report.backends) or 'none'}) · {plural(len(report.observations), 'run')} in "
                f"{report.wall_s:.1f} s · seed {report.seed}")
    if report.worker_info.get("gpu"):
        head.append(f" · worker on {report.worker_info['gpu']}", style="dim")
    lines.append(head)
    missing = [b for b, info in report.inventory.items() if not info.get("installed") and b not in report.backends]
    if missing:
        lines.append(Text(f"  not run (library not installed here): {', '.join(missing)}", style="dim"))
    filled = sorted({name for names in report.defaults.values() for name in names})
    if filled:
        values = ", ".join(f"{k}={DEFAULTS[k]}".replace("True", "true").replace("False", "false") for k in filled)
        lines.append(Text(f"  unknown fields ran with small defaults: {values}", style="yellow"))
    lines.append(Text("  error vs fp64 = max|out - ref| / max|ref| over output and gradients (math = sdpa-math in "
                      "the same dtype)", style="dim"))
    return lines


def _by_config(report: VerifyReport) -> list[tuple[str, list[Observation]]]:
    groups: dict[str, list[Observation]] = {}
    for o in report.observations:
        groups.setdefault(o.config.label(), []).append(o)
    return list(groups.items())


def render_verify_text(report: VerifyReport, file: IO[str] | None = None, *, detailed: bool = False,
                       **_: Any) -> None:
    console = Console(file)
    for line in _header(report):
        console.print(line)
    console.print()
    groups = _by_config(report)
    if len(groups) <= DETAIL_LIMIT or detailed:
        for label, obs in groups:
            console.print(Text(label, style="bold"))
            table = Table()
            for col in ("backend", "rules say", "observed", "agreement"):
                table.add_column(col, no_wrap=True)
            table.add_column("error vs fp64", no_wrap=True)
            table.add_column("ms", justify="right", no_wrap=True)
            table.add_column("the library said", ratio=3)
            for o in obs:
                ms = "" if o.ms is None else f"{o.ms:.2f}"
                table.add_row(o.backend, _rules_cell(o), _cell(o), _agree(o), _error_cell(o), ms, _said(o))
            console.print(table)
            console.print()
    else:
        table = Table()
        table.add_column("config", no_wrap=True)
        for b in report.backends:
            table.add_column(b, justify="center", no_wrap=True)
        for label, obs in groups:
            by_backend = {o.backend: o for o in obs}
            row: list[Text | str] = [obs[0].config.name or label]
            for b in report.backends:
                o = by_backend.get(b)
                if o is None:
                    row.append("")
                    continue
                cell = Text(SHORT.get(o.outcome, o.outcome), style=OBSERVED_STYLE.get(o.outcome, ("", ""))[1])
                if o.agreement in ("contradicted", "undecided"):
                    cell.append(" ≠", style="bold red")
                elif o.agreement == "confirmed":
                    cell.append(" =", style="green")
                row.append(cell)
            table.add_row(*row)
        console.print(table)
        console.print(Text("  observed outcome; = the rules agreed, ≠ they did not (details below)", style="dim"))
        console.print()
    _render_disagreements(console, report, detailed=len(groups) <= DETAIL_LIMIT or detailed)


def _render_disagreements(console: object, report: VerifyReport, *, detailed: bool) -> None:
    bad = report.disagreements
    counts = report.counts()
    summary = Text("summary: ", style="bold")
    for key in ("confirmed", "contradicted", "undecided", "inconclusive"):
        if counts.get(key):
            label, style = AGREEMENT_STYLE[key]
            summary.append(f"{counts[key]} {label.lower()}  ", style=style if key == "confirmed" else "")
    console.print(summary)  # type: ignore[attr-defined]
    if not bad:
        console.print(Text("The rules agree with what the kernels did on this machine.",  # type: ignore[attr-defined]
                           style="green"))
        return
    if not detailed:
        table = Table()
        for col in ("config", "backend", "rules say", "observed"):
            table.add_column(col, no_wrap=True)
        table.add_column("the library said", ratio=3)
        for o in bad:
            table.add_row(o.config.name or o.config.label(), o.backend, _rules_cell(o), _cell(o), _said(o))
        console.print(table)  # type: ignore[attr-defined]
    n = len(bad)
    undecided = sum(1 for o in bad if o.agreement == "undecided")
    text = Text()
    text.append(f"CONTRADICTED: {n} run{'s' * (n != 1)} disagree{'s' * (n == 1)} with the rule base", style="bold red")
    text.append(" — the rules are wrong for this machine" + (" (or could not decide on it)" if undecided else "")
                + ".\n", style="red")
    record = report.record_path or "observations.jsonl"
    text.append(f"  Please report it: rerun with --record {record} (done)" if report.record_path else
                f"  Please report it: rerun with --record {record}", style="red")
    text.append(" and attach the file to an attndoctor issue titled \"verify contradiction: <GPU>, <library "
                "versions>\", or add its lines to tests/observations/ with the rule fix in a pull request "
                "(tests/test_observations.py replays them).", style="red")
    console.print(text)  # type: ignore[attr-defined]


def render_verify_json(report: VerifyReport, stream: IO[str], **_: Any) -> None:
    dump_json(report.to_dict(), stream)
