"""Where reports go: a file or standard output, in what the terminal can show; an unusable target is bad input.

Every command writes through `output_stream`, so a missing folder, a folder, a read-only path or a full disk ends as
exit 2 with one line, a closed pipe (`| head`) is left to end the run quietly, and a terminal whose encoding is not UTF-8 gets the same
report with ASCII stand-ins for its symbols.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import sys
from typing import IO, Any, Iterator

from ..errors import UsageError
from ..inputs import check_output, output_opener

ASCII = str.maketrans({
    "✓": "+", "✗": "x", "⚠": "!", "–": "-", "—": "-", "─": "-", "│": "|", "…": "...", "·": "-", "≥": ">=",
    "≤": "<=", "≠": "!=", "→": "->", "←": "<-", "×": "x", "±": "+/-", "µ": "u", "•": "*", "“": '"', "”": '"',
    "‘": "'", "’": "'", "▸": ">", "█": "#", "░": ".",
})
"""Stand-ins for the symbols reports use, for a terminal that cannot show them."""


_CONTROLS = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""What a terminal acts on rather than shows: C0 and C1 controls (ESC starts every escape sequence; C1 CSI and OSC
start them on some terminals), DEL, and the bidirectional marks that reorder a line as it is shown."""

_NAMED = {"\t": "\\t", "\r": "\\r", "\x1b": "\\x1b"}


def _escaped(match: "re.Match[str]") -> str:
    char = match.group()
    return _NAMED.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")


def shown(text: str, *, newlines: bool = True) -> str:
    """`text` from a user or a library, safe to put on a terminal: controls and escape sequences written escaped."""
    if _CONTROLS.search(text) is not None:
        text = _CONTROLS.sub(_escaped, text)
    return text if newlines else text.replace("\n", "\\n")


def for_encoding(text: str, encoding: str | None) -> str:
    """`text` as it can be written in `encoding`: symbols replaced by ASCII stand-ins, anything else by '?'."""
    encoding = encoding or "utf-8"
    try:
        text.encode(encoding)
        return text
    except UnicodeEncodeError:
        return text.translate(ASCII).encode(encoding, "replace").decode(encoding)
    except LookupError:
        return text


class _Transliterated:
    """A text stream whose encoding cannot show every symbol: what is written is made to fit it."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(for_encoding(text, self._stream.encoding))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def showable(stream: IO[str]) -> IO[str]:
    """The stream itself when it can show the report's symbols, else a transliterating wrapper around it."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        "✓✗⚠─…·≥".encode(encoding)
        return stream
    except (UnicodeEncodeError, LookupError):
        return _Transliterated(stream)  # type: ignore[return-value]


class _Closed:
    """A standard stream that was closed before the run started: writing to it fails as a closed descriptor does."""

    encoding = "utf-8"
    closed = False

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))


class _Quiet:
    """Standard error that never fails the run: a closed or full stderr loses messages, never the exit code."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.lost = False

    def write(self, text: str) -> int:
        if not self.lost:
            try:
                self._stream.write(text)
            except (OSError, ValueError):
                self.lost = True
        return len(text)

    def flush(self) -> None:
        if not self.lost:
            try:
                self._stream.flush()
            except (OSError, ValueError):
                self.lost = True

    def isatty(self) -> bool:
        try:
            return not self.lost and bool(self._stream.isatty())
        except (OSError, ValueError):
            return False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _Watched:
    """Standard output that remembers a reader that went away, whichever library meets the error first (rich ends
    the run with exit 1 on its own; the run must still end as a closed pipe does)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.broken = False

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self.broken = True
            raise

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self.broken = True
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def reader_gone() -> bool:
    """Whether standard output's reader closed the pipe during this run."""
    return bool(getattr(sys.stdout, "broken", False))


def hold_closed_descriptors() -> None:
    """Point a closed stdin, stdout or stderr at the null device, so no file the run opens takes its number."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            with contextlib.suppress(OSError):
                held = os.open(os.devnull, os.O_RDWR)
                if held != fd:
                    os.dup2(held, fd)
                    os.close(held)


def standard_streams(stdout: Any, stderr: Any) -> tuple[IO[str], IO[str]]:
    """Streams a run can always write to: a closed stdout fails like one (exit 2), a closed stderr drops messages."""
    out = _Watched(showable(stdout)) if stdout is not None else _Closed()
    err = _Quiet(showable(stderr) if stderr is not None else _Closed())
    return out, err  # type: ignore[return-value]


def reason(exc: OSError) -> str:
    """Why a write failed, in the words of the system ('no space left on device')."""
    return (exc.strerror or str(exc)).lower()


def _cannot(name: str, target: str, exc: OSError) -> UsageError:
    if isinstance(exc, IsADirectoryError):
        return UsageError(f"{name}: {target} is a folder; give a file path")
    if isinstance(exc, FileNotFoundError):
        folder = os.path.dirname(target) or "."
        if os.path.isdir(folder):
            return UsageError(f"{name}: cannot create {target} (the folder {folder} takes no new files); give a path "
                              "in an ordinary writable folder")
        return UsageError(f"{name}: no such folder {folder}; give a path in an existing folder")
    if isinstance(exc, PermissionError):
        return UsageError(f"{name}: cannot write {target} (permission denied); give a writable path")
    return UsageError(f"{name}: cannot write {target} ({reason(exc)})")


def check_writable(target: str, what: str = "--output") -> None:
    """Fail now, in output_stream's words, where writing `target` later would fail (before an hour of work)."""
    check_output(target, what)
    folder = os.path.dirname(target) or "."
    if os.path.isdir(target):
        raise _cannot(what, target, IsADirectoryError())
    if not os.path.isdir(folder):
        raise _cannot(what, target, FileNotFoundError())
    if not os.access(folder, os.W_OK) or (os.path.exists(target) and not os.access(target, os.W_OK)):
        raise _cannot(what, target, PermissionError())


def silence_stdout() -> None:
    """Point standard output at the null device, so the interpreter's last flush cannot fail again at exit."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


@contextlib.contextmanager
def output_stream(target: str | None = None, *, what: str = "--output", append: bool = False) -> Iterator[IO[str]]:
    """A stream to `target` (standard output when None) that turns every failure to write into one usage error."""
    name = what if target else "standard output"
    if target:
        try:
            stream: IO[str] = open(target, "a" if append else "w", encoding="utf-8", opener=output_opener(name))
        except OSError as exc:
            raise _cannot(name, target, exc) from None
    else:
        stream = showable(sys.stdout)
    try:
        try:
            yield stream
            stream.flush()
        finally:
            if target:
                stream.close()
    except BrokenPipeError:
        if target:
            raise _cannot(name, target, BrokenPipeError()) from None
        silence_stdout()
        raise
    except OSError as exc:
        if not target:
            silence_stdout()
            raise UsageError(f"standard output: cannot write ({reason(exc)})") from None
        raise _cannot(name, target, exc) from None
