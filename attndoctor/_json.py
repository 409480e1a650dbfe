"""JSON reading for every input file, so a file that is not JSON, or is nested too deeply, reads as one usage error."""

from __future__ import annotations

from typing import Any

from .errors import UsageError


def loads_json(text: str, where: str, accepted: str = "") -> Any:
    """Parse JSON text read from `where` (a file, or file:line); `accepted` says what the file should be."""
    import json

    hint = f"; {accepted}" if accepted else ""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        line = f":{exc.lineno}" if ":" not in where.rsplit("/", 1)[-1] else ""
        raise UsageError(f"{where}{line}: not valid JSON ({exc.msg}){hint}") from None
    except RecursionError:
        raise UsageError(f"{where}: JSON nested too deeply{hint}") from None
