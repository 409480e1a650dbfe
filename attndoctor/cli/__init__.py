"""The command line: thin commands over the services, one line on stderr and exit 2 for bad input."""

from __future__ import annotations

import sys
from typing import Sequence

import typer

from .. import __version__
from .bench import bench
from .check import check
from .explain import explain
from .fleet import fleet
from .rules_cmd import rules_app
from .verify import verify


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"attndoctor {__version__}\n")
        raise typer.Exit(0)


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


app.command("check")(check)
app.command("explain")(explain)
app.command("verify")(verify)
app.command("fleet")(fleet)
app.command("bench")(bench)
app.add_typer(rules_app, name="rules")


def _usage_error_types() -> tuple[type[BaseException], ...]:
    try:
        from typer._click.exceptions import ClickException
    except ImportError:  # typer before it vendored click
        from click.exceptions import ClickException  # type: ignore[no-redef]
    return (ClickException,)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: typer's own usage errors become one line and exit 2, like ours."""
    click_errors = _usage_error_types()
    try:
        code = app(args=list(argv) if argv is not None else None, prog_name="attndoctor", standalone_mode=False)
    except click_errors as exc:
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        sys.stderr.write(f"attndoctor: error: {message}\n")
        sys.exit(getattr(exc, "exit_code", 2) or 2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("attndoctor: interrupted\n")
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
