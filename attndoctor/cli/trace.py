"""`attndoctor trace -- COMMAND ...`: run a Python program, record what its attention calls ran, diagnose them."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, List, Optional

import typer

from ..errors import UsageError
from ..console.output import check_writable
from ..report.formats import accepted, check, renderer
from . import EXIT_INTERRUPTED
from .common import handle_errors

TRACE_FORMATS = accepted("trace")


def program_command(command: List[str]) -> List[str]:
    """The command to run: a .py file runs under this Python; anything else (python, torchrun, a script) as given."""
    if not command:
        raise UsageError("no program to trace; usage: attndoctor trace [OPTIONS] -- python train.py [ARGS...] "
                         "(or -- torchrun ... / -- python -m pkg ...)")
    first = command[0]
    if first.endswith(".py"):
        from ..inputs import describe, locate

        locate(first, describe(first, "Python file", "give the program to run (-- python train.py ...)"))
        return [sys.executable, *command]
    if shutil.which(first) is None:
        raise UsageError(f"{first}: no such program on PATH; give a Python program (python train.py, "
                         "python -m pkg, torchrun ...)")
    return list(command)


def run_traced(command: List[str], directory: str, options: List[str]) -> tuple[int, bool]:
    """Run the program with the recorder bootstrap on its PYTHONPATH; its stdin, stdout and stderr are its own.
    Returns its exit status and whether Ctrl-C came while it ran."""
    from ..trace.record import DIR_VAR, OPTIONS_VAR

    boot = str(Path(__file__).resolve().parent.parent / "trace" / "boot")
    env = dict(os.environ)
    env["PYTHONPATH"] = boot + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env[DIR_VAR] = directory
    env[OPTIONS_VAR] = ",".join(options)
    interrupts: list[int] = []
    # Ctrl-C reaches the program too (one process group): it is the program's to handle, and attndoctor waits for
    # it. A handler, unlike SIG_IGN, is not inherited across exec, so the program gets the default behaviour.
    previous = signal.signal(signal.SIGINT, lambda signum, frame: interrupts.append(signum))
    try:
        code = subprocess.call(command, env=env)
    finally:
        signal.signal(signal.SIGINT, previous)
    return (128 - code if code < 0 else code), bool(interrupts)


@handle_errors
def trace(command: Optional[List[str]] = typer.Argument(None, metavar="-- COMMAND [ARGS...]",
                                                        help="The program to run (after --)."),
          numerics: bool = typer.Option(False, "--numerics", help="Check every attention output and gradient for "
                                        "non-finite values (naming the first call site and step), and measure the "
                                        "advisories' data conditions (min logsumexp per head, fully masked rows)."),
          timing: bool = typer.Option(False, "--timing", help="GPU time per call site (CUDA events)."),
          bench: bool = typer.Option(False, "--bench", help="After the program, time every backend that runs each "
                                     "distinct config (as `attndoctor bench` does) and name a faster one than what "
                                     "ran."),
          record: Optional[str] = typer.Option(None, "--record", metavar="PATH", help="Write the distinct configs as "
                                               "JSON lines for explain/verify --config-file."),
          output_file: Optional[str] = typer.Option(None, "--output", "-o", metavar="PATH",
                                                    help="Write the report here (default: standard error)."),
          fmt: str = typer.Option("text", "--format", metavar="FORMAT", help="text | json."),
          rules_dir: Optional[str] = typer.Option(None, "--rules-dir", metavar="PATH",
                                                  help="Read rules from this folder instead.")) -> None:
    """Run a Python program and report which attention kernels its calls ran, per call site, diagnosed."""
    check("trace", fmt)
    for path, flag in ((output_file, "--output"), (record, "--record")):
        if path:
            check_writable(path, flag)
    if rules_dir is not None:
        from ..inputs import FOLDER, describe, locate

        locate(rules_dir, describe(rules_dir, "rules folder", "give a folder of rule files (*.toml)"), FOLDER)
    argv = program_command(list(command or []))
    options = [name for name, on in (("numerics", numerics), ("timing", timing)) if on]
    with tempfile.TemporaryDirectory(prefix="attndoctor-trace-") as directory:
        code, interrupted = run_traced(argv, directory, options)
        from ..trace.reader import read_records

        records = read_records(directory)
    _report(records, list(command or []), code, record, output_file, fmt, rules_dir, bench and not interrupted)
    raise typer.Exit(EXIT_INTERRUPTED if interrupted else code)


def _report(records: list, argv: List[str], code: int, record: Optional[str], output_file: Optional[str], fmt: str,
            rules_dir: Optional[str], bench: bool = False) -> None:
    from ..console.output import output_stream
    from ..probe import probe
    from ..trace.reader import record_lines, trace_report

    report = trace_report(records, probe(), argv=argv, exit_code=code, rules_dir=rules_dir)
    if bench:
        _bench(report, rules_dir)
    if record:
        with output_stream(record, what="--record") as stream:
            stream.write("".join(line + "\n" for line in record_lines(report.calls)))
    if output_file:
        with output_stream(output_file) as stream:
            _render(report, fmt, stream)
    else:
        _render(report, fmt, sys.stderr)


def _bench(report: Any, rules_dir: Optional[str]) -> None:
    """--bench: time the distinct configs on this machine's GPU; without one, say that nothing was timed."""
    from ..trace.reader import attach_bench

    env = report.report.environment
    configs = [r.config for r in report.report.results]
    if not configs:
        return
    if env.no_gpu or env.torch_cuda_available is False or not env.gpus:
        report.notes.append("--bench needs a CUDA GPU and torch with CUDA: nothing was timed")
        return
    from ..runs.bench import run_bench

    attach_bench(report, run_bench(configs, env, rules_dir=rules_dir))


def _render(report: object, fmt: str, stream: object) -> None:
    renderer("trace", fmt)(report, stream)


trace.context_settings = {"allow_interspersed_args": False, "ignore_unknown_options": True}  # type: ignore[attr-defined]
"""Everything after the program's name is the program's own: its flags never reach attndoctor's parser."""
