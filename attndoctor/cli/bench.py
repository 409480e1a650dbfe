"""`attndoctor bench`: time every backend that can run the config on this GPU (in the isolated worker) and
recommend the fastest, with the code that selects it and the framework's default beside it."""

from __future__ import annotations

from typing import Any, Optional

import typer

from .common import handle_errors, plan
from .options import at_least, seconds, with_groups


@with_groups("config", "output")
@handle_errors
def bench(*, runs: int = typer.Option(20, "--runs", callback=at_least(1), help="Least timed runs per measurement (median reported)."),
          graphs: bool = typer.Option(True, "--cuda-graphs/--no-cuda-graphs", help="Time CUDA graph replays where "
                                      "a backend can be captured (else eager, said per backend)."),
          sets: int = typer.Option(0, "--sets", callback=at_least(0), help="Input sets rotated (0: enough to defeat the L2 cache)."),
          timeout: float = typer.Option(300.0, "--timeout", callback=seconds,
                                        help="Seconds allowed per backend and config."),
          seed: Optional[int] = typer.Option(None, "--seed", callback=at_least(0), help="Random data seed (default: fresh each run)."),
          config: dict[str, Any], output: dict[str, Any]) -> None:
    """Time forward (and forward+backward when training) of each supported, installed backend: ms, TFLOP/s, % of
    the GPU's peak, spread, peak memory; recommend the fastest and compare it with the framework's default."""
    from ..runs.bench import run_bench
    from ..probe import probe
    from ..report.formats import check, write
    from ..runs.verification import stderr_progress, verify_device

    fmt = output.get("format", "text")
    check("bench", fmt)
    configs, _ = plan(config, {}, default_bundled=True)
    environment = probe()
    device = verify_device(environment, "bench")
    update, close = stderr_progress("bench")
    try:
        report = run_bench(configs, environment, backends=output.get("backend"), timeout=timeout, seed=seed,
                           options={"runs": runs, "graphs": "auto" if graphs else "off", "sets": sets},
                           rules_dir=output.get("rules_dir"), progress=update, device=device)
    finally:
        close()
    write("bench", fmt, report, output.get("output_file"))
    raise typer.Exit(1 if report.untimed else 0)
