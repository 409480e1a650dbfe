"""TOML reading on every supported Python (tomllib from 3.11, tomli before), with a cache for speed."""

from __future__ import annotations

import marshal
import os
import sys
import zlib
from pathlib import Path
from typing import Any


def loads_toml(text: str) -> dict[str, Any]:
    """Parse TOML text; raises ValueError with the parser's position on bad input."""
    if sys.version_info >= (3, 11):
        import tomllib as _toml
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as _toml
    try:
        return _toml.loads(text)
    except _toml.TOMLDecodeError as exc:
        raise ValueError(str(exc)) from None


def kind_of(value: Any) -> str:
    """What a TOML value is, in the words of a message: 'a number (5)', 'text ('llama')'."""
    kinds = {bool: "true/false", int: "a number", float: "a number", str: "text", list: "a list", dict: "a table"}
    return f"{kinds.get(type(value), 'a date or time')} ({value!r:.40})"


def _cache_dir() -> Path | None:
    from .inputs.cache import cache_root

    root = cache_root()
    return None if root is None else root / "toml"


CACHE_KEEP = 8
"""Cache files of one kind kept beside a new one (other rule folders, other versions); older ones are removed."""


def prune_cache(folder: Path, pattern: str, keep: int = CACHE_KEEP) -> None:
    """Remove all but the `keep` newest files matching `pattern`: a cache entry of an edited file is never read
    again."""
    try:
        files = sorted(folder.glob(pattern), key=lambda p: p.stat().st_mtime, reverse=True)
        for stale in files[keep:]:
            stale.unlink()
    except OSError:
        pass


def load_toml_file(path: Path, what: str = "TOML file") -> tuple[str, dict[str, Any]]:
    """A TOML file's text and data; the parsed data is reused from the cache while the file is unchanged (marshal:
    built in, so nothing to import, and faster to read than JSON)."""
    from .inputs.cache import read_cache
    from .inputs.files import describe, read_text

    text = read_text(path, describe(path, what))
    folder = _cache_dir()
    if folder is None:
        return text, loads_toml(text)
    raw = text.encode("utf-8")
    cached = folder / f"{zlib.crc32(raw):08x}-{len(raw)}-py{sys.version_info[0]}{sys.version_info[1]}.marshal"
    try:
        data = marshal.loads(read_cache(cached) or b"")
        if isinstance(data, dict):
            return text, data
    except (ValueError, EOFError, TypeError):
        pass
    data = loads_toml(text)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(marshal.dumps(data))
        os.replace(tmp, cached)
        prune_cache(folder, "*.marshal", keep=4 * CACHE_KEEP)
    except (OSError, TypeError, ValueError):
        pass
    return text, data
