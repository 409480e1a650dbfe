"""Partial evaluation: the facts a condition reads, and what is left of it once the known facts are filled in."""

from .compiler import Facts, compile_node
from .intervals import merge_ranges
from .nodes import UNKNOWN, Binary, BoolOp, Call, Compare, Const, InRange, ListLit, Node, Unary, Var, children


def free_names(node: Node) -> set[str]:
    """The facts a node reads: variable names, and env:/api: keys for those functions."""
    if isinstance(node, Var):
        return {node.name}
    if isinstance(node, InRange):
        return {node.name}
    if isinstance(node, Call):
        if node.func in ("env", "api"):
            return {f"{node.func}:{node.args[0].value}"}  # type: ignore[attr-defined]
        if node.func == "installed":
            return {node.args[0].value}  # type: ignore[attr-defined]
    out: set[str] = set()
    for child in children(node):
        out |= free_names(child)
    return out


def residual(node: Node, facts: Facts) -> Node:
    """What is left of a condition once the known facts are filled in: a Const when decided."""
    if isinstance(node, (Const, ListLit)):
        return node
    if isinstance(node, BoolOp):
        kept: list[Node] = []
        for item in node.items:
            part = residual(item, facts)
            if isinstance(part, Const):
                if node.op == "and" and part.value is False:
                    return Const(node.col, False)
                if node.op == "or" and part.value is True:
                    return Const(node.col, True)
                continue
            if isinstance(part, BoolOp) and part.op == node.op:
                kept.extend(part.items)
            else:
                kept.append(part)
        if len(kept) > 1:
            kept = merge_ranges(node.op, kept)
            if len(kept) == 1 and isinstance(kept[0], Const):
                return kept[0]
        if not kept:
            return Const(node.col, node.op == "and")
        return kept[0] if len(kept) == 1 else BoolOp(node.col, node.op, tuple(kept))
    if isinstance(node, Unary) and node.op == "not":
        inner = residual(node.operand, facts)
        if isinstance(inner, Const):
            return Const(node.col, not inner.value)
        if isinstance(inner, Unary) and inner.op == "not":
            return inner.operand
        return Unary(node.col, "not", inner)
    value = compile_node(node)(facts)
    if value is not UNKNOWN:
        return Const(node.col, value)
    if isinstance(node, Compare):
        left = residual(node.left, facts)
        right = residual(node.right, facts) if not isinstance(node.right, ListLit) else node.right
        return Compare(node.col, node.op, left, right)
    if isinstance(node, Binary):
        return Binary(node.col, node.op, residual(node.left, facts), residual(node.right, facts))
    if isinstance(node, Call) and node.func in ("max", "min"):
        return Call(node.col, node.func, tuple(residual(a, facts) for a in node.args))
    return node
