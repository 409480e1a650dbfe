"""The command line: thin commands over the services, one line on stderr and exit 2 for bad input."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    import typer

COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("check", "check"), "explain": ("explain", "explain"), "verify": ("verify", "verify"),
    "fleet": ("fleet", "fleet"), "bench": ("bench", "bench"), "rules": ("rules_cmd", "rules_app"),
    "why": ("why", "why"), "trace": ("trace", "trace"),
}
"""Command name -> (module in this package, attribute): a run imports and builds only the command it runs."""


def _version(value: bool) -> None:
    import typer

    from .._version import __version__

    if value:
        sys.stdout.write(f"attndoctor {__version__}\n")
        raise typer.Exit(0)


COMPLETE_VAR = "_ATTNDOCTOR_COMPLETE"
"""The variable through which a shell's completion script asks for the words that may come next (click's protocol)."""


def build_app(only: str | None = None) -> typer.Typer:
    """The Typer app with every command, or with just `only` (what a normal run needs: faster start).

    --install-completion and --show-completion belong to the root alone, so only the full app carries them: a run
    that names its command never builds them, and so never pays for them."""
    import importlib

    import typer

    app = typer.Typer(
        name="attndoctor",
        help="Which attention backends will run your attention config on your GPU and library versions, "
             "why the others refuse, and the smallest fix.",
        no_args_is_help=True,
        add_completion=only is None,
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


EXIT_INTERRUPTED = 130
"""What a shell reports for a program stopped by Ctrl-C (128 + SIGINT)."""

EXIT_BROKEN_PIPE = 141
"""What a shell reports for a program whose reader closed the pipe (128 + SIGPIPE), as for `head`'s writers."""

GC_THRESHOLD = (50_000, 20, 100)
"""The cycle collector's thresholds for a run from the command line: a run builds tens of thousands of small, long-
lived objects (rules, condition trees), and at the default 700 the collector walks them again and again."""


def tidy_help(command: object) -> None:
    """Help texts as flowing paragraphs: a docstring's line breaks would otherwise show mid-sentence in `--help`."""
    for target, attribute in [(command, "help"), (command, "short_help")] + [
            (param, "help") for param in getattr(command, "params", [])]:
        text = getattr(target, attribute, None)
        if isinstance(text, str) and text:
            setattr(target, attribute, "\n\n".join(" ".join(p.split()) for p in text.split("\n\n") if p.strip()))
    for sub in getattr(command, "commands", {}).values():
        tidy_help(sub)


def run_command(args: Sequence[str]) -> object:
    """Parse and run one command line, letting every exception reach `main` (typer's runner ends a closed pipe
    with exit 1, the gate-failed code, before any handler of ours could see it)."""
    import typer.main

    completing = bool(os.environ.get(COMPLETE_VAR))
    command = typer.main.get_command(build_app(None if completing else _command_of(args)))
    tidy_help(command)
    if completing:  # a completion script asks: answer on stdout and exit, as click's own entry point does
        command._main_shell_completion({}, "attndoctor", COMPLETE_VAR)  # type: ignore[attr-defined]
    with command.make_context("attndoctor", list(args)) as ctx:
        return command.invoke(ctx)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: every way a run ends becomes an exit code of the table, with at most one line on stderr."""
    if argv is None:
        import atexit
        import gc

        gc.set_threshold(*GC_THRESHOLD)
        # Everything alive at exit dies with the process: freezing it spares the final full collection, which
        # took about 25 ms of an `explain` that runs in 140.
        atexit.register(gc.freeze)
    streams = sys.stdout, sys.stderr
    try:
        from ..console.output import hold_closed_descriptors, reader_gone, silence_stdout, standard_streams

        hold_closed_descriptors()
        sys.stdout, sys.stderr = standard_streams(sys.stdout, sys.stderr)
        code = _run_to_code(list(sys.argv[1:] if argv is None else argv))
        if reader_gone():
            silence_stdout()
            code = EXIT_BROKEN_PIPE
    except KeyboardInterrupt:  # Ctrl-C while the command line itself loads, or while a run's end is reported
        _say_interrupted()
        code = EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader went away while a usage text was written
        silence_stdout()
        code = EXIT_BROKEN_PIPE
    if argv is not None:  # called in-process: the caller's streams are its own again
        sys.stdout, sys.stderr = streams
    sys.exit(code)


def _say_interrupted() -> None:
    try:
        if sys.stderr is not None:
            sys.stderr.write("attndoctor: interrupted\n")
    except (OSError, ValueError):
        pass


def _dash_text_hint(args: list[str], exc: Exception) -> str:
    """A pasted text that starts with '-' reads as an option; say how to pass it as text."""
    option = getattr(exc, "option_name", "") or ""
    if type(exc).__name__ == "NoSuchOption" and args[:1] == ["why"] and (" " in option or option == "-" or any(
            arg.startswith(option) and " " in arg for arg in args[1:])):
        return "; a text that starts with '-' goes after -- (attndoctor why -- '<text>') or on standard input"
    return ""


def _run_to_code(args: list[str]) -> int:
    import typer

    from ..errors import RuleError, UsageError
    from ..console.output import for_encoding, reason, shown, silence_stdout
    from .common import fail

    click_errors = _usage_error_types()
    try:
        code = run_command(args)
        sys.stdout.flush()
    except click_errors as exc:
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        if type(exc).__name__ == "NoArgsIsHelpError":  # a bare command: its help, already shown when rich drew it
            sys.stdout.write(message + "\n" if message.strip() else "")
        else:
            hint = _dash_text_hint(args, exc)
            fail(message.rstrip() + hint if hint else message)
        return getattr(exc, "exit_code", 2) or 2
    except typer.Exit as exc:
        return exc.exit_code
    except SystemExit as exc:  # rich ends a run this way when the reader of standard output went away
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    except (UsageError, RuleError) as exc:
        return fail(str(exc)).exit_code
    except KeyboardInterrupt:
        _say_interrupted()
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        # Only writing can fail this late: reading input and probing report their own errors.
        silence_stdout()
        return fail(f"standard output: cannot write ({reason(exc)})").exit_code
    except Exception as exc:  # noqa: BLE001 - the last resort: one line, never a traceback
        if os.environ.get("ATTNDOCTOR_TRACEBACK"):
            raise
        sys.stderr.write(for_encoding(
            f"attndoctor: internal error: {type(exc).__name__}: {shown(str(exc), newlines=False)} (please report it "
            f"with the command line; ATTNDOCTOR_TRACEBACK=1 shows where)\n", sys.stderr.encoding))
        return 2
    return code if isinstance(code, int) else 0
