"""`attndoctor check`: this machine, its GPU and libraries, against your config or the bundled model shapes."""

from __future__ import annotations

import sys
from typing import Any

import typer

from .common import REPORT_FORMATS, emit, handle_errors, plan
from .options import seconds, with_groups


@with_groups("config", "output", "gate", formats=REPORT_FORMATS, brief=True)
@handle_errors
def check(*, timeout: float = typer.Option(20.0, "--timeout", callback=seconds,
                                        help="Seconds allowed for each probe step."),
          no_cache: bool = typer.Option(False, "--no-cache", help="Import torch again rather than reuse its build "
                                        "facts from the last check (they are reused while torch is unchanged)."),
          config: dict[str, Any], output: dict[str, Any], gate: dict[str, Any]) -> None:
    """Check this machine: which backends run your config (or well-known model shapes), and which each framework picks."""
    from ..probe import probe
    from ..services import diagnose_stream

    configs, project = plan(config, gate, default_bundled=True, stream=True)
    if sys.stderr.isatty():
        from rich.console import Console

        with Console(stderr=True).status("probing this machine (GPU, torch, cuDNN, flash-attn, TE)…"):
            environment = probe(timeout=timeout, use_cache=not no_cache)
    else:
        environment = probe(timeout=timeout, use_cache=not no_cache)
    report = diagnose_stream(configs, environment, command="check", backends=output.get("backend"),
                             rules_dir=output.get("rules_dir"), ignore=project.ignore,
                             ignore_from=project.where("ignore"))
    emit(report, output=output, gate=gate)
