"""A condition back as text: ranges read as `9.1 <= cudnn < 9.5`, package checks as `cuDNN is installed`."""

from typing import Any

from packaging.version import Version

from ..environment import PACKAGE_LABELS
from .nodes import Binary, BoolOp, Call, Compare, Const, InRange, ListLit, Node, Unary, Var
from .ranges import VersionRange

_PRECEDENCE = {"or": 1, "and": 2, "not": 3, "cmp": 4, "+": 5, "-": 5, "*": 6, "//": 6, "%": 6, "neg": 7}


def render(node: Node, parent: int = 0) -> str:
    """A condition back as text; ranges read as `9.1 <= cudnn < 9.5`."""
    text, prec = _render(node)
    return f"({text})" if prec < parent else text


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Version):
        return str(value)
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def render_range(name: str, spec: VersionRange) -> str:
    """`>=9.1,<9.5` on cudnn reads `9.1 <= cudnn < 9.5`; other sets read `cudnn >=9.1, !=9.3`."""
    label = "sm" if name == "sm" else name
    parts = sorted(spec, key=lambda s: (s.operator not in (">=", ">"), s.version))
    lower = [s for s in parts if s.operator in (">=", ">")]
    upper = [s for s in parts if s.operator in ("<", "<=")]
    if len(parts) == 2 and len(lower) == 1 and len(upper) == 1:
        lo, hi = lower[0], upper[0]
        lo_op = "<=" if lo.operator == ">=" else "<"
        return f"{lo.version} {lo_op} {label} {hi.operator} {hi.version}"
    if len(parts) == 1:
        s = parts[0]
        return f"{label} {s.operator} {s.version}"
    return f"{label} " + ", ".join(f"{s.operator}{s.version}" for s in parts)


def _render(node: Node) -> tuple[str, int]:
    if isinstance(node, Const):
        return _literal(node.value), 9
    if isinstance(node, Var):
        return node.name, 9
    if isinstance(node, InRange):
        return render_range(node.name, node.spec), _PRECEDENCE["cmp"]
    if isinstance(node, ListLit):
        return "[" + ", ".join(_literal(i.value) for i in node.items) + "]", 9  # type: ignore[attr-defined]
    if isinstance(node, Call):
        if node.func == "installed":
            package = node.args[0].value  # type: ignore[attr-defined]
            return f"{PACKAGE_LABELS.get(package, package)} is installed", _PRECEDENCE["cmp"]
        if node.func in ("env", "api"):
            return str(node.args[0].value), 9  # type: ignore[attr-defined]
        return f"{node.func}(" + ", ".join(render(a) for a in node.args) + ")", 9
    if isinstance(node, Unary):
        if node.op == "not" and isinstance(node.operand, Call) and node.operand.func == "installed":
            package = node.operand.args[0].value  # type: ignore[attr-defined]
            return f"{PACKAGE_LABELS.get(package, package)} is not installed", _PRECEDENCE["cmp"]
        if node.op == "not":
            return "not " + render(node.operand, _PRECEDENCE["not"]), _PRECEDENCE["not"]
        return "-" + render(node.operand, _PRECEDENCE["neg"]), _PRECEDENCE["neg"]
    if isinstance(node, Binary):
        prec = _PRECEDENCE[node.op]
        return f"{render(node.left, prec)} {node.op} {render(node.right, prec + 1)}", prec
    if isinstance(node, Compare):
        prec = _PRECEDENCE["cmp"]
        return f"{render(node.left, prec + 1)} {node.op} {render(node.right, prec + 1)}", prec
    if isinstance(node, BoolOp):
        prec = _PRECEDENCE[node.op]
        return f" {node.op} ".join(render(i, prec + 1) for i in node.items), prec
    return "?", 9
