"""Reading a file or folder a user named: what it is is checked before it is opened, and its size before it is read.

A pipe, a device or a socket is refused by name and never opened (a FIFO would block, /dev/zero would never end); a
symlink is followed to what it names, and a loop is called a loop; "no such file" is said only when there is none.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import IO, Iterator, NamedTuple

from ..errors import UsageError
from ..words import a

MAX_BYTES = 64 * 1024 * 1024
"""The most any one input is read into memory (a file, standard input, one line of a streamed file)."""

SPECIAL = ((stat.S_ISFIFO, "a pipe (FIFO)"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
           (stat.S_ISSOCK, "a socket"))

FILE, FOLDER, EITHER = "file", "folder", "file or folder"
"""What an option takes: a regular file, a folder, or either (a model's config.json or the folder holding it)."""


class Input(NamedTuple):
    """What to call an input in messages: the label it is named by, the noun of what it should be, what is
    accepted in its place."""

    label: str
    what: str
    accepted: str = ""

    def error(self, problem: str) -> UsageError:
        hint = f"; {self.accepted}" if self.accepted else ""
        return UsageError(f"{self.label}: {problem}{hint}")


def describe(path: str | os.PathLike[str], what: str, accepted: str = "", label: str | None = None) -> Input:
    """An Input named by its path (or by `label`, e.g. '--log x.txt')."""
    return Input(label if label is not None else (str(path) or "''"), what, accepted)


def special_kind(mode: int) -> str | None:
    """'a pipe (FIFO)', 'a character device', ... for a file that is neither a regular file nor a folder."""
    return next((name for test, name in SPECIAL if test(mode)), None)


def _stat_problem(path: str, exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "is a symlink loop (a link that leads back to itself)"
    if exc.errno == errno.ENOENT and os.path.islink(path):
        return f"is a symlink to {os.readlink(path)}, which does not exist"
    if exc.errno == errno.ENOTDIR:
        return "not found: a part of the path before the last is a file, not a folder"
    if exc.errno == errno.ENAMETOOLONG:
        return "name too long"
    return f"cannot read ({(exc.strerror or str(exc)).lower()})"


def locate(path: str | os.PathLike[str], desc: Input, kind: str = FILE) -> os.stat_result:
    """The path's status once it is known to be of `kind`; everything else is one usage error, and nothing is
    opened."""
    name = os.fspath(path)
    if not name.strip():
        raise desc.error(f"empty path; expected {a(desc.what)}")
    try:
        info = os.stat(name)
    except ValueError:
        raise desc.error("not a path (it holds a NUL character)") from None
    except FileNotFoundError as exc:
        if os.path.islink(name):
            raise desc.error(_stat_problem(name, exc)) from None
        raise desc.error(f"no such {desc.what}") from None
    except OSError as exc:
        raise desc.error(_stat_problem(name, exc)) from None
    mode = info.st_mode
    if stat.S_ISDIR(mode):
        if kind == FILE:
            raise desc.error(f"is a folder, not {a(desc.what)}")
        return info
    if stat.S_ISREG(mode):
        if kind == FOLDER:
            raise desc.error(f"is a file, not {a(desc.what)}")
        return info
    raise desc.error(f"is {special_kind(mode) or 'not a regular file'}, not {a(desc.what)}")


def _too_large(desc: Input, size: int) -> UsageError:
    return desc.error(f"larger than {MAX_BYTES >> 20} MiB ({size / (1 << 20):.0f} MiB)")


_READ: dict[tuple[int, int], tuple[str, str]] = {}
"""(device, inode) of every input read by this process → its path and what it was, so an output never replaces it."""

READ_KEPT = 4096


def _remember(path: str, info: os.stat_result, what: str) -> None:
    if len(_READ) >= READ_KEPT:
        del _READ[next(iter(_READ))]
    _READ[(info.st_dev, info.st_ino)] = (path, what)


def input_at(info: os.stat_result) -> tuple[str, str] | None:
    """The input (path, what) this process read that is the same file as `info`, if it still is."""
    found = _READ.get((info.st_dev, info.st_ino))
    if found is None:
        return None
    try:
        now = os.stat(found[0])
    except OSError:
        return None  # the file read then is gone; its inode may be reused by another
    return found if (now.st_dev, now.st_ino) == (info.st_dev, info.st_ino) else None


def open_input(path: str | os.PathLike[str], desc: Input, *, capped: bool = True) -> IO[bytes]:
    """A regular file opened for reading in binary, after `locate`; with `capped`, one over MAX_BYTES is refused
    before a byte is read."""
    name = os.fspath(path)
    info = locate(name, desc)
    if capped and info.st_size > MAX_BYTES:
        raise _too_large(desc, info.st_size)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise desc.error(_stat_problem(name, exc)) from None
    opened = os.fstat(fd)
    if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino) or not stat.S_ISREG(opened.st_mode):
        os.close(fd)
        raise desc.error("changed while it was being opened")
    os.set_blocking(fd, True)
    _remember(name, opened, desc.what)
    return os.fdopen(fd, "rb")


def read_bytes(path: str | os.PathLike[str], desc: Input) -> bytes:
    """A regular file's bytes, at most MAX_BYTES (a file that grows past the cap while read is refused too)."""
    with open_input(path, desc) as handle:
        try:
            data = handle.read(MAX_BYTES + 1)
        except OSError as exc:
            raise desc.error(_stat_problem(os.fspath(path), exc)) from None
    if len(data) > MAX_BYTES:
        raise _too_large(desc, len(data))
    return data


def decode(data: bytes, desc: Input, where: str | None = None) -> str:
    """UTF-8 text (a byte-order mark dropped); binary data is one usage error."""
    label = where or desc.label
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise Input(label, desc.what, desc.accepted).error("not a text file (not UTF-8)") from None
    if "\x00" in text:
        raise Input(label, desc.what, desc.accepted).error("not a text file (it holds NUL bytes)")
    return text


def read_text(path: str | os.PathLike[str], desc: Input) -> str:
    """A regular file's UTF-8 text, capped as read_bytes."""
    return decode(read_bytes(path, desc), desc)


def read_lines(path: str | os.PathLike[str], desc: Input) -> Iterator[tuple[int, str]]:
    """(line number, text) of a file read a line at a time, so its length costs no memory; the cap holds per line."""
    with open_input(path, desc, capped=False) as handle:
        number = 0
        while True:
            try:
                raw = handle.readline(MAX_BYTES + 1)
            except OSError as exc:
                raise desc.error(_stat_problem(os.fspath(path), exc)) from None
            if not raw:
                return
            number += 1
            if len(raw) > MAX_BYTES:
                raise Input(f"{desc.label}:{number}", desc.what, desc.accepted).error(
                    f"line longer than {MAX_BYTES >> 20} MiB")
            yield number, decode(raw, desc, f"{desc.label}:{number}")


def read_stream(stream: IO[bytes] | IO[str], desc: Input) -> bytes | str:
    """At most MAX_BYTES from an open stream (standard input): more is one usage error, never read whole."""
    data = stream.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise desc.error(f"larger than {MAX_BYTES >> 20} MiB")
    return data

