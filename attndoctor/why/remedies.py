"""The way users keep a failing backend out of the call (attndoctor/data/remedies.toml), offered beside a fix."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Mapping, Sequence

from ..errors import RuleError

REMEDIES_FILE = Path(__file__).resolve().parent.parent / "data" / "remedies.toml"


@lru_cache(maxsize=1)
def load_remedies() -> Mapping[str, str]:
    """backend id or library (`library@backend` for a library's entry about some backends) -> the alternative's text;
    a malformed file raises RuleError naming it."""
    from .._toml import loads_toml

    try:
        doc = loads_toml(REMEDIES_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RuleError(f"cannot be read ({exc})", file=REMEDIES_FILE.name) from None
    out: dict[str, str] = {}
    for number, table in enumerate(doc.get("remedy", []), 1):
        backend, text, source = table.get("backend") or table.get("library"), table.get("text"), table.get("source")
        about = table.get("about", [])
        if not (isinstance(backend, str) and isinstance(text, str) and text and isinstance(source, list) and source
                and isinstance(about, list) and all(isinstance(b, str) for b in about)):
            raise RuleError(f"remedy {number} needs a backend or library, a text and a source (and 'about' a list "
                            "of backends)", file=REMEDIES_FILE.name)
        for key in [f"{backend}@{b}" for b in about] or [backend]:
            if key in out:
                raise RuleError(f"remedy {number}: a second entry for {key}", file=REMEDIES_FILE.name)
            out[key] = text
    return out


def with_alternative(fixes: Sequence[str], backends: Sequence[str], library: str = "") -> tuple[str, ...]:
    """The fixes, then the framework's own switch when the message is a framework's (its entry about the message's
    backend where it has one), else how to keep the first of `backends` that has a remedy out of the call."""
    remedies = load_remedies()
    extra = (next((remedies[f"{library}@{b}"] for b in backends if f"{library}@{b}" in remedies), None)
             or remedies.get(library) or next((remedies[b] for b in backends if b in remedies), None))
    return tuple(dict.fromkeys((*fixes, extra))) if extra else tuple(fixes)
