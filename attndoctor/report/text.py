"""The text report: one table per config (or a matrix for many), each reason and fix on one line."""

from __future__ import annotations

from typing import IO, Any

from .._version import __version__
from ..engine.results import OUTSIDE, ConfigResult, Finding, Report, Selection, Verdict
from ..engine.gate import GateResult
from ..engine.install import install_notes, judge_binaries
from ..engine.states import Severity
from ..engine.rules import FRAMEWORK_LABELS
from ..environment import ABSENT, PACKAGE_LABELS, PACKAGES, Environment
from ..words import plural
from .term import Console, Table, Text

MARK = {
    "supported": ("✓", "green", "runs"),
    "known-bug": ("✓!", "yellow", "runs, known bug"),
    "depends": ("?", "yellow", "depends"),
    "outside-rules": ("?", "yellow", "outside the rules"),
    "unsupported": ("✗", "red", "refused"),
    "api-mismatch": ("✗", "red", "API mismatch"),
    "wrong-results": ("⚠", "magenta", "WRONG RESULTS"),
    "not-installed": ("–", "dim", "not installed"),
}


def environment_lines(env: Environment) -> list[Text]:
    """Where the answer is for: the GPU and the versions that were known."""
    head = Text()
    head.append(f"attndoctor {__version__}", style="bold")
    source = "this machine" if env.source == "probe" else env.source
    head.append(f" · {source} · ")
    if env.gpu or env.sm:
        gpu = env.gpu or f"sm{env.sm}"
        head.append(f"{gpu}" + (f" (sm{env.sm})" if env.sm and env.gpu != f"sm{env.sm}" else ""), style="bold")
        if len(env.gpus) > 1:
            head.append(f" ×{len(env.gpus)}")
    elif env.no_gpu:
        head.append("no NVIDIA GPU", style="bold yellow")
    else:
        head.append("GPU not given", style="yellow")
    known, absent, unknown = [], [], []
    for package in PACKAGES:
        value = env.versions.get(package)
        label = PACKAGE_LABELS[package]
        if value is None:
            unknown.append(label)
        elif value == ABSENT:
            absent.append(label)
        else:
            known.append(f"{label} {value}")
    if known:
        head.append(" · " + " · ".join(known))
    lines = [head]
    if absent:
        lines.append(Text("  not installed: " + ", ".join(absent), style="dim"))
    if unknown and env.source != "probe":
        lines.append(Text("  not given: " + ", ".join(unknown) + " (verdicts that depend on them say so)",
                          style="dim"))
    set_vars = {k: v for k, v in env.env_vars.items() if k.startswith(("NVTE_", "TORCH_CUDNN", "CUDNN_"))}
    if set_vars:
        lines.append(Text("  env: " + " ".join(f"{k}={v}" for k, v in sorted(set_vars.items())), style="dim"))
    lines.extend(binary_lines(env))
    for note in [*env.notes, *install_notes(env)]:
        style = {"error": "red", "warning": "yellow"}.get(note.get("severity", ""), "dim")
        lines.append(Text(f"  {note.get('severity', 'info')}: {note.get('message', '')}", style=style))
    return lines


ABI_WORDS = {
    "ok": "torch symbols resolve",
    "unresolved": "torch symbols UNRESOLVED",
    "unknown": "torch symbols not checked (torch's libraries not found)",
}


def binary_lines(env: Environment) -> list[Text]:
    """One line per compiled extension the probe read: the archs of its device code and its torch ABI status."""
    lines = []
    for entry, found in judge_binaries(env):
        name = " ".join(str(x) for x in (entry.get("label"), entry.get("version")) if x)
        line = Text(f"  binary {name} {entry.get('file', '')}: ")
        if entry.get("error"):
            line.append(f"unreadable ({entry['error']})")
        else:
            sass = " ".join(f"sm{a}" for a in entry.get("sass") or []) or "none"
            ptx = " ".join(f"sm{a}" for a in entry.get("ptx") or []) or "none"
            parts = [f"SASS {sass}, PTX {ptx}" if entry.get("device_code") else "no device code"]
            abi = ABI_WORDS.get(str(entry.get("abi")))
            if abi:
                parts.append(abi + (f" ({entry.get('unresolved_count')})" if entry.get("abi") == "unresolved" else ""))
            line.append("; ".join(parts))
        severities = {f.severity for f in found}
        line.style = "red" if Severity.ERROR in severities else "yellow" if Severity.WARNING in severities else "dim"
        lines.append(line)
    return lines


