"""The condition language's tokens: a `Token` per number, text, name, keyword or operator, with its column."""

import re
from typing import Any, NamedTuple

TOKEN = (
    r"\s*(?:(?P<num>\d+\.\d+|\d+)|(?P<str>'[^']*'|\"[^\"]*\")|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op>==|!=|<=|>=|//|[<>+\-*%()\[\],]))"
)
KEYWORDS = {"and", "or", "not", "in", "true", "false"}


class ExprError(ValueError):
    """A condition that does not parse or type-check; `column` is 1-based, `source` the condition's text once known.

    With the source, the message draws it on the lines below, with a caret under the offending column.
    """

    def __init__(self, message: str, column: int, source: str = "") -> None:
        text = f"{message} (column {column})"
        if source and "\n" not in source:
            text += f"\n    {source}\n    {' ' * (column - 1)}^"
        super().__init__(text)
        self.message, self.column, self.source = message, column, source

    def at(self, source: str) -> "ExprError":
        """The same error, drawn under `source`."""
        return self if self.source else ExprError(self.message, self.column, source)


class Token(NamedTuple):
    """kind: num, str, name, kw (a keyword), op, or end; col: the 1-based column where it starts."""

    kind: str
    value: Any
    col: int


def tokenize(text: str) -> list[Token]:
    """The tokens of a condition, ending with an `end` token one column past the text."""
    tokens: list[Token] = []
    pos = 0
    pattern = re.compile(TOKEN)
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = pattern.match(text, pos)
        if not match or match.end() == pos:
            col = pos + len(text[pos:]) - len(text[pos:].lstrip()) + 1
            raise ExprError(f"unexpected character {text[col - 1]!r}", col)
        col = match.start(match.lastgroup) + 1
        kind = match.lastgroup
        raw = match.group(kind)
        if kind == "num":
            tokens.append(Token("num", float(raw) if "." in raw else int(raw), col))
        elif kind == "str":
            tokens.append(Token("str", raw[1:-1], col))
        elif kind == "name":
            tokens.append(Token("kw" if raw in KEYWORDS else "name", raw, col))
        else:
            tokens.append(Token("op", raw, col))
        pos = match.end()
    tokens.append(Token("end", None, len(text) + 1))
    return tokens
