"""The last steps every report command shares: gate, render, write, exit code."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from typing import Any, Callable, Iterator, Mapping, Sequence

import typer

from ..errors import RuleError, UsageError
from ..console.output import for_encoding, output_stream, shown

from ..report.formats import accepted, check, renderer

REPORT_FORMATS = accepted("report")


def fail(message: str) -> "typer.Exit":
    """Print one short line on stderr and return the exit-2 exception to raise."""
    sys.stderr.write(for_encoding(f"attndoctor: error: {shown(message)}\n", sys.stderr.encoding))
    return typer.Exit(2)


def handle_errors(func: Callable[..., Any]) -> Callable[..., Any]:
    """Bad input and broken rule files become exit 2 with one line, never a traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (UsageError, RuleError) as exc:
            raise fail(str(exc)) from None

    return wrapper


def plan(config: Mapping[str, Any], gate: dict[str, Any], *, default_bundled: bool,
         stream: bool = False) -> tuple[Sequence[Any], Any]:
    """The configs to evaluate and the project settings, with flags over the project file over defaults."""
    from ..sources.project import load_project
    from ..services import configs_from_inputs

    project = load_project(gate.pop("project", None))
    values = {k: v for k, v in config.items() if k not in ("config_file", "model") and v not in (None, False)}
    if config.get("train") is False:
        values["train"] = False
    groups = gate.get("require_any") or []
    if any(not g for g in require_any_groups(groups)):
        raise UsageError("--require-any: empty group; give comma-separated backend ids such as sdpa-flash,sdpa-cudnn")
    models = list(config.get("model") or []) or ([] if config.get("config_file") else project.models)
    configs = configs_from_inputs(values, list(config.get("config_file") or []), default_bundled=default_bundled,
                                  models=models, project_configs=project.configs, stream=stream)
    if project.path and not (config.get("config_file") or models or project.configs):
        # configs from flags alone (or the bundled shapes): the settings file still set the gate and the machine
        configs = [c._replace(source=(project.path, 0)) for c in configs]
    gate["survey"] = default_bundled and not (values or config.get("config_file") or models or project.configs)
    if not gate.get("require") and project.require:
        gate["require"], gate["require_from"] = project.require, project.where("require")
    if not gate.get("require_any") and project.require_any:
        gate["require_any"], gate["require_from"] = project.require_any, project.where("require_any")
    gate["fail_on"] = gate.get("fail_on") or project.fail_on
    return configs, project


def require_any_groups(values: Sequence[str] | None) -> list[list[str]]:
    """--require-any a,b --require-any c → [[a, b], [c]]."""
    return [[b.strip() for b in v.split(",") if b.strip()] for v in (values or [])]


def brief_layout(output: Mapping[str, Any]) -> str | None:
    """`quiet`, `summary` or None, refusing the combinations that contradict each other."""
    quiet, summary, fmt = output.get("quiet"), output.get("summary"), output.get("format", "text")
    if quiet and summary:
        raise UsageError("--quiet and --summary contradict each other (--quiet writes no report); give one of them")
    if summary and fmt != "text":
        raise UsageError(f"--summary is a text layout; give --format {fmt} or --summary, not both")
    return "quiet" if quiet else ("summary" if summary else None)


@contextlib.contextmanager
def discarded_stdout() -> Iterator[None]:
    """Standard output thrown away for the block (--quiet): errors still reach stderr, the exit code still tells."""
    saved = sys.stdout
    with open(os.devnull, "w", encoding="utf-8") as sink:
        sys.stdout = sink
        try:
            yield
        finally:
            sys.stdout = saved


def emit(report: Any, *, output: Mapping[str, Any], gate: Mapping[str, Any] | None = None) -> None:
    """Evaluate the gate, render in the chosen format, write it, and exit with the gate's code."""
    fmt = output.get("format", "text")
    check("report", fmt)
    layout = brief_layout(output)
    if layout == "quiet" and not output.get("output_file"):
        with discarded_stdout():
            _emit(report, output=output, gate=gate, fmt=fmt, layout=layout)
    else:
        _emit(report, output=output, gate=gate, fmt=fmt, layout=layout)


def _emit(report: Any, *, output: Mapping[str, Any], gate: Mapping[str, Any] | None, fmt: str,
          layout: str | None) -> None:
    from ..engine.gate import SEVERITY, evaluate_gate

    gate = gate or {}
    fail_on = gate.get("fail_on")
    if fail_on is not None and fail_on not in SEVERITY:
        raise UsageError(f"--fail-on: unknown effect {fail_on!r}; accepted: {', '.join(SEVERITY)}")
    streamed = hasattr(report, "backend_ids")
    known = set(report.backend_ids) if streamed else {v.backend.id for r in report.results for v in r.all_verdicts}
    require = list(gate.get("require") or [])
    groups = require_any_groups(gate.get("require_any"))
    for backend in require + [b for g in groups for b in g]:
        if backend not in known:
            raise UsageError(f"{gate.get('require_from', '--require')}: unknown backend {backend!r}; "
                             f"accepted: {', '.join(sorted(known))}")
    if streamed:  # a ReportStream: json and jsonl are written as results come; other formats take the Report
        from .stream_out import write_stream

        done = write_stream(report, fmt, output, require=require, require_any=groups, fail_on=fail_on,
                            survey=bool(gate.get("survey")))
        if hasattr(done, "passed"):
            raise typer.Exit(0 if done.passed else 1)
        report = done
    result = evaluate_gate(report, require=require, require_any=groups, fail_on=fail_on,
                           survey=bool(gate.get("survey")))
    with output_stream(output.get("output_file")) as stream:
        if layout == "summary":
            from ..report.summary import render_summary

            render_summary(report, result, stream)
        else:
            renderer("report", fmt)(report, result, stream, detailed=bool(output.get("details")))
    if fmt == "github" and os.environ.get("GITHUB_STEP_SUMMARY"):
        from ..report.github import summary_markdown

        with output_stream(os.environ["GITHUB_STEP_SUMMARY"], what="GITHUB_STEP_SUMMARY", append=True) as summary:
            summary.write(summary_markdown(report, result))
    raise typer.Exit(0 if result.passed else 1)
