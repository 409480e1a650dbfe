"""Checked trees compiled to closures that evaluate in three values: a value, UNKNOWN, or False for an absent
package; one compiler per node type."""

import operator
from typing import Any, Callable, Mapping

from packaging.version import Version

from ..environment import ABSENT
from .nodes import UNKNOWN, Binary, BoolOp, Call, Compare, Const, InRange, Node, Unary, Var

Facts = Mapping[str, Any]
Compiled = Callable[[Facts], Any]

_ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod}
_COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
            ">=": operator.ge}

_CLOSURES: dict[int, tuple[Node, Compiled]] = {}


def compile_node(node: Node) -> Compiled:
    """Turn a checked node into a closure returning a value, UNKNOWN, or False for absent packages (cached)."""
    hit = _CLOSURES.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    fn = _compile(node)
    _CLOSURES[id(node)] = (node, fn)
    return fn


def _compile(node: Node) -> Compiled:
    compiler = _COMPILERS.get(type(node))
    if compiler is None:
        raise TypeError(f"cannot compile {node!r}")
    return compiler(node)


def _is_absent(value: Any) -> bool:
    return type(value) is str and value == ABSENT


def _not(value: Any) -> Any:
    return UNKNOWN if value is UNKNOWN else not value


def _deferred(node: Node, parts: list[Compiled], index: int) -> Compiled:
    """A stand-in that compiles its operand on first use: most operands of and/or are never reached."""

    def first_call(facts: Facts) -> Any:
        parts[index] = fn = _compile(node)
        return fn(facts)

    return first_call


def _const(node: Const) -> Compiled:
    value = node.value
    return lambda facts: value


def _var(node: Var) -> Compiled:
    name = node.name
    return lambda facts: facts.get(name, UNKNOWN)


def _in_range(node: InRange) -> Compiled:
    name, spec = node.name, node.spec

    def in_range_fn(facts: Facts) -> Any:
        value = facts.get(name, UNKNOWN)
        if value is UNKNOWN:
            return UNKNOWN
        if value == ABSENT:
            return False
        version = Version(str(value)) if name == "sm" else value
        return spec.contains(version, prereleases=True)

    return in_range_fn


def _call(node: Call) -> Compiled:
    if node.func in ("env", "api"):
        key = f"{node.func}:{node.args[0].value}"  # type: ignore[attr-defined]
        default = "" if node.func == "env" else UNKNOWN
        return lambda facts: facts.get(key, default)
    if node.func == "installed":
        pkg = node.args[0].value  # type: ignore[attr-defined]

        def installed_fn(facts: Facts) -> Any:
            value = facts.get(pkg, UNKNOWN)
            return value if value is UNKNOWN else value != ABSENT

        return installed_fn
    a, b = (_compile(arg) for arg in node.args)
    pick = max if node.func == "max" else min

    def minmax(facts: Facts) -> Any:
        x, y = a(facts), b(facts)
        return UNKNOWN if x is UNKNOWN or y is UNKNOWN else pick(x, y)

    return minmax


def _unary(node: Unary) -> Compiled:
    inner = _compile(node.operand)
    if node.op == "not":
        return lambda facts: _not(inner(facts))
    return lambda facts: (lambda v: UNKNOWN if v is UNKNOWN else -v)(inner(facts))


def _binary(node: Binary) -> Compiled:
    left, right = _compile(node.left), _compile(node.right)
    op = _ARITH[node.op]

    def arith(facts: Facts) -> Any:
        x, y = left(facts), right(facts)
        if x is UNKNOWN or y is UNKNOWN:
            return UNKNOWN
        try:
            return op(x, y)
        except ZeroDivisionError:
            return UNKNOWN

    return arith


def _bool_op(node: BoolOp) -> Compiled:
    parts: list[Compiled] = []
    parts.extend(_deferred(item, parts, i) for i, item in enumerate(node.items))
    if node.op == "and":
        def and_fn(facts: Facts) -> Any:
            result: Any = True
            for part in parts:
                value = part(facts)
                if value is False:
                    return False
                if value is UNKNOWN:
                    result = UNKNOWN
            return result

        return and_fn

    def or_fn(facts: Facts) -> Any:
        result: Any = False
        for part in parts:
            value = part(facts)
            if value is True:
                return True
            if value is UNKNOWN:
                result = UNKNOWN
        return result

    return or_fn


def _compare(node: Compare) -> Compiled:
    left = _compile(node.left)
    if node.op in ("in", "not in"):
        options = frozenset(item.value for item in node.right.items)  # type: ignore[attr-defined]
        negate = node.op == "not in"

        def member(facts: Facts) -> Any:
            value = left(facts)
            if value is UNKNOWN:
                return UNKNOWN
            if value == ABSENT:
                return False
            return (value in options) != negate

        return member
    op = _COMPARE[node.op]
    if isinstance(node.left, Var) and isinstance(node.right, Const) and not _is_absent(node.right.value):
        # The common shape, `hdim > 256`: one closure instead of three. Only a text fact can be ABSENT.
        name, const = node.left.name, node.right.value

        def compare_fact(facts: Facts) -> Any:
            x = facts.get(name, UNKNOWN)
            if x is UNKNOWN:
                return UNKNOWN
            if type(x) is str and x == ABSENT:
                return False
            return op(x, const)

        return compare_fact
    right = _compile(node.right)

    def compare(facts: Facts) -> Any:
        x, y = left(facts), right(facts)
        if x is UNKNOWN or y is UNKNOWN:
            return UNKNOWN
        if x == ABSENT or y == ABSENT:
            return False
        return op(x, y)

    return compare


_COMPILERS: dict[type, Callable[..., Compiled]] = {
    Const: _const, Var: _var, InRange: _in_range, Call: _call, Unary: _unary, Binary: _binary, BoolOp: _bool_op,
    Compare: _compare,
}
