"""Where attndoctor keeps its caches, and reading them back: a cache is a convenience, so anything odd means none."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .files import MAX_BYTES


def cache_root() -> Path | None:
    """`$XDG_CACHE_HOME/attndoctor`, else `$HOME/.cache/attndoctor`, only under a folder that exists (an absolute
    path, as the XDG spec asks; a HOME of / is none); None when caching is off or there is no such folder: then
    nothing is cached."""
    if os.environ.get("ATTNDOCTOR_NO_CACHE"):
        return None
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg) and os.path.isdir(xdg):
        return Path(xdg) / "attndoctor"
    home = os.environ.get("HOME", "")
    if os.path.isabs(home) and os.path.isdir(home) and home.strip("/"):
        return Path(home) / ".cache" / "attndoctor"
    return None


def read_cache(path: Path) -> bytes | None:
    """A cache file's bytes, or None when it is missing, not a regular file, too large or unreadable."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BYTES:
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None
            return handle.read(MAX_BYTES + 1)
    except (OSError, ValueError):
        return None
