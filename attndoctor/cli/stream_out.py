"""Writing a streamed report: results go out as they are evaluated, with a progress line on a terminal."""

from __future__ import annotations

from typing import Any, Mapping, Sequence


def write_stream(run: Any, fmt: str, output: Mapping[str, Any], *, require: Sequence[str],
                 require_any: Sequence[Sequence[str]], fail_on: str | None, survey: bool) -> Any:
    """Write --format json (many configs) or jsonl result by result and return the GateResult; for the other
    formats return the collected Report instead."""
    from ..console.progress import Progress, streams

    progress = Progress(run.count)
    run = run._replace(results=progress.wrap(run.results))
    if not streams(fmt, run.count):
        try:
            return run.collect()
        finally:
            progress.close()
    from ..engine.gate_tally import GateTally
    from ..console.output import output_stream
    from ..console.parallel import map_ordered, workers_for
    from ..report.formats import streamed_writer
    from ..report.stream import PIECES

    options = {"require": require, "require_any": require_any, "fail_on": fail_on, "survey": survey}
    tally = GateTally(run.environment, **options)
    pieces = None
    workers = workers_for(run.count)
    if workers > 1 and run.evaluate is not None:
        def make_render() -> Any:
            return PIECES[fmt](GateTally(run.environment, keeps=False, **options))

        pieces = progress.wrap(map_ordered(run.configs, run.evaluate, make_render, workers))
    try:
        with output_stream(output.get("output_file")) as stream:
            return streamed_writer(fmt)(run, tally, stream, pieces)
    finally:
        progress.close()