def _mark(status: str, short: bool = False) -> Text:
    symbol, style, word = MARK[status]
    return Text(symbol if short else f"{symbol} {word}", style=style)


def _finding_line(f: Finding) -> Text:
    line = Text()
    if f.applies is None:
        line.append("if ", style="yellow")
        line.append(f.condition or "?", style="yellow")
        line.append(": ")
    line.append(f.message)
    line.append(f"  [{f.id}]", style="dim")
    if f.data:
        from ..engine.rules import DATA_CONDITIONS

        line.append("\nat risk if " + " and ".join(DATA_CONDITIONS[d] for d in f.data), style="yellow")
    if f.workaround:
        line.append(f"\nworkaround: {f.workaround}", style="green")
    return line


MAX_CONDITIONS = 3
GIVEN_BY = {"cutlass_dsl": "--cutlass-dsl"}
"""Missing facts that no other given fact ever settles, with the flag that gives them."""
"""A `depends` verdict shows this many of its open conditions; the rest are in --format json."""


def more_conditions(n: int) -> str:
    return f"… and {plural(n, 'more condition')} (--format json lists them)"


def _why(v: Verdict) -> Text:
    shown = [f for f in v.findings if f.blocking or f.at_risk or f.id == OUTSIDE] or \
        [f for f in v.findings if f.effect in ("slow", "info")]
    text = Text()
    if v.status == "depends" and v.where:
        from ..engine.where import describe_where

        text.append(describe_where(v.where), style="yellow")
        text.append("\n")
    open_ = [f for f in shown if f.applies is None]
    definite = [f for f in shown if f.applies is not None]
    listed = definite + open_[:MAX_CONDITIONS]
    for i, f in enumerate(listed):
        if i:
            text.append("\n")
        text.append_text(_finding_line(f))
    if len(open_) > MAX_CONDITIONS:
        text.append("\n" + more_conditions(len(open_) - MAX_CONDITIONS), style="dim")
    if v.status == "depends" and v.missing:
        text.append("\n")
        text.append(f"depends on: {', '.join(f'{m} (give {GIVEN_BY[m]})' if m in GIVEN_BY else m for m in v.missing)}",
                    style="yellow")
    return text


def _fix(v: Verdict) -> Text:
    if v.fix:
        text = Text(v.fix.describe())
        for alt in v.alternatives[:2]:
            text.append("\nor " + alt.describe(), style="dim")
        return text
    if v.status == "not-installed":
        first = next((f for f in v.findings if f.id == "AD-NOT-INSTALLED"), None)
        return Text(first.message.split("(", 1)[-1].rstrip(")") if first else "", style="dim")
    return Text("")


def _selection_text(s: Selection) -> Text:
    label = FRAMEWORK_LABELS.get(s.framework, s.framework)
    text = Text()
    text.append(f"{label}: ", style="bold")
    if s.status == "selected":
        text.append(f"runs {s.backend}", style="green")
        if s.reason:
            text.append(f" — {s.reason}", style="yellow")
    elif s.status == "fails":
        text.append(f"selects {s.backend}, which FAILS at run time", style="bold red")
        if s.reason:
            text.append(f" — {s.reason}", style="red")
    elif s.status == "wrong-results":
        text.append(f"selects {s.backend}, which gives WRONG RESULTS", style="bold magenta")
        if s.reason:
            text.append(f" — {s.reason}", style="magenta")
    elif s.status == "depends":
        text.append("depends: " + " or ".join(s.candidates), style="yellow")
        if s.note:
            text.append(f" ({s.note})", style="dim")
    elif s.status == "none":
        text.append("no backend can run it", style="bold red")
    else:
        text.append(s.status, style="dim")
    return text


