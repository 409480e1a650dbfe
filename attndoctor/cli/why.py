"""`attndoctor why`: from an error message, a log or a traceback to the rules that explain it, the cause and the fix."""

from __future__ import annotations

import sys
from typing import Any, Optional

import typer

from ..report.formats import accepted, check, write
from .common import handle_errors
from .options import seconds, with_groups

WHY_FORMATS = accepted("why")


@with_groups("config", "env", "output", formats=WHY_FORMATS)
@handle_errors
def why(text: Optional[str] = typer.Argument(None, help="The error message or warning; '-' (or a pipe) reads "
                                             "standard input."),
        log: Optional[str] = typer.Option(None, "--log", metavar="PATH", help="A whole log or traceback to read."),
        here: Optional[bool] = typer.Option(None, "--here/--no-here", help="Merge the facts of this machine (probe); "
                                            "default: when no what-if flag is given and a GPU or torch is here."),
        timeout: float = typer.Option(20.0, "--timeout", callback=seconds,
                                      help="Seconds allowed for each probe step (--here)."),
        *, config: dict[str, Any], env: dict[str, Any], output: dict[str, Any]) -> None:
    """Explain an error message or log: the rules and known bugs that match, the likely cause, the fix."""
    from ..errors import UsageError
    from ..services import parse_env_assignments, whatif_environment
    from ..why.reader import read_source
    from ..why.service import explain_text

    fmt = output.get("format", "text")
    check("why", fmt)
    if config.get("config_file") or config.get("model"):
        raise UsageError("why reads one config from the text and flags; --config-file and --model are not taken")
    source = read_source(text, log, sys.stdin)
    env_vars = parse_env_assignments(env.pop("set_env") or [])
    env_file = env.pop("env_file", None)
    flags = {k: v for k, v in env.items() if v is not None}
    if here is None:
        here = not (flags or env_file) and _machine_has_attention_stack()
    if here:
        from ..probe import probe

        base = probe(timeout=timeout)
        if env_file is not None:
            raise UsageError("--here and --env-file both describe the machine; give one")
    else:
        base = whatif_environment({}, env_file)
    answer = explain_text(source, base_env=base, env_flags=flags, env_vars=env_vars, config_flags=config,
                          rules_dir=output.get("rules_dir"))
    write("why", fmt, answer, output.get("output_file"))
    raise typer.Exit(0 if answer.verdict == "cause" else 1)


def _machine_has_attention_stack() -> bool:
    """A GPU device node or an installed torch: then this machine's facts are worth probing (cheap checks only)."""
    import glob
    from importlib.util import find_spec

    return bool(glob.glob("/dev/nvidia[0-9]*")) or find_spec("torch") is not None
