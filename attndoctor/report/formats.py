"""Every command's output formats in one table. A renderer writes its document to a stream and returns nothing;
modules load only when their format is asked for, so `explain` starts without the ones it does not use."""

from __future__ import annotations

from importlib import import_module
from typing import IO, Any, Callable, NamedTuple

from ..errors import UsageError


class Format(NamedTuple):
    """Where a format's renderer lives ("module:function" in report/); `streamed` writes results as they come."""

    renderer: str = ""
    streamed: str = ""


FORMATS: dict[str, dict[str, Format]] = {
    "report": {"text": Format("text:render_text"), "json": Format("json_format:render_json", "stream:write_json"),
               "jsonl": Format(streamed="stream:write_jsonl"), "junit": Format("junit:render_junit"),
               "sarif": Format("sarif:render_sarif"), "github": Format("github:render_github")},
    "why": {"text": Format("why_text:render_why_text"), "json": Format("why_text:render_why_json")},
    "trace": {"text": Format("trace_text:render_trace_text"), "json": Format("trace_text:render_trace_json")},
    "verify": {"text": Format("verify_text:render_verify_text"), "json": Format("verify_text:render_verify_json")},
    "stress": {"text": Format("stress_text:render_stress_text"), "json": Format("stress_text:render_stress_json")},
    "bench": {"text": Format("bench_text:render_bench_text"), "json": Format("bench_text:render_bench_json")},
    "fleet": {"text": Format("fleet_text:render_fleet_text"), "json": Format("fleet_text:render_fleet_json")},
}
"""kind of document → format → renderer. A report renderer takes (report, gate, stream, *, detailed); the others
take (document, stream, *, detailed); options a format has no use for are ignored."""


def accepted(kind: str) -> tuple[str, ...]:
    """The formats a kind of document is written in, in the order --help lists them."""
    return tuple(FORMATS[kind])


def check(kind: str, fmt: str) -> None:
    """An unknown --format is a usage error naming the accepted ones."""
    if fmt not in FORMATS[kind]:
        raise UsageError(f"--format: unknown format {fmt!r}; accepted: {', '.join(FORMATS[kind])}")


def _load(where: str) -> Callable[..., Any]:
    module, _, name = where.partition(":")
    return getattr(import_module(f".{module}", __package__), name)


def renderer(kind: str, fmt: str) -> Callable[..., None]:
    """The function that writes `kind` in `fmt` to a stream."""
    return _load(FORMATS[kind][fmt].renderer)


def streamed_writer(fmt: str) -> Callable[..., Any]:
    """The writer of a report's results as they are evaluated: (run, tally, stream, pieces) → GateResult."""
    return _load(FORMATS["report"][fmt].streamed)


def write(kind: str, fmt: str, document: Any, target: str | None, **options: Any) -> None:
    """Write the document in `fmt` to the file `target`, or standard output."""
    from ..console.output import output_stream

    with output_stream(target) as stream:
        renderer(kind, fmt)(document, stream, **options)


def dump_json(document: Any, stream: IO[str]) -> None:
    """A document as indented JSON and a newline, the way every json format but the report's many configs ends."""
    import json

    stream.write(json.dumps(document, indent=2, default=str) + "\n")
