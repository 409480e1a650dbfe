"""One possible explanation of a pasted text, as every part of `why` that proposes one builds it."""

from __future__ import annotations

from typing import Any, NamedTuple


class Candidate(NamedTuple):
    """A rule, an advisory, a catalogue message or an install finding that may explain the text, with its score."""

    id: str
    kind: str  # rule | advisory | message | install | words
    score: float
    reasons: tuple[str, ...]
    title: str
    cause: str
    fixes: tuple[str, ...]
    backends: tuple[str, ...]
    applies: bool | None
    missing: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    lines: tuple[int, ...] = ()
    topics: tuple[str, ...] = ()
    """What kind of problem it is (topics.TOPICS): head-dim, gpu-arch, install-abi, ..."""
    failures: tuple[int, ...] = ()
    """Lines of a bare failure of its backend (one that names no reason) that this refusal explains."""

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"id": self.id, "kind": self.kind, "score": self.score, "reasons": list(self.reasons),
                "title": self.title, "cause": self.cause, "fixes": list(self.fixes), "backends": list(self.backends),
                "applies": self.applies, "missing": list(self.missing), "references": list(self.references),
                "lines": list(self.lines), "topics": list(self.topics)}
