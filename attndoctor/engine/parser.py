"""Recursive descent from tokens to an unchecked syntax tree; the type checker gives it meaning."""

from typing import Any

from .nodes import Binary, BoolOp, Call, Compare, Const, ListLit, Node, Unary, Var
from .tokenizer import ExprError, Token, tokenize


class Parser:
    """Recursive descent; each method's docstring is its production."""

    def __init__(self, text: str) -> None:
        self.tokens = tokenize(text)
        self.i = 0

    def peek(self) -> Token:
        return self.tokens[self.i]

    def take(self) -> Token:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def accept(self, kind: str, value: Any = None) -> bool:
        tok = self.peek()
        if tok.kind == kind and (value is None or tok.value == value):
            self.i += 1
            return True
        return False

    def expect(self, kind: str, value: Any) -> None:
        tok = self.peek()
        if not self.accept(kind, value):
            found = "end of condition" if tok.kind == "end" else repr(tok.value)
            raise ExprError(f"expected {value!r}, found {found}", tok.col)

    def parse(self) -> Node:
        node = self.or_expr()
        tok = self.peek()
        if tok.kind != "end":
            raise ExprError(f"unexpected {tok.value!r}", tok.col)
        return node

    def or_expr(self) -> Node:
        """or_expr := and_expr ('or' and_expr)*"""
        col = self.peek().col
        items = [self.and_expr()]
        while self.accept("kw", "or"):
            items.append(self.and_expr())
        return items[0] if len(items) == 1 else BoolOp(col, "or", tuple(items))

    def and_expr(self) -> Node:
        """and_expr := not_expr ('and' not_expr)*"""
        col = self.peek().col
        items = [self.not_expr()]
        while self.accept("kw", "and"):
            items.append(self.not_expr())
        return items[0] if len(items) == 1 else BoolOp(col, "and", tuple(items))

    def not_expr(self) -> Node:
        """not_expr := 'not' not_expr | comparison"""
        col = self.peek().col
        if self.accept("kw", "not"):
            return Unary(col, "not", self.not_expr())
        return self.comparison()

    def comparison(self) -> Node:
        """comparison := sum (('=='|'!='|'<'|'<='|'>'|'>='|'in'|'not' 'in') sum)?"""
        left = self.sum()
        tok = self.peek()
        if tok.kind == "op" and tok.value in ("==", "!=", "<", "<=", ">", ">="):
            self.take()
            return Compare(tok.col, tok.value, left, self.sum())
        if tok.kind == "kw" and tok.value == "in":
            self.take()
            return Compare(tok.col, "in", left, self.sum())
        if tok.kind == "kw" and tok.value == "not" and self.tokens[self.i + 1][:2] == ("kw", "in"):
            self.take()
            self.take()
            return Compare(tok.col, "not in", left, self.sum())
        return left

    def sum(self) -> Node:
        """sum := term (('+'|'-') term)*"""
        node = self.term()
        while self.peek().kind == "op" and self.peek().value in ("+", "-"):
            op, col = self.take()[1:]
            node = Binary(col, op, node, self.term())
        return node

    def term(self) -> Node:
        """term := unary (('*'|'//'|'%') unary)*"""
        node = self.unary()
        while self.peek().kind == "op" and self.peek().value in ("*", "//", "%"):
            op, col = self.take()[1:]
            node = Binary(col, op, node, self.unary())
        return node

    def unary(self) -> Node:
        """unary := '-' unary | atom"""
        col = self.peek().col
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


def parse_tree(text: str) -> Node:
    """The syntax tree of a condition or value expression, not yet type-checked."""
    return Parser(text).parse()
