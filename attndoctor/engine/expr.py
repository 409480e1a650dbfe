"""The rule condition language: a closed set of names, type-checked at load, evaluated in three values, no eval."""

import operator
import re
from typing import Any, Callable, Mapping, NamedTuple, Sequence, Union

from packaging.version import Version

from ..environment import ABSENT, PACKAGE_LABELS, PACKAGES, parse_version
from ..errors import UsageError
from ..fields import BOOL, DERIVED_FACTS, FACTS, INT, NUM, STR, TABLE
from .ranges import VersionRange


class _Unknown:
    """The third truth value: a fact nobody gave."""

    _instance = None

    def __new__(cls) -> "_Unknown":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:
        raise TypeError("UNKNOWN has no truth value; use the three-valued operators")


UNKNOWN = _Unknown()


class ExprError(ValueError):
    """A condition that does not parse or type-check; `column` is 1-based."""

    def __init__(self, message: str, column: int) -> None:
        super().__init__(f"{message} (column {column})")
        self.column = column


# ---------------------------------------------------------------- the closed set of names and their types

VER = "version"
"""Types of names: INT, NUM, STR, BOOL as the config table spells them, and versions of packages."""

VARIABLES: dict[str, tuple[str, tuple[str, ...] | None, str]] = {
    # config
    **{f.name: (f.type, f.choices, f.doc) for f in TABLE if f.fact},
    **{name: (kind, choices, doc) for name, kind, choices, doc in DERIVED_FACTS},
    # environment
    "sm": (INT, None, "GPU compute capability (90 = Hopper)"),
    "gpu": (STR, None, "GPU name"),
    "cudnn_compiled": (VER, None, "cuDNN version torch was compiled against"),
    "flash_attn_4_beta": (INT, None, "which flash-attn 4 beta (4.0.0b27 is 27): versions read every beta as 4.0.0"),
    "flash_attn_local": (BOOL, None, "the flash-attn version carries a local label (2.8.3+cu128): versions drop it"),
    **{p: (VER, None, f"{p} version") for p in PACKAGES},
}
CONFIG_VARIABLES = frozenset((*FACTS, *(d[0] for d in DERIVED_FACTS)))

FUNCTIONS: dict[str, tuple[tuple[str, ...], str, str]] = {
    # name: (argument types, result type, doc); "lit" = a text literal argument
    "env": (("lit",), STR, "an environment variable's value, '' when unset"),
    "api": (("lit",), BOOL, "an API fact read from a package's source"),
    "installed": (("lit",), BOOL, "whether a package is installed"),
    "max": ((NUM, NUM), NUM, "the larger of two numbers"),
    "min": ((NUM, NUM), NUM, "the smaller of two numbers"),
}


# ---------------------------------------------------------------- syntax tree

class Const(NamedTuple):
    """A literal. Every node is a NamedTuple: `col` points into the source for messages; tuples unpickle fast."""

    col: int
    value: Any


class Var(NamedTuple):
    col: int
    name: str


class ListLit(NamedTuple):
    col: int
    items: "tuple[Node, ...]"


class Call(NamedTuple):
    col: int
    func: str
    args: "tuple[Node, ...]"


class Unary(NamedTuple):
    col: int
    op: str
    operand: "Node"


class Binary(NamedTuple):
    col: int
    op: str
    left: "Node"
    right: "Node"


class Compare(NamedTuple):
    col: int
    op: str
    left: "Node"
    right: "Node"


class BoolOp(NamedTuple):
    col: int
    op: str
    items: "tuple[Node, ...]"


class InRange(NamedTuple):
    """A version or arch fact inside a PEP 440 specifier set (the `when` table of a rule)."""

    col: int
    name: str
    spec: VersionRange


Node = Union[Const, Var, ListLit, Call, Unary, Binary, Compare, BoolOp, InRange]
"""A parsed, type-checked condition."""
_NODE_TYPES = (Const, Var, ListLit, Call, Unary, Binary, Compare, BoolOp, InRange)


