"""Opening a path a user named for output: never an input of the same run, never a block device, a socket or a
pipe that nobody reads; a regular file, a character device (/dev/null) or a read pipe (`--output >(jq .)`) is fine."""

from __future__ import annotations

import errno
import os
import stat
from typing import Callable

from ..errors import UsageError
from .files import input_at, special_kind


def _refusal(target: str, what: str, info: os.stat_result) -> UsageError | None:
    same = input_at(info)
    if same is not None:
        path, noun = same
        alias = "" if os.path.abspath(path) == os.path.abspath(target) else f" (it is {path})"
        return UsageError(f"{what}: {target} is the {noun} this run reads{alias}; writing the report there would "
                          "replace it; give another path")
    if stat.S_ISBLK(info.st_mode) or stat.S_ISSOCK(info.st_mode):
        return UsageError(f"{what}: {target} is {special_kind(info.st_mode)}; give a file path")
    return None


def check_output(target: str, what: str = "--output") -> None:
    """Refuse now what `output_opener` would refuse (before an hour of work); a path that is not there yet is fine."""
    try:
        info = os.stat(target)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UsageError(f"{what}: {target} is a symlink loop (a link that leads back to itself); give a file "
                             "path") from None
        return
    except ValueError:
        raise UsageError(f"{what}: {target!r} is not a path (it holds a NUL character)") from None
    problem = _refusal(target, what, info)
    if problem is not None:
        raise problem


def output_opener(what: str = "--output") -> Callable[[str, int], int]:
    """An `opener` for open(): the file is opened before it is emptied, so what it is can be checked first, and a
    pipe without a reader is an error instead of a wait."""

    def opener(path: str, flags: int) -> int:
        check_output(path, what)  # a block device or a socket is never opened
        truncate = flags & os.O_TRUNC
        try:
            fd = os.open(path, (flags & ~os.O_TRUNC) | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0), 0o666)
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                raise UsageError(f"{what}: {path} is a pipe that nobody reads, or a socket; give a file path") \
                    from None
            if exc.errno == errno.ELOOP:
                raise UsageError(f"{what}: {path} is a symlink loop (a link that leads back to itself); give a file "
                                 "path") from None
            raise
        try:
            info = os.fstat(fd)
            problem = _refusal(path, what, info)
            if problem is not None:
                raise problem
            os.set_blocking(fd, True)
            if truncate and stat.S_ISREG(info.st_mode):
                os.ftruncate(fd, 0)
        except BaseException:
            os.close(fd)
            raise
        return fd

    return opener
