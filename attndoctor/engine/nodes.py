"""The syntax tree of a condition, and UNKNOWN, the third truth value the evaluator returns."""

from typing import Any, NamedTuple, Sequence, Union

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


def children(node: Node) -> Sequence[Node]:
    """The nodes directly below a node."""
    if isinstance(node, (Binary, Compare)):
        return (node.left, node.right)
    if isinstance(node, Unary):
        return (node.operand,)
    if isinstance(node, (BoolOp, ListLit)):
        return node.items
    if isinstance(node, Call):
        return node.args
    return ()
