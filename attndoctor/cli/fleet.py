"""`attndoctor fleet`: every rank of a torchrun/srun job probes itself; rank 0 reports what differs."""

from __future__ import annotations

import sys
from typing import Any

import typer

from .common import handle_errors, plan
from .options import seconds, with_groups


@with_groups("config", "output")
@handle_errors
def fleet(*, timeout: float = typer.Option(20.0, "--timeout", callback=seconds,
                                        help="Seconds allowed for each probe step on each rank."),
          rank_timeout: float = typer.Option(120.0, "--rank-timeout", callback=seconds,
                                        help="Seconds to wait for the ranks to meet, "
                                             "and for every rank's answer; a rank that does not answer is reported."),
          config: dict[str, Any], output: dict[str, Any]) -> None:
    """Check every rank of a job (start it with torchrun or srun): ranks grouped by identical GPU, driver, libraries
    and NVTE_*/CUDNN_* variables, what differs, the backends they would select, and whether each context-parallel
    config fits the world. Exit 1 on every rank when the selected backends differ or a config does not fit."""
    from ..fleet.dist import FleetFailure, run_fleet
    from ..report.formats import check, write

    fmt = output.get("format", "text")
    check("fleet", fmt)
    configs, project = plan(config, {}, default_bundled=True)
    try:
        code = run_fleet(configs, probe_timeout=timeout, rank_timeout=rank_timeout, backends=output.get("backend"),
                         rules_dir=output.get("rules_dir"), ignore=project.ignore,
                         render=lambda doc: write("fleet", fmt, doc, output.get("output_file"),
                                                  detailed=bool(output.get("details"))))
    except FleetFailure as exc:
        from ..console.output import shown

        sys.stderr.write(f"attndoctor: fleet: {shown(str(exc), newlines=False)}\n")
        raise typer.Exit(1) from None
    raise typer.Exit(code)
