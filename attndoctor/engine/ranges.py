"""PEP 440 version ranges (`>=9.1,<9.5`), compared with packaging's Version, never as strings.

Rules use the clause subset below; implementing it over `packaging.version.Version` keeps
`packaging.specifiers` (and the `packaging.tags` → logging/subprocess/sysconfig chain it imports) off the start-up
path of `attndoctor explain`. Versions reaching here are release versions: pre-release and local parts are dropped
on the way in (see `attndoctor.environment.parse_version`); post-releases are kept and follow PEP 440.
"""

from __future__ import annotations

import re
from typing import Iterator

from packaging.version import InvalidVersion, Version

_CLAUSE = re.compile(r"^\s*(~=|==|!=|<=|>=|<|>)\s*(\d+(?:\.\d+)*(?:\.post\d+)?)(\.\*)?\s*$")


class Clause:
    """One `operator version` pair; `version` keeps a trailing `.*` for prefix matches."""

    __slots__ = ("operator", "version", "_release", "_version")

    def __init__(self, operator: str, version: str, wildcard: bool) -> None:
        self.operator = operator
        self.version = version + (".*" if wildcard else "")
        self._version = Version(version)
        self._release = self._version.release

    def contains(self, v: Version) -> bool:
        op = self.operator
        if self.version.endswith(".*"):
            prefix = self._release
            padded = tuple(v.release) + (0,) * max(0, len(prefix) - len(v.release))
            match = padded[: len(prefix)] == prefix
            return match if op == "==" else not match
        if op == "==":
            return v == self._version
        if op == "!=":
            return v != self._version
        if op == "<":
            return v < self._version
        if op == "<=":
            return v <= self._version
        if op == ">":
            # PEP 440: >V excludes the post-releases of V itself.
            if v.post is not None and self._version.post is None and \
                    Version(v.base_version) == Version(self._version.base_version):
                return False
            return v > self._version
        if op == ">=":
            return v >= self._version
        # ~=X.Y means >= X.Y and == X.*
        prefix = self._release[:-1]
        padded = tuple(v.release) + (0,) * max(0, len(prefix) - len(v.release))
        return v >= self._version and padded[: len(prefix)] == prefix

    def __str__(self) -> str:
        return f"{self.operator}{self.version}"


class VersionRange:
    """A comma-separated set of clauses that must all hold."""

    __slots__ = ("clauses",)

    def __init__(self, text: str) -> None:
        if not isinstance(text, str) or not text.strip():
            raise ValueError("empty version range")
        clauses = []
        for part in text.split(","):
            match = _CLAUSE.match(part)
            if not match:
                raise ValueError(f"{part.strip()!r} is not a clause such as '>=9.1'")
            operator, version, wildcard = match.group(1), match.group(2), bool(match.group(3))
            if wildcard and operator not in ("==", "!="):
                raise ValueError(f"{part.strip()!r}: '.*' goes only with == or !=")
            if operator == "~=" and "." not in version:
                raise ValueError(f"{part.strip()!r}: '~=' needs at least two version parts")
            try:
                clauses.append(Clause(operator, version, wildcard))
            except InvalidVersion:
                raise ValueError(f"{part.strip()!r} is not a version") from None
        self.clauses = tuple(clauses)

    def contains(self, version: Version, prereleases: bool | None = None) -> bool:
        """Whether a version lies in the range."""
        return all(c.contains(version) for c in self.clauses)

    def __iter__(self) -> Iterator[Clause]:
        return iter(self.clauses)

    def __str__(self) -> str:
        return ",".join(str(c) for c in self.clauses)

    def __repr__(self) -> str:
        return f"VersionRange({str(self)!r})"
