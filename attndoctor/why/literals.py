"""The literal texts a regular expression cannot match without: a cheap test that skips the lines of a long log
no catalogue pattern can match, so that each pattern runs only on the few lines that hold its words."""

from __future__ import annotations

import re
from typing import Any

Literal = tuple[str, bool]
"""A text and whether it is compared with case folded (lower-cased text in lower-cased lines)."""
EXPAND = 8
"""A character class of at most this many characters is spelled out ([qkv] -> q, k, v)."""
SPELLED = 64
"""At most this many spellings of one run of literals."""


def required_literals(pattern: str) -> tuple[Literal, ...] | None:
    """Texts at least one of which every match of `pattern` contains, or None when none can be derived (the
    pattern is then tried on every line). A text under (?i) is folded to lower case."""
    try:
        from re import _parser as parser  # type: ignore[attr-defined]  # Python 3.11+
    except ImportError:  # pragma: no cover - Python 3.10
        import sre_parse as parser  # type: ignore[no-redef]
    try:
        tree = parser.parse(pattern)
    except Exception:  # noqa: BLE001 - the loader reports a bad pattern itself
        return None
    found = _sequence(list(tree), parser, bool(tree.state.flags & re.IGNORECASE))
    return tuple(sorted(found)) if found else None


def _sequence(items: list[Any], c: Any, fold: bool) -> set[Literal] | None:
    """The best requirement of a sequence: its longest run of literals, or a required group's alternatives."""
    options: list[set[Literal]] = []
    run: set[str] = set()

    def close() -> None:
        if run and all(run):
            options.append({(s.lower() if fold else s, fold) for s in run})
        run.clear()

    def extend(chars: list[str]) -> None:
        if len(run or {""}) * len(chars) > SPELLED:
            close()
            return
        spelled = {s + ch for s in (run or {""}) for ch in chars}
        run.clear()
        run.update(spelled)

    for op, arg in items:
        if op is c.LITERAL:
            extend([chr(arg)])
            continue
        if op is c.IN and len(arg) <= EXPAND and all(o is c.LITERAL for o, _ in arg):
            extend([chr(a) for _, a in arg])
            continue
        close()
        if op is c.SUBPATTERN:
            add, drop = arg[1], arg[2]
            inner_fold = (fold or bool(add & re.IGNORECASE)) and not drop & re.IGNORECASE
            inner = _sequence(list(arg[-1]), c, inner_fold)
            if inner:
                options.append(inner)
        elif op is c.BRANCH:
            branches = [_sequence(list(b), c, fold) for b in arg[1]]
            if all(branches):
                options.append(set().union(*branches))  # type: ignore[arg-type]
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT) and arg[0] >= 1:
            inner = _sequence(list(arg[2]), c, fold)
            if inner:
                options.append(inner)
    close()
    if not options:
        return None
    return max(options, key=lambda s: (min(len(x) for x, _ in s), -len(s)))
