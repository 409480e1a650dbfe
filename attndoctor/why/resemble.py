"""A line no message matches, read as the index message whose words it repeats: the same check printed by a release
the index did not read (reworded, a constant renamed, a space lost between two joined strings)."""

from __future__ import annotations

import math
import re
from typing import Any, Sequence

from .index import PLACEHOLDER
from .similarity import tokens
from .own_words import message_part
from .reader import Hit

RESEMBLES_AT = 0.65
"""The share of the message's weighted words the line must hold, and of the line's words the message must hold."""
COMMON_MIN = 4
"""Words in common, numbers and words in more than RARE messages aside (a 64 both print is a value met by chance; "output
shape doesn't match" are words of hundreds of messages), below which two lines resemble by chance."""
RARE = 300
"""A word in more messages than this does not propose candidates (it still counts in the shares)."""
LINES_MAX = 2000
"""Distinct unmatched lines compared at most: a long log is mostly ordinary lines."""
WORDS_MAX = 60
"""A line of more words is a dump (a config, a tensor), not one message."""
_FRAME = re.compile(r'^\s*(File "|at |#\d+ )')
"""A traceback's frame line names a file, not a message."""


class _Vocabulary:
    """The index messages' words, weighted by rarity, and which messages hold each rare word."""

    def __init__(self, entries: Sequence[Any]) -> None:
        self.entries = [e for e in entries if e.indexed and e.kind != "fact" and e.template]
        self.words = [frozenset(tokens(PLACEHOLDER.sub(" ", e.template))) for e in self.entries]
        df: dict[str, int] = {}
        for words in self.words:
            for w in words:
                df[w] = df.get(w, 0) + 1
        count = len(self.words) or 1
        self.idf = {w: math.log(1 + count / n) for w, n in df.items()}
        self.unknown = math.log(1 + count)
        self.holders: dict[str, list[int]] = {}
        for i, words in enumerate(self.words):
            for w in words:
                if df[w] <= RARE:
                    self.holders.setdefault(w, []).append(i)

    def weight(self, word: str) -> float:
        return self.idf.get(word, self.unknown)

    def best(self, line: str) -> tuple[int, float] | None:
        """(message, share) of the message the line resembles most, when both shares reach RESEMBLES_AT."""
        words = tokens(message_part(line))
        if len(words) < COMMON_MIN or len(words) > WORDS_MAX:
            return None
        found: set[int] = set()
        for w in words:
            found.update(self.holders.get(w, ()))
        best: tuple[int, float] | None = None
        for i in found:
            common = words & self.words[i]
            if sum(not w.isdigit() and w in self.holders for w in common) < COMMON_MIN:
                continue
            shared = sum(self.weight(w) for w in common)
            # a number the message does not print is a value of the line, not a word of another message
            own = sum(self.weight(w) for w in words if not w.isdigit() or w in self.words[i])
            share = min(shared / sum(self.weight(w) for w in self.words[i]), shared / own)
            if share >= RESEMBLES_AT and (best is None or share > best[1]):
                best = (i, share)
        return best


_BUILT: dict[tuple[int, ...], _Vocabulary] = {}


def _vocabulary(entries: tuple[Any, ...]) -> _Vocabulary:
    """The vocabulary of these index entries, built once (the index is loaded once, so its entries stay the same)."""
    key = tuple(id(e) for e in entries if e.indexed)
    if key not in _BUILT:
        _BUILT.clear()
        _BUILT[key] = _Vocabulary(entries)
    return _BUILT[key]


def resembling_hits(lines: Sequence[str], hits: Sequence[Hit], entries: tuple[Any, ...]) -> list[Hit]:
    """A hit for each line that holds no message but resembles an index message."""
    taken = {h.line for h in hits if h.entry.kind != "fact"}
    taken |= {h.line + d for h in hits if h.entry.kind != "fact" and h.wrapped for d in (-2, -1, 1)}
    vocabulary = None
    seen: dict[str, tuple[int, float] | None] = {}
    out = []
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if number in taken or not text or _FRAME.match(line):
            continue
        if text not in seen:
            if len(seen) >= LINES_MAX:
                break
            vocabulary = vocabulary or _vocabulary(entries)
            seen[text] = vocabulary.best(text)
        found = seen[text]
        if found is not None:
            out.append(Hit(vocabulary.entries[found[0]], number, text, {}, resembles=round(found[1], 2)))
    return out