def shared(node: Node, pool: dict[tuple[Any, ...], Node]) -> Node:
    """The node with every identical subtree (columns aside) replaced by one object from `pool`.

    Once a rule base is checked, columns are no longer needed; sharing the few hundred distinct subtrees among
    thousands makes the cached rule base several milliseconds faster to load.
    """
    parts: list[Any] = [0]
    key: list[Any] = [type(node)]
    for value in node[1:]:
        if isinstance(value, _NODE_TYPES):
            value = shared(value, pool)
            key.append(id(value))
        elif type(value) is tuple:
            value = tuple(shared(v, pool) for v in value)
            key.append(tuple(id(v) for v in value))
        elif isinstance(value, VersionRange):
            key.append(("range", str(value)))
        else:
            key.append((type(value), value))
        parts.append(value)
    return pool.setdefault(tuple(key), type(node)(*parts))


# ---------------------------------------------------------------- tokenizer and parser

_TOKEN = (
    r"\s*(?:(?P<num>\d+\.\d+|\d+)|(?P<str>'[^']*'|\"[^\"]*\")|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op>==|!=|<=|>=|//|[<>+\-*%()\[\],]))"
)
KEYWORDS = {"and", "or", "not", "in", "true", "false"}


def _tokenize(text: str) -> list[tuple[str, Any, int]]:
    tokens: list[tuple[str, Any, int]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = re.compile(_TOKEN).match(text, pos)
        if not match or match.end() == pos:
            col = pos + len(text[pos:]) - len(text[pos:].lstrip()) + 1
            raise ExprError(f"unexpected character {text[col - 1]!r}", col)
        col = match.start(match.lastgroup) + 1
        kind = match.lastgroup
        raw = match.group(kind)
        if kind == "num":
            tokens.append(("num", float(raw) if "." in raw else int(raw), col))
        elif kind == "str":
            tokens.append(("str", raw[1:-1], col))
        elif kind == "name":
            tokens.append(("kw" if raw in KEYWORDS else "name", raw, col))
        else:
            tokens.append(("op", raw, col))
        pos = match.end()
    tokens.append(("end", None, len(text) + 1))
    return tokens


class _Parser:
    """Recursive descent; each method's docstring is its production."""

    def __init__(self, text: str) -> None:
        self.tokens = _tokenize(text)
        self.i = 0

    def peek(self) -> tuple[str, Any, int]:
        return self.tokens[self.i]

    def take(self) -> tuple[str, Any, int]:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def accept(self, kind: str, value: Any = None) -> bool:
        tok = self.peek()
        if tok[0] == kind and (value is None or tok[1] == value):
            self.i += 1
            return True
        return False

    def expect(self, kind: str, value: Any) -> None:
        tok = self.peek()
        if not self.accept(kind, value):
            found = "end of condition" if tok[0] == "end" else repr(tok[1])
            raise ExprError(f"expected {value!r}, found {found}", tok[2])

    def parse(self) -> Node:
        node = self.or_expr()
        tok = self.peek()
        if tok[0] != "end":
            raise ExprError(f"unexpected {tok[1]!r}", tok[2])
        return node

    def or_expr(self) -> Node:
        """or_expr := and_expr ('or' and_expr)*"""
        col = self.peek()[2]
        items = [self.and_expr()]
        while self.accept("kw", "or"):
            items.append(self.and_expr())
        return items[0] if len(items) == 1 else BoolOp(col, "or", tuple(items))

    def and_expr(self) -> Node:
        """and_expr := not_expr ('and' not_expr)*"""
        col = self.peek()[2]
        items = [self.not_expr()]
        while self.accept("kw", "and"):
            items.append(self.not_expr())
        return items[0] if len(items) == 1 else BoolOp(col, "and", tuple(items))

    def not_expr(self) -> Node:
        """not_expr := 'not' not_expr | comparison"""
        col = self.peek()[2]
        if self.accept("kw", "not"):
            return Unary(col, "not", self.not_expr())
        return self.comparison()

    def comparison(self) -> Node:
        """comparison := sum (('=='|'!='|'<'|'<='|'>'|'>='|'in'|'not' 'in') sum)?"""
        left = self.sum()
        tok = self.peek()
        if tok[0] == "op" and tok[1] in ("==", "!=", "<", "<=", ">", ">="):
            self.take()
            return Compare(tok[2], tok[1], left, self.sum())
        if tok[0] == "kw" and tok[1] == "in":
            self.take()
            return Compare(tok[2], "in", left, self.sum())
        if tok[0] == "kw" and tok[1] == "not" and self.tokens[self.i + 1][:2] == ("kw", "in"):
            self.take()
            self.take()
            return Compare(tok[2], "not in", left, self.sum())
        return left

    def sum(self) -> Node:
        """sum := term (('+'|'-') term)*"""
        node = self.term()
        while self.peek()[0] == "op" and self.peek()[1] in ("+", "-"):
            op, col = self.take()[1:]
            node = Binary(col, op, node, self.term())
        return node

    def term(self) -> Node:
        """term := unary (('*'|'//'|'%') unary)*"""
        node = self.unary()
        while self.peek()[0] == "op" and self.peek()[1] in ("*", "//", "%"):
            op, col = self.take()[1:]
            node = Binary(col, op, node, self.unary())
        return node

    def unary(self) -> Node:
        """unary := '-' unary | atom"""
        col = self.peek()[2]
        if self.accept("op", "-"):
            return Unary(col, "-", self.unary())
        return self.atom()

    def atom(self) -> Node:
        """atom := NUMBER | STRING | 'true' | 'false' | NAME | NAME '(' args ')' | '[' items ']' | '(' or_expr ')'"""
        kind, value, col = self.take()
        if kind in ("num", "str"):
            return Const(col, value)
        if kind == "kw" and value in ("true", "false"):
            return Const(col, value == "true")
        if kind == "name":
            if self.accept("op", "("):
                args: list[Node] = []
                if not self.accept("op", ")"):
                    args.append(self.or_expr())
                    while self.accept("op", ","):
                        args.append(self.or_expr())
                    self.expect("op", ")")
                return Call(col, value, tuple(args))
            return Var(col, value)
        if kind == "op" and value == "[":
            items: list[Node] = []
            if not self.accept("op", "]"):
                items.append(self.or_expr())
                while self.accept("op", ","):
                    items.append(self.or_expr())
                self.expect("op", "]")
            return ListLit(col, tuple(items))
        if kind == "op" and value == "(":
            node = self.or_expr()
            self.expect("op", ")")
            return node
        found = "end of condition" if kind == "end" else repr(value)
        raise ExprError(f"expected a value, found {found}", col)


# ---------------------------------------------------------------- type checking (also folds version literals)

def _check(node: Node) -> tuple[Node, str]:
    """Return the node (with text literals compared to versions turned into Version constants) and its type."""
    if isinstance(node, Const):
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
    if isinstance(node, Var):
        if node.name not in VARIABLES:
            import difflib

            close = difflib.get_close_matches(node.name, list(VARIABLES), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ExprError(f"unknown name {node.name!r}{hint}", node.col)
        return node, VARIABLES[node.name][0]
    if isinstance(node, InRange):
        return node, BOOL
    if isinstance(node, ListLit):
        raise ExprError("a list can only stand on the right of 'in'", node.col)
    if isinstance(node, Call):
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
            checked, typ = _check(arg)
            if typ not in (INT, NUM):
                raise ExprError(f"{node.func}() takes numbers", arg.col)
            args.append(checked)
        if node.func in ("max", "min"):
            types = [_check(a)[1] for a in args]
            result = INT if all(t == INT for t in types) else NUM
        return Call(node.col, node.func, tuple(args)), result
    if isinstance(node, Unary):
        operand, typ = _check(node.operand)
        if node.op == "not":
            if typ != BOOL:
                raise ExprError("'not' needs a true/false value", node.col)
            return Unary(node.col, "not", operand), BOOL
        if typ not in (INT, NUM):
            raise ExprError("'-' needs a number", node.col)
        return Unary(node.col, "-", operand), typ
    if isinstance(node, Binary):
        left, lt = _check(node.left)
        right, rt = _check(node.right)
        if lt not in (INT, NUM) or rt not in (INT, NUM):
            raise ExprError(f"'{node.op}' needs numbers", node.col)
        if node.op in ("//", "%") and (lt != INT or rt != INT):
            raise ExprError(f"'{node.op}' needs whole numbers", node.col)
        return Binary(node.col, node.op, left, right), INT if lt == rt == INT else NUM
    if isinstance(node, BoolOp):
        items = []
        for item in node.items:
            checked, typ = _check(item)
            if typ != BOOL:
                raise ExprError(f"'{node.op}' joins true/false values", item.col)
            items.append(checked)
        return BoolOp(node.col, node.op, tuple(items)), BOOL
    if isinstance(node, Compare):
        return _check_compare(node), BOOL
    raise ExprError("unsupported expression", node.col)


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


def _check_compare(node: Compare) -> Node:
    left, lt = _check(node.left)
    if node.op in ("in", "not in"):
        if not isinstance(node.right, ListLit) or not node.right.items:
            raise ExprError(f"'{node.op}' needs a non-empty list such as [64, 128]", node.right.col)
        items = []
        for item in node.right.items:
            if not isinstance(item, Const):
                raise ExprError("list items must be literal values", item.col)
            items.append(_coerce_literal(left, lt, item))
        return Compare(node.col, node.op, left, ListLit(node.right.col, tuple(items)))
    right, rt = _check(node.right)
    if lt == VER or rt == VER:
        if lt == VER and rt == VER:
            return Compare(node.col, node.op, left, right)
        if lt == VER:
            return Compare(node.col, node.op, left, _as_version(right))
        return Compare(node.col, node.op, _as_version(left), right)
    if isinstance(right, Const):
        right = _coerce_literal(left, lt, right)
        rt = _check(right)[1]
    if isinstance(left, Const):
        left = _coerce_literal(right, rt, left)
        lt = _check(left)[1]
    numeric = {INT, NUM}
    if not (lt == rt or (lt in numeric and rt in numeric)):
        raise ExprError(f"cannot compare {lt} with {rt}", node.col)
    if lt in (STR, BOOL) and node.op not in ("==", "!="):
        raise ExprError(f"'{node.op}' does not order {lt} values; use == or !=", node.col)
    return Compare(node.col, node.op, left, right)


def _coerce_literal(other: Node, other_type: str, lit: Node) -> Node:
    assert isinstance(lit, Const)
    if other_type == VER:
        return _as_version(lit)
    enum = _enum_of(other)
    if enum and isinstance(lit.value, str) and lit.value not in enum[1]:
        raise ExprError(f"{enum[0]} is never {lit.value!r}; it is one of {', '.join(enum[1])}", lit.col)
    lit_type = _check(lit)[1]
    numeric = {INT, NUM}
    if not (lit_type == other_type or (lit_type in numeric and other_type in numeric)):
        raise ExprError(f"cannot compare {other_type} with {lit_type} {lit.value!r}", lit.col)
    return lit


def parse(text: str) -> Node:
    """Parse and type-check a condition; it must be true/false valued."""
    if not isinstance(text, str) or not text.strip():
        raise ExprError("empty condition", 1)
    node, typ = _check(_Parser(text).parse())
    if typ != BOOL:
        raise ExprError("a condition must be true or false, not a " + typ, 1)
    return node


def parse_value(text: str) -> tuple[Node, str]:
    """Parse and type-check a value expression (a fix's new value), returning its type."""
    if isinstance(text, bool) or isinstance(text, (int, float)):
        return _check(Const(1, text))
    if not isinstance(text, str) or not text.strip():
        raise ExprError("empty expression", 1)
    return _check(_Parser(text).parse())


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


# ---------------------------------------------------------------- evaluation: compiled closures, three-valued

Facts = Mapping[str, Any]
Compiled = Callable[[Facts], Any]


def _fact(facts: Facts, key: str) -> Any:
    return facts.get(key, UNKNOWN)


def _arch_version(sm: int) -> Version:
    return Version(str(sm))


_CLOSURES: dict[int, tuple[Node, Compiled]] = {}


def compile_node(node: Node) -> Compiled:
    """Turn a checked node into a closure returning a value, UNKNOWN, or False for absent packages (cached)."""
    hit = _CLOSURES.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    fn = _compile(node)
    _CLOSURES[id(node)] = (node, fn)
    return fn


def _deferred(node: Node, parts: list[Compiled], index: int) -> Compiled:
    """A stand-in that compiles its operand on first use: most operands of and/or are never reached."""

    def first_call(facts: Facts) -> Any:
        parts[index] = fn = _compile(node)
        return fn(facts)

    return first_call


def _compile(node: Node) -> Compiled:
    if isinstance(node, Const):
        value = node.value
        return lambda facts: value
    if isinstance(node, Var):
        name = node.name
        return lambda facts: facts.get(name, UNKNOWN)
    if isinstance(node, InRange):
        name, spec = node.name, node.spec

        def in_range_fn(facts: Facts) -> Any:
            value = _fact(facts, name)
            if value is UNKNOWN:
                return UNKNOWN
            if value == ABSENT:
                return False
            version = _arch_version(value) if name == "sm" else value
            return spec.contains(version, prereleases=True)

        return in_range_fn
    if isinstance(node, Call):
        if node.func in ("env", "api"):
            key = f"{node.func}:{node.args[0].value}"  # type: ignore[attr-defined]
            default = "" if node.func == "env" else UNKNOWN
            return lambda facts: facts.get(key, default)
        if node.func == "installed":
            pkg = node.args[0].value  # type: ignore[attr-defined]

            def installed_fn(facts: Facts) -> Any:
                value = _fact(facts, pkg)
                return value if value is UNKNOWN else value != ABSENT

            return installed_fn
        a, b = (_compile(arg) for arg in node.args)
        pick = max if node.func == "max" else min

        def minmax(facts: Facts) -> Any:
            x, y = a(facts), b(facts)
            return UNKNOWN if x is UNKNOWN or y is UNKNOWN else pick(x, y)

        return minmax
    if isinstance(node, Unary):
        inner = _compile(node.operand)
        if node.op == "not":
            return lambda facts: _not(inner(facts))
        return lambda facts: (lambda v: UNKNOWN if v is UNKNOWN else -v)(inner(facts))
    if isinstance(node, Binary):
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
    if isinstance(node, BoolOp):
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
    if isinstance(node, Compare):
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
    raise TypeError(f"cannot compile {node!r}")


def _is_absent(value: Any) -> bool:
    return type(value) is str and value == ABSENT


def _not(value: Any) -> Any:
    return UNKNOWN if value is UNKNOWN else not value


_ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod}
_COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
            ">=": operator.ge}


# ---------------------------------------------------------------- partial evaluation and rendering

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
    for child in _children(node):
        out |= free_names(child)
    return out


def _children(node: Node) -> Sequence[Node]:
    if isinstance(node, (Binary, Compare)):
        return (node.left, node.right)
    if isinstance(node, Unary):
        return (node.operand,)
    if isinstance(node, BoolOp):
        return node.items
    if isinstance(node, Call):
        return node.args
    if isinstance(node, ListLit):
        return node.items
    return ()


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
            kept = _merge_ranges(node.op, kept)
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


# ---------------------------------------------------------------- merging ranges on one fact

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


def _merge_ranges(op: str, items: list[Node]) -> list[Node]:
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
