"""The command line: thin commands over the services, one line on stderr and exit 2 for bad input."""

from __future__ import annotations

import os
import sys
from typing import Sequence

import typer

from .. import __version__

COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("check", "check"), "explain": ("explain", "explain"), "verify": ("verify", "verify"),
    "fleet": ("fleet", "fleet"), "bench": ("bench", "bench"), "rules": ("rules_cmd", "rules_app"),
    "why": ("why", "why"), "trace": ("trace", "trace"),
}
"""Command name -> (module in this package, attribute): a run imports and builds only the command it runs."""


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"attndoctor {__version__}\n")
        raise typer.Exit(0)


def build_app(only: str | None = None) -> typer.Typer:
    """The Typer app with every command, or with just `only` (what a normal run needs: faster start)."""
    import importlib

    app = typer.Typer(
        name="attndoctor",
        help="Which attention backends will run your attention config on your GPU and library versions, "
             "why the others refuse, and the smallest fix.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_show_locals=False,
    )

    @app.callback()
    def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                           help="Print the version and exit.")) -> None:
        """attndoctor."""

    for name, (module, attribute) in COMMANDS.items():
        if only is not None and name != only:
            continue
        target = getattr(importlib.import_module(f".{module}", __name__), attribute)
        if isinstance(target, typer.Typer):
            app.add_typer(target, name=name)
        else:
            app.command(name, context_settings=getattr(target, "context_settings", None))(target)
    return app


def _command_of(args: Sequence[str]) -> str | None:
    """The command a command line runs, when it names one first (options before it mean: build everything)."""
    return args[0] if args and args[0] in COMMANDS else None


def _usage_error_types() -> tuple[type[BaseException], ...]:
    try:
        from typer._click.exceptions import ClickException
    except ImportError:  # typer before it vendored click
        from click.exceptions import ClickException  # type: ignore[no-redef]
    return (ClickException,)


EXIT_BROKEN_PIPE = 141
"""What a shell reports for a program whose reader closed the pipe (128 + SIGPIPE), as for `head`'s writers."""

GC_THRESHOLD = (50_000, 20, 100)
"""The cycle collector's thresholds for a run from the command line: a run builds tens of thousands of small, long-
lived objects (rules, condition trees), and at the default 700 the collector walks them again and again."""


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: typer's own usage errors become one line and exit 2, like ours."""
    if argv is None:
        import atexit
        import gc

        gc.set_threshold(*GC_THRESHOLD)
        # Everything alive at exit dies with the process: freezing it spares the final full collection, which
        # took about 25 ms of an `explain` that runs in 140.
        atexit.register(gc.freeze)
    from ..errors import RuleError, UsageError
    from ..output import for_encoding, reason, showable, silence_stdout
    from .common import fail

    sys.stdout, sys.stderr = showable(sys.stdout), showable(sys.stderr)
    click_errors = _usage_error_types()
    try:
        args = list(sys.argv[1:] if argv is None else argv)
        code = build_app(_command_of(args))(args=args, prog_name="attndoctor", standalone_mode=False)
        sys.stdout.flush()
    except click_errors as exc:
        fail(exc.format_message() if hasattr(exc, "format_message") else str(exc))
        sys.exit(getattr(exc, "exit_code", 2) or 2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (UsageError, RuleError) as exc:
        sys.exit(fail(str(exc)).exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("attndoctor: interrupted\n")
        sys.exit(130)
    except BrokenPipeError:
        silence_stdout()
        sys.exit(EXIT_BROKEN_PIPE)
    except OSError as exc:
        # Only writing can fail this late: reading input and probing report their own errors.
        silence_stdout()
        sys.exit(fail(f"standard output: cannot write ({reason(exc)})").exit_code)
    except Exception as exc:  # noqa: BLE001 - the last resort: one line, never a traceback
        if os.environ.get("ATTNDOCTOR_TRACEBACK"):
            raise
        sys.stderr.write(for_encoding(
            f"attndoctor: internal error: {type(exc).__name__}: {exc} (please report it with the command line; "
            f"ATTNDOCTOR_TRACEBACK=1 shows where)\n", sys.stderr.encoding))
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)
