"""Type checking: each name and function known, operands of the right types; text literals compared with versions
become Version constants. `parse` is the language's entry point: text in, checked tree out."""

from typing import Callable

from packaging.version import Version

from ..environment import PACKAGES, parse_version
from ..errors import UsageError
from .names import BOOL, FUNCTIONS, INT, NUM, STR, VARIABLES, VER
from .nodes import Binary, BoolOp, Call, Compare, Const, InRange, ListLit, Node, Unary, Var
from .parser import parse_tree
from .ranges import VersionRange
from .tokenizer import ExprError

Checked = tuple[Node, str]


def check(node: Node) -> Checked:
    """Return the node (with text literals compared to versions turned into Version constants) and its type."""
    checker = _CHECKERS.get(type(node))
    if checker is None:
        raise ExprError("unsupported expression", node.col)
    return checker(node)


def _const(node: Const) -> Checked:
    v = node.value
    if isinstance(v, bool):
        return node, BOOL
    if isinstance(v, int):
        return node, INT
    if isinstance(v, float):
        return node, NUM
    if isinstance(v, Version):
        return node, VER
    return node, STR


def _var(node: Var) -> Checked:
    if node.name not in VARIABLES:
        import difflib

        close = difflib.get_close_matches(node.name, list(VARIABLES), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ExprError(f"unknown name {node.name!r}{hint}", node.col)
    return node, VARIABLES[node.name][0]


def _in_range(node: InRange) -> Checked:
    return node, BOOL


def _list(node: ListLit) -> Checked:
    raise ExprError("a list can only stand on the right of 'in'", node.col)


def _call(node: Call) -> Checked:
    if node.func not in FUNCTIONS:
        raise ExprError(f"unknown function {node.func!r}; known: {', '.join(FUNCTIONS)}", node.col)
    arg_types, result, _ = FUNCTIONS[node.func]
    if len(node.args) != len(arg_types):
        raise ExprError(f"{node.func}() takes {len(arg_types)} argument(s)", node.col)
    args = []
    for arg, want in zip(node.args, arg_types):
        if want == "lit":
            if not (isinstance(arg, Const) and isinstance(arg.value, str)):
                raise ExprError(f"{node.func}() takes a quoted name", arg.col)
            if node.func == "installed" and arg.value not in PACKAGES:
                raise ExprError(f"installed() takes one of {', '.join(PACKAGES)}", arg.col)
            args.append(arg)
            continue
        checked, typ = check(arg)
        if typ not in (INT, NUM):
            raise ExprError(f"{node.func}() takes numbers", arg.col)
        args.append(checked)
    if node.func in ("max", "min"):
        types = [check(a)[1] for a in args]
        result = INT if all(t == INT for t in types) else NUM
    return Call(node.col, node.func, tuple(args)), result


def _unary(node: Unary) -> Checked:
    operand, typ = check(node.operand)
    if node.op == "not":
        if typ != BOOL:
            raise ExprError("'not' needs a true/false value", node.col)
        return Unary(node.col, "not", operand), BOOL
    if typ not in (INT, NUM):
        raise ExprError("'-' needs a number", node.col)
    return Unary(node.col, "-", operand), typ


def _binary(node: Binary) -> Checked:
    left, lt = check(node.left)
    right, rt = check(node.right)
    if lt not in (INT, NUM) or rt not in (INT, NUM):
        raise ExprError(f"'{node.op}' needs numbers", node.col)
    if node.op in ("//", "%") and (lt != INT or rt != INT):
        raise ExprError(f"'{node.op}' needs whole numbers", node.col)
    return Binary(node.col, node.op, left, right), INT if lt == rt == INT else NUM


def _bool_op(node: BoolOp) -> Checked:
    items = []
    for item in node.items:
        checked, typ = check(item)
        if typ != BOOL:
            raise ExprError(f"'{node.op}' joins true/false values", item.col)
        items.append(checked)
    return BoolOp(node.col, node.op, tuple(items)), BOOL


def _enum_of(node: Node) -> tuple[str, tuple[str, ...]] | None:
    if isinstance(node, Var) and VARIABLES[node.name][1]:
        return node.name, VARIABLES[node.name][1]  # type: ignore[return-value]
    return None


def _as_version(node: Node) -> Node:
    if not (isinstance(node, Const) and isinstance(node.value, str)):
        raise ExprError("a version is compared with a quoted version such as '9.5'", node.col)
    try:
        return Const(node.col, parse_version(node.value))
    except UsageError:
        raise ExprError(f"{node.value!r} is not a version", node.col) from None


def _compare(node: Compare) -> Checked:
    left, lt = check(node.left)
    if node.op in ("in", "not in"):
        if not isinstance(node.right, ListLit) or not node.right.items:
            raise ExprError(f"'{node.op}' needs a non-empty list such as [64, 128]", node.right.col)
        items = []
        for item in node.right.items:
            if not isinstance(item, Const):
                raise ExprError("list items must be literal values", item.col)
            items.append(_coerce_literal(left, lt, item))
        return Compare(node.col, node.op, left, ListLit(node.right.col, tuple(items))), BOOL
    right, rt = check(node.right)
    if lt == VER or rt == VER:
        if lt == VER and rt == VER:
            return Compare(node.col, node.op, left, right), BOOL
        if lt == VER:
            return Compare(node.col, node.op, left, _as_version(right)), BOOL
        return Compare(node.col, node.op, _as_version(left), right), BOOL
    if isinstance(right, Const):
        right = _coerce_literal(left, lt, right)
        rt = check(right)[1]
    if isinstance(left, Const):
        left = _coerce_literal(right, rt, left)
        lt = check(left)[1]
    numeric = {INT, NUM}
    if not (lt == rt or (lt in numeric and rt in numeric)):
        raise ExprError(f"cannot compare {lt} with {rt}", node.col)
    if lt in (STR, BOOL) and node.op not in ("==", "!="):
        raise ExprError(f"'{node.op}' does not order {lt} values; use == or !=", node.col)
    return Compare(node.col, node.op, left, right), BOOL


def _coerce_literal(other: Node, other_type: str, lit: Node) -> Node:
    assert isinstance(lit, Const)
    if other_type == VER:
        return _as_version(lit)
    enum = _enum_of(other)
    if enum and isinstance(lit.value, str) and lit.value not in enum[1]:
        raise ExprError(f"{enum[0]} is never {lit.value!r}; it is one of {', '.join(enum[1])}", lit.col)
    lit_type = check(lit)[1]
    numeric = {INT, NUM}
    if not (lit_type == other_type or (lit_type in numeric and other_type in numeric)):
        raise ExprError(f"cannot compare {other_type} with {lit_type} {lit.value!r}", lit.col)
    return lit


_CHECKERS: dict[type, Callable[..., Checked]] = {
    Const: _const, Var: _var, InRange: _in_range, ListLit: _list, Call: _call, Unary: _unary, Binary: _binary,
    BoolOp: _bool_op, Compare: _compare,
}


def parse(text: str) -> Node:
    """Parse and type-check a condition; it must be true/false valued."""
    if not isinstance(text, str) or not text.strip():
        raise ExprError("empty condition", 1)
    try:
        node, typ = check(parse_tree(text))
    except ExprError as exc:
        raise exc.at(text) from None
    if typ != BOOL:
        raise ExprError("a condition must be true or false, not a " + typ, 1, text)
    return node


def parse_value(text: str) -> tuple[Node, str]:
    """Parse and type-check a value expression (a fix's new value), returning its type."""
    if isinstance(text, bool) or isinstance(text, (int, float)):
        return check(Const(1, text))
    if not isinstance(text, str) or not text.strip():
        raise ExprError("empty expression", 1)
    try:
        return check(parse_tree(text))
    except ExprError as exc:
        raise exc.at(text) from None


def in_range(name: str, spec_text: str) -> InRange:
    """A `when` range as a node; versions and `sm` are compared with packaging, never as strings."""
    if name not in VARIABLES or VARIABLES[name][0] not in (VER, INT) or (VARIABLES[name][0] == INT and name != "sm"):
        raise ExprError(f"when: {name!r} is not a version or arch fact; accepted: sm, {', '.join(PACKAGES)}", 1)
    try:
        spec = VersionRange(spec_text)
    except ValueError as exc:
        raise ExprError(f"when.{name}: {spec_text!r} is not a version range such as '>=9.1,<9.5' ({exc})", 1) \
            from None
    return InRange(1, name, spec)
