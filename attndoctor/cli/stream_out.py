"""Writing a streamed report: results go out as they are evaluated, with a progress line on a terminal."""

from __future__ import annotations

from typing import Any, Mapping, Sequence


def write_stream(run: Any, fmt: str, output: Mapping[str, Any], *, require: Sequence[str],
                 require_any: Sequence[Sequence[str]], fail_on: str | None, survey: bool) -> Any:
    """Write --format json (many configs) or jsonl result by result and return the GateResult; for the other
    formats return the collected Report instead."""
    from ..report.stream import Progress, streams

    progress = Progress(run.count)
    run = run._replace(results=progress.wrap(run.results))
    if not streams(fmt, run.count):
        try:
            return run.collect()
        finally:
            progress.close()
    from ..engine.gate_tally import GateTally
    from ..report.stream import write_json, write_jsonl

    from ..output import output_stream

    tally = GateTally(run.environment, require=require, require_any=require_any, fail_on=fail_on, survey=survey)
    try:
        with output_stream(output.get("output_file")) as stream:
            return (write_jsonl if fmt == "jsonl" else write_json)(run, tally, stream)
    finally:
        progress.close()
