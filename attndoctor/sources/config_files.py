"""Configs from a file the user names (.json, .jsonl, .toml), each with its file and line, errors naming both."""

from pathlib import Path
from typing import Any, Iterator

from ..config import AttentionConfig, make_config
from ..errors import UsageError


def load_config_file(path: str | Path) -> list[AttentionConfig]:
    """Configs from .json (object or list), .jsonl, or .toml with [[config]] tables, all read and checked now."""
    return list(iter_config_file(path))


CONFIG_FILE_TYPES = "expected a .json, .jsonl or .toml config file"


def iter_config_file(path: str | Path) -> Iterator[AttentionConfig]:
    """Configs one at a time, each with its file and line in `source`; a .jsonl file is read a line at a time, so
    memory does not grow with its length. Errors name the file and line."""
    from ..inputs import describe, locate, read_text

    name = str(path)
    desc = describe(path, "config file", CONFIG_FILE_TYPES)
    locate(path, desc)
    suffix = Path(path).suffix.lower()
    if suffix not in (".json", ".jsonl", ".toml"):
        raise UsageError(f"{name}: unknown config file type {suffix or '(none)'}; accepted: .json, .jsonl, .toml")
    if suffix == ".jsonl":
        yield from _jsonl_configs(path, desc)
        return
    text = read_text(path, desc)
    if not text.strip():
        raise UsageError(f"{name}: empty config file; expected at least one config")
    entries = _toml_entries(text, name) if suffix == ".toml" else _json_entries(text, name)
    if not entries:
        raise UsageError(f"{name}: no configs found")
    for i, (line, entry) in enumerate(entries, 1):
        where = f"{name}:{line}: config {i}" if line else f"{name} config {i}"
        yield make_config(entry, where=where, typed=True)._replace(source=(name, line))


def _jsonl_configs(path: str | Path, desc: Any) -> Iterator[AttentionConfig]:
    from .._json import loads_json
    from ..inputs import read_lines

    name = str(path)
    found = False
    for number, line in read_lines(path, desc):
        if not line.strip():
            continue
        entry = loads_json(line, f"{name}:{number}", "expected one config object")
        found = True
        yield make_config(entry, where=f"{name}:{number}", typed=True)._replace(source=(name, number))
    if not found:
        raise UsageError(f"{name}: empty config file; expected at least one config")


def _json_entries(text: str, name: str) -> list[tuple[int, Any]]:
    """The configs of a .json file with the line each starts on (0 where that is not cheap to tell)."""
    from .._json import loads_json

    doc = loads_json(text, name, "expected a config object or a list of them")
    start = len(text) - len(text.lstrip())
    if not isinstance(doc, list):
        return [(text.count("\n", 0, start) + 1, doc)]
    return list(zip(_json_item_lines(text, start, len(doc)), doc))


def _json_item_lines(text: str, start: int, count: int) -> list[int]:
    """The line of each item of the top-level JSON list at `start`, found by the C scanner item by item."""
    import json
    from json.decoder import WHITESPACE

    decoder = json.JSONDecoder()
    lines, line, pos = [], 1 + text.count("\n", 0, start), start
    at = WHITESPACE.match(text, start + 1).end()
    try:
        while len(lines) < count:
            line += text.count("\n", pos, at)
            pos = at
            lines.append(line)
            _, end = decoder.raw_decode(text, at)
            at = WHITESPACE.match(text, end).end()
            at = WHITESPACE.match(text, at + 1).end() if text.startswith(",", at) else at
    except (ValueError, RecursionError):
        return [0] * count
    return lines


def _toml_entries(text: str, name: str) -> list[tuple[int, Any]]:
    """The [[config]] tables of a .toml file with the line of each table's header (0 when not written as one)."""
    import re

    from .._toml import kind_of, loads_toml

    try:
        doc = loads_toml(text)
    except ValueError as exc:
        raise UsageError(f"{name}: not valid TOML ({exc})") from None
    entries = doc.get("config", [])
    if isinstance(entries, dict):
        entries = [entries]
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise UsageError(f"{name}: config: expected [[config]] tables of config fields, got {kind_of(entries)}")
    if not entries:
        raise UsageError(f"{name}: no [[config]] tables found")
    headers = [text.count("\n", 0, m.start()) + 1
               for m in re.finditer(r"^[ \t]*\[\[[ \t]*config[ \t]*\]\]", text, re.MULTILINE)]
    return list(zip(headers if len(headers) == len(entries) else [0] * len(entries), entries))
