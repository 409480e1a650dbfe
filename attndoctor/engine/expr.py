"""The rule condition language: a closed set of names, type-checked at load, evaluated in three values, no eval.

The parts, one module each: names (the vocabulary), tokenizer, parser, nodes (the tree), typecheck, compiler,
partial (partial evaluation), intervals (merging ranges on one fact), printer. This module is their public face.
"""

from .compiler import Compiled, Facts, compile_node
from .names import BOOL, CONFIG_VARIABLES, FUNCTIONS, INT, NUM, STR, VARIABLES, VER
from .nodes import UNKNOWN, Binary, BoolOp, Call, Compare, Const, InRange, ListLit, Node, Unary, Var, shared
from .partial import free_names, residual
from .printer import render, render_range
from .tokenizer import KEYWORDS, ExprError, Token, tokenize
from .typecheck import in_range, parse, parse_value

__all__ = [
    "BOOL", "CONFIG_VARIABLES", "FUNCTIONS", "INT", "KEYWORDS", "NUM", "STR", "UNKNOWN", "VARIABLES", "VER", "Binary",
    "BoolOp", "Call", "Compare", "Compiled", "Const", "ExprError", "Facts", "InRange", "ListLit", "Node", "Token",
    "Unary", "Var", "compile_node", "free_names", "in_range", "parse", "parse_value", "render", "render_range",
    "residual", "shared", "tokenize",
]
