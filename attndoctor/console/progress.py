"""A progress line for long runs over many configs: cheap to import (the text path of explain loads it)."""

from __future__ import annotations

import sys
import time
from typing import IO, Any, Iterable, Iterator

COMPACT_OVER = 50
"""Above this many configs --format json is written compact and result by result (see report/stream.py)."""


def streams(fmt: str, count: int) -> bool:
    """Whether a format is written result by result: jsonl always, json above the size it is indented at."""
    return fmt == "jsonl" or (fmt == "json" and (count < 0 or count > COMPACT_OVER))


class Progress:
    """`attndoctor: 12,000 of 20,000 configs` on stderr, rewritten in place; only on a terminal, only once a run has
    taken a second, and at most a few times a second."""

    DELAY = 1.0
    EVERY = 0.25

    def __init__(self, total: int, file: IO[str] | None = None) -> None:
        self.file = file or sys.stderr
        self.total = total
        self.shown = False
        isatty = getattr(self.file, "isatty", None)
        self.enabled = bool(isatty and isatty())
        self.start = time.monotonic()
        self.next = self.start + self.DELAY

    def wrap(self, results: Iterable[Any]) -> Iterator[Any]:
        if not self.enabled:
            yield from results
            return
        for done, result in enumerate(results, 1):
            if not done % 64 and time.monotonic() >= self.next:
                self.show(done)
            yield result
        self.close()

    def show(self, done: int) -> None:
        of = f" of {self.total:,}" if self.total > 0 else ""
        self.file.write(f"\rattndoctor: {done:,}{of} configs")
        self.file.flush()
        self.shown = True
        self.next = time.monotonic() + self.EVERY

    def close(self) -> None:
        if self.shown:
            self.file.write("\r\x1b[K")
            self.file.flush()
            self.shown = False


