"""Errors that the command line turns into exit 2 with one short line."""

from __future__ import annotations


class UsageError(ValueError):
    """Bad input from the user: a flag, a config file, an env file or a model config."""


class RuleError(ValueError):
    """A rule file that does not load: names the file, the rule id and the position."""

    def __init__(self, message: str, *, file: str = "", rule: str = "", position: str = "") -> None:
        where = ":".join(p for p in (file, position) if p)
        prefix = f"{where}: " if where else ""
        ident = f"rule {rule}: " if rule else ""
        super().__init__(f"{prefix}{ident}{message}")
        self.file = file
        self.rule = rule
        self.position = position
