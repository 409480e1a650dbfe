"""JSON reading for every input file, so a file that is not JSON, or is nested too deeply, reads as one usage error."""

from __future__ import annotations

from typing import Any

from .errors import UsageError


def loads_json(text: str, where: str, accepted: str = "") -> Any:
    """Parse JSON text read from `where` (a file, or file:line); `accepted` says what the file should be."""
    import json

    hint = f"; {accepted}" if accepted else ""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except DuplicateKey as exc:
        raise UsageError(f"{where}: duplicate key {exc.key!r} in one JSON object; give each key once{hint}") from None
    except json.JSONDecodeError as exc:
        line = f":{exc.lineno}" if ":" not in where.rsplit("/", 1)[-1] else ""
        raise UsageError(f"{where}{line}: not valid JSON ({exc.msg}){hint}") from None
    except RecursionError:
        raise UsageError(f"{where}: JSON nested too deeply{hint}") from None


class DuplicateKey(ValueError):
    """A JSON object that gives one key twice: json.loads would silently keep the last."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) < len(pairs):
        seen: set[str] = set()
        raise DuplicateKey(next(k for k, _ in pairs if k in seen or seen.add(k)))  # type: ignore[func-returns-value]
    return out
