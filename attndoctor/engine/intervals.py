"""Interval algebra on one version (or `sm`) fact: comparisons read as interval sets, merged within an and/or, and
written back as the plainest condition."""

from typing import Any

from packaging.version import Version

from .names import VARIABLES, VER
from .nodes import BoolOp, Call, Compare, Const, InRange, Node, Var
from .ranges import VersionRange

Interval = tuple[Any, bool, Any, bool]
"""(low, low included, high, high included); None is unbounded. A package that is not installed lies in none."""
_FULL: tuple[Interval, ...] = ((None, False, None, False),)


def _range_atom(node: Node) -> tuple[str, tuple[Interval, ...]] | None:
    """The fact and the interval set a comparison of a version (or `sm`) with a constant stands for, if it is one."""
    if isinstance(node, Call) and node.func == "installed":
        return node.args[0].value, _FULL  # type: ignore[attr-defined]
    if isinstance(node, InRange):
        if node.name == "sm":
            return None
        out: tuple[Interval, ...] = _FULL
        for clause in node.spec:
            if clause.version.endswith(".*") or clause.operator not in _FLIP:
                return None
            out = _intersect(out, _intervals(clause.operator, Version(clause.version)))
        return node.name, out
    if not isinstance(node, Compare) or node.op not in _FLIP:
        return None
    left, right, op = node.left, node.right, node.op
    if isinstance(left, Const) and isinstance(right, Var):
        left, right, op = right, left, _FLIP[op]
    if not (isinstance(left, Var) and isinstance(right, Const)):
        return None
    kind = VARIABLES.get(left.name, ("",))[0]
    value = right.value
    if not ((kind == VER and isinstance(value, Version)) or
            (left.name == "sm" and isinstance(value, int) and not isinstance(value, bool))):
        return None
    return left.name, _intervals(op, value)


_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def _intervals(op: str, v: Any) -> tuple[Interval, ...]:
    return {"<": ((None, False, v, False),), "<=": ((None, False, v, True),), ">": ((v, False, None, False),),
            ">=": ((v, True, None, False),), "==": ((v, True, v, True),),
            "!=": ((None, False, v, False), (v, False, None, False))}[op]


def _empty(iv: Interval) -> bool:
    lo, lo_in, hi, hi_in = iv
    return lo is not None and hi is not None and (lo > hi or (lo == hi and not (lo_in and hi_in)))


def _intersect(a: tuple[Interval, ...], b: tuple[Interval, ...]) -> tuple[Interval, ...]:
    out = []
    for lo1, li1, hi1, hi_1 in a:
        for lo2, li2, hi2, hi_2 in b:
            if lo1 is None or (lo2 is not None and (lo2 > lo1 or (lo2 == lo1 and not li2))):
                lo, li = lo2, li2
            else:
                lo, li = lo1, li1
            if hi1 is None or (hi2 is not None and (hi2 < hi1 or (hi2 == hi1 and not hi_2))):
                hi, hi_in = hi2, hi_2
            else:
                hi, hi_in = hi1, hi_1
            if not _empty((lo, li, hi, hi_in)):
                out.append((lo, li, hi, hi_in))
    return _union(tuple(out), ())


def _union(a: tuple[Interval, ...], b: tuple[Interval, ...]) -> tuple[Interval, ...]:
    items = sorted(a + b, key=lambda iv: (iv[0] is not None, iv[0] if iv[0] is not None else 0, not iv[1]))
    out: list[Interval] = []
    for iv in items:
        if out:
            lo, li, hi, hi_in = out[-1]
            touches = hi is None or iv[0] is None or iv[0] < hi or (iv[0] == hi and (hi_in or iv[1]))
            if touches:
                if hi is not None and (iv[2] is None or iv[2] > hi or (iv[2] == hi and iv[3])):
                    hi, hi_in = iv[2], iv[3]
                out[-1] = (lo, li, hi, hi_in)
                continue
        out.append(iv)
    return tuple(out)


def _range_node(col: int, name: str, intervals: tuple[Interval, ...]) -> Node:
    """An interval set back as the plainest condition: `9.1 <= cudnn < 9.5`, `cudnn < 9.10`, installed(...)."""
    if not intervals:
        return Const(col, False)
    parts: list[Node] = []
    for lo, li, hi, hi_in in intervals:
        if lo is None and hi is None:
            parts.append(Const(col, True) if name == "sm" else Call(col, "installed", (Const(col, name),)))
        elif lo is not None and lo == hi:
            parts.append(Compare(col, "==", Var(col, name), Const(col, lo)))
        elif lo is None or hi is None:
            op, v = ("<=" if hi_in else "<", hi) if lo is None else (">=" if li else ">", lo)
            parts.append(Compare(col, op, Var(col, name), Const(col, v)))
        elif name != "sm" and li and not hi_in:
            parts.append(InRange(col, name, VersionRange(f">={lo},<{hi}")))
        else:
            parts.append(BoolOp(col, "and", (Compare(col, ">=" if li else ">", Var(col, name), Const(col, lo)),
                                             Compare(col, "<=" if hi_in else "<", Var(col, name), Const(col, hi)))))
    return parts[0] if len(parts) == 1 else BoolOp(col, "or", tuple(parts))


def merge_ranges(op: str, items: list[Node]) -> list[Node]:
    """Atoms of one and/or that constrain the same version fact merged into one range: `cudnn < 9.0 or cudnn < 9.10`
    reads `cudnn < 9.10`; a range covering every release reads `installed(...)`; exact in three values, since a
    package that is not installed fails every comparison."""
    atoms = [_range_atom(item) for item in items]
    names = [a[0] for a in atoms if a is not None]
    if len(names) == len(set(names)):
        return items
    merged: dict[str, tuple[Interval, ...]] = {}
    for atom in atoms:
        if atom is not None:
            name, intervals = atom
            if name not in merged:
                merged[name] = intervals
            else:
                merged[name] = (_intersect if op == "and" else _union)(merged[name], intervals)
    out: list[Node] = []
    for item, atom in zip(items, atoms):
        if atom is None:
            out.append(item)
        elif atom[0] in merged:
            node = _range_node(item.col, atom[0], merged.pop(atom[0]))
            if isinstance(node, Const):
                if node.value is (op == "or"):
                    return [Const(item.col, node.value)]
                continue
            out.append(node)
    return out
