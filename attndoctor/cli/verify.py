"""`attndoctor verify`: run the real kernels on this GPU, isolated, and lay what they did beside the rules."""

from __future__ import annotations

from typing import Any, Optional

import typer

from .common import handle_errors, plan
from .options import at_least, seconds, with_groups


@with_groups("config", "output")
@handle_errors
def verify(*, record: Optional[str] = typer.Option(None, "--record", help="Write every observation as JSON lines."),
           timeout: float = typer.Option(120.0, "--timeout", callback=seconds,
                                        help="Seconds allowed for each probe (the worker is "
                                         "killed and restarted after)."),
           repeats: int = typer.Option(3, "--repeats", callback=at_least(0), help="Timed runs per probe after the checked one (0: none)."),
           seed: Optional[int] = typer.Option(None, "--seed", callback=at_least(0), help="Random data seed (default: fresh each run)."),
           stress: bool = typer.Option(False, "--stress", help="Also run each config on inputs built for the data "
                                       "regimes where accepted calls go wrong (very negative logits, a dominant key, "
                                       "rows that attend to nothing, fp16 near its top, strided output gradients), "
                                       "at lengths around the kernels' tiles; judge output and gradients against "
                                       "float64 and the other backends."),
           jobs: Optional[int] = typer.Option(None, "--jobs", callback=at_least(1),
                                              help="Worker processes run side by side on the GPU, each shape in "
                                              "one of them (default: min(8, cores), fewer where GPU memory is "
                                              "short; 1 on the CPU). Outcomes do not depend on it."),
           config: dict[str, Any], output: dict[str, Any]) -> None:
    """Run each config on each installed backend for real (forward, and backward when training) and show whether
    the rules were right: confirmed or CONTRADICTED, the library's own error, the error against float64, the time."""
    from ..probe import probe
    from ..report.formats import check, write
    from ..runs.verification import run_verify, stderr_progress, verify_device

    fmt = output.get("format", "text")
    check("stress" if stress else "verify", fmt)
    configs, project = plan(config, {}, default_bundled=True)
    environment = probe()
    device = verify_device(environment)
    update, close = stderr_progress("stress" if stress else "verify")
    if stress:
        from ..runs.stress import run_stress

        try:
            found = run_stress(configs, environment, backends=output.get("backend"), timeout=timeout, seed=seed,
                               record=record, rules_dir=output.get("rules_dir"), progress=update, device=device,
                               ignore=project.ignore, jobs=jobs)
        finally:
            close()
        write("stress", fmt, found, output.get("output_file"), detailed=bool(output.get("details")))
        raise typer.Exit(1 if found.new else 0)
    try:
        report = run_verify(configs, environment, backends=output.get("backend"), timeout=timeout, repeats=repeats,
                            seed=seed, record=record, rules_dir=output.get("rules_dir"), progress=update,
                            device=device, jobs=jobs)
    finally:
        close()
    write("verify", fmt, report, output.get("output_file"), detailed=bool(output.get("details")))
    raise typer.Exit(1 if report.disagreements else 0)