def render_result(console: Console, result: ConfigResult) -> None:
    """The detailed table for one config."""
    console.print(Text(result.config.label(), style="bold"))
    table = Table(stack_head=2)
    table.add_column("backend", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("why", ratio=3)
    table.add_column("smallest fix", ratio=2)
    for v in result.verdicts:
        table.add_row(v.backend.id, _mark(v.status), _why(v), _fix(v))
    console.print(table)
    for s in result.selected:
        console.print(Text("  ").append_text(_selection_text(s)))
    console.print()


MAX_NAMES = 12
"""The "Why" table names this many configs per reason, then counts the rest (a sweep hits thousands)."""


def render_matrix(console: Console, report: Report) -> None:
    """Many configs: one row each, one column per backend, then every reason once with the configs it hits."""
    backends = [v.backend.id for v in report.results[0].verdicts]
    installed = [b for b in backends if any(r.verdict(b).status != "not-installed" for r in report.results)]
    table = Table()
    table.add_column("config", no_wrap=True)
    for b in installed:
        table.add_column(b, justify="center", no_wrap=True)
    frameworks = [s.framework for s in report.results[0].selected]
    for fw in frameworks:
        table.add_column(f"{FRAMEWORK_LABELS.get(fw, fw)} runs", no_wrap=True)
    for r in report.results:
        row: list[Text | str] = [r.config.name or r.config.label()]
        row += [_mark(r.verdict(b).status, short=True) for b in installed]
        for s in r.selected:
            if s.status == "selected":
                row.append(Text(s.backend or "", style="green"))
            elif s.status in ("fails", "wrong-results"):
                row.append(Text(f"{s.backend} ✗ {s.status}", style="red"))
            elif s.status == "depends":
                row.append(Text(" or ".join(s.candidates), style="yellow"))
            else:
                row.append(Text(s.status, style="dim"))
        table.add_row(*row)
    console.print(table)
    missing = [b for b in backends if b not in installed]
    if missing:
        console.print(Text(f"  not installed here: {', '.join(missing)}", style="dim"))
    if not installed:
        console.print(Text("  nothing here can run attention kernels: install torch (pip install torch), or ask "
                           "about another machine with `attndoctor explain --gpu H100 --torch 2.11 ...`",
                           style="yellow"))
    console.print(Text("  ✓ runs   ✓! runs, known bug at risk   ✗ refused   ⚠ wrong results   ? depends on a fact not given "
                       "or outside the rules", style="dim"))
    console.print()
    grouped: dict[tuple[str, str], tuple[Verdict, Finding, list[str]]] = {}
    for r in report.results:
        for v in r.verdicts:
            if v.status in ("supported", "not-installed"):
                continue
            for f in v.findings:
                if not f.blocking:
                    continue
                key = (v.backend.id, f.id)
                if key not in grouped:
                    grouped[key] = (v, f, [])
                grouped[key][2].append(r.config.name or r.config.label())
    if grouped:
        console.print(Text("Why", style="bold"))
        reasons = Table()
        reasons.add_column("backend", no_wrap=True)
        reasons.add_column("reason", ratio=3)
        reasons.add_column("configs", ratio=1)
        reasons.add_column("smallest fix", ratio=2)
        for (backend, _), (v, f, names) in grouped.items():
            more = f" … and {len(names) - MAX_NAMES:,} more" if len(names) > MAX_NAMES else ""
            reasons.add_row(backend, _finding_line(f), ", ".join(names[:MAX_NAMES]) + more, _fix(v))
        console.print(reasons)


ASSUMED = ("capped at", "the dtype the checkpoint is stored in")
"""Words of a field's origin (sources/model_*.py) that mark a value a model config did not state as the run uses
it: the sequence length cap and a checkpoint's fp32 storage dtype. The text report names them, as the JSON does."""


def assumption_lines(report: Report) -> list[Text]:
    """One line per value read from a model config by assumption, with the configs it was assumed for."""
    grouped: dict[tuple[str, str, str], list[str]] = {}
    for r in report.results:
        origin = dict(r.config.origin or {})
        if origin.get("seqlen_q") is not None and origin.get("seqlen_q") == origin.get("seqlen_kv"):
            origin.pop("seqlen_kv")
            origin["seqlen"] = origin.pop("seqlen_q")
        for field, why in origin.items():
            if any(word in why for word in ASSUMED):
                value = getattr(r.config, "seqlen_q" if field == "seqlen" else field, None)
                grouped.setdefault((field, str(value), why), []).append(r.config.name or r.config.label())
    return [Text(f"  assumed {field} {value} ({why}) for {', '.join(names)}", style="yellow")
            for (field, value, why), names in grouped.items()]


def render_text(report: Report, gate: GateResult, file: IO[str] | None = None, *, detailed: bool = False,
                **_: Any) -> None:
    """Write the human report."""
    console = Console(file)
    for line in environment_lines(report.environment) + assumption_lines(report):
        console.print(line)
    console.print()
    if len(report.results) == 1 or detailed:
        for result in report.results:
            render_result(console, result)
    else:
        render_matrix(console, report)
    for plan in report.models:
        render_model_plan(console, plan)
    if report.ignored:
        for rule, why in report.ignored.items():
            console.print(Text(f"ignored {rule}: {why}", style="dim"))
    if not gate.passed:
        console.print(Text("gate failed:", style="bold red"))
        shown: set[str] = set()
        for check in gate.checks:
            if check.passed:
                continue
            for reason in check.reasons:
                line = f"{check.config}: {reason}"
                if line not in shown:
                    shown.add(line)
                    console.print(Text(f"  {line}", style="red"))
            if check.fixes and check.fixes[0] not in shown:
                shown.add(check.fixes[0])
                console.print(Text(f"    fix: {check.fixes[0]}", style="green"))


def render_model_plan(console: Console, plan: Any) -> None:
    """The per-layer plan of one model: each attention kind, what each framework runs it on, and the model-level fix."""
    from ..sources.model_plan import SCORE_FORMULA, SLOW_PATHS, human_bytes
    from ..sources.models import layer_ranges

    console.print()
    total = f", {plan.layers} layers" if plan.layers else ""
    console.print(Text(f"Per-layer plan: {plan.name}{total}", style="bold"))
    for kind in plan.kinds:
        where = f"{len(kind.layers)} layers ({layer_ranges(list(kind.layers))})" if kind.layers else "layers not given"
        console.print(Text(f"  {kind.label}: {where}" + (f", when {kind.when}" if kind.when else "")))
        console.print(Text(f"    {kind.shape}"))
        runs = "   ".join(f"{fw}: {_plan_run(b, s)}" for fw, (b, s) in kind.runs.items())
        console.print(Text(f"    runs on  {runs}"))
        for framework, fix in kind.fixes.items():
            console.print(Text(f"    fix under {framework}: {fix}", style="green"))
        for note in kind.notes:
            console.print(Text(f"    note: {note}", style="dim"))
    for kind_name, layers in plan.skipped.items():
        where = layer_ranges(list(layers))
        console.print(Text(f"  {kind_name}: {len(layers)} layers ({where}) from {plan.skipped_origin}: "
                           f"no softmax attention, left out of the verdicts"))
    for note in plan.notes:
        console.print(Text(f"  note: {note}", style="dim"))
    if plan.common:
        console.print(Text(f"  runs every attention kind: {', '.join(plan.common)}"))
    elif len([k for k in plan.kinds if not k.tower and not k.when]) > 1:
        console.print(Text("  no backend runs every attention kind with the facts given"))
    for finding in plan.findings:
        console.print(Text(f"  ✗ {finding.text}", style="yellow"))
        console.print(Text(f"    fix: {finding.fix}", style="green"))
    flagged = {(f.framework, f.kind) for f in plan.findings}
    for kind in plan.kinds:
        for framework, (backend, status) in kind.runs.items():
            if backend in SLOW_PATHS and status == "selected" and (framework, kind.label) not in flagged:
                held = (f"an S x S score buffer of {human_bytes(kind.score_bytes)} per call ({SCORE_FORMULA})"
                        if backend == "sdpa-math" else "the full S x S score matrix in memory")
                console.print(Text(f"  {kind.label} under {framework} runs {backend}: {held}", style="yellow"))


def _plan_run(backend: str | None, status: str) -> str:
    """What one framework runs a kind on, in a few words."""
    if backend is None:
        return {"none": "no backend", "depends": "depends on facts not given",
                "not-installed": "not installed"}.get(status, status)
    return backend if status == "selected" else f"{backend} ({status})"
