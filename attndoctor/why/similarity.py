"""How much of a rule's symptom a text holds: words weighted by rarity across all symptoms, in windows of a few
lines of a long text."""

from __future__ import annotations

import math
import re
from typing import Iterable, Mapping, NamedTuple, Sequence

ENOUGH = 24.0
"""Weighted words in common that say "this symptom" on their own, however long the symptom (about three rare words)."""
WINDOW = 6
"""Lines compared at once with a symptom in a long text: a symptom is one message, not a whole log."""
CACHED_LINES = 100_000
"""Distinct lines whose words are remembered while a long log is read (a log repeats its lines)."""

STOP = frozenset("""a an and are as at be been but by can for from has have if in into is it its no not of on or
so that the then this to was when where which while with without got use used using error warning userwarning
runtimeerror typeerror valueerror assertionerror e.g eg ie etc than only does do more less""".split())
TOKEN = re.compile(r"[a-z][a-z0-9]+|\d+")


def tokens(text: str) -> set[str]:
    """The words of a text that can tell messages apart (lower case, no stop words, no one-letter words)."""
    return {t for t in TOKEN.findall(text.lower().replace("_", " ")) if t not in STOP}


class Similarity:
    """How much of each rule's symptom a text contains, words weighted by rarity across all symptoms (idf)."""

    def __init__(self, documents: Mapping[str, str]) -> None:
        self.words = {key: tokens(text) for key, text in documents.items()}
        count = len(self.words) or 1
        df: dict[str, int] = {}
        for words in self.words.values():
            for w in words:
                df[w] = df.get(w, 0) + 1
        self.idf = {w: math.log(1 + count / n) for w, n in df.items()}

    def windows(self, lines: Sequence[str], extra: Iterable[str] = ()) -> "Windows":
        """The text's word sets: the whole of a short text, windows of a few lines of a long one. Only words of the
        documents (and `extra`) are kept: a score depends on nothing else."""
        vocabulary = set().union(*self.words.values(), extra) if self.words else set(extra)
        kept = [line for line in lines if line.strip()]
        if len(kept) <= 2 * WINDOW:
            return Windows.of([tokens("\n".join(kept)) & vocabulary])
        cache: dict[str, frozenset[str]] = {}
        words = []
        folded = "\n".join(kept).lower().replace("_", " ").split("\n")
        for line in folded:
            found = cache.get(line)
            if found is None:
                found = frozenset(w for w in TOKEN.findall(line) if w in vocabulary and w not in STOP)
                if len(cache) < CACHED_LINES:
                    cache[line] = found
            words.append(found)
        step = max(1, WINDOW // 2)
        return Windows.of(frozenset().union(*words[i:i + WINDOW]) for i in range(0, len(words), step))

    def score(self, key: str, windows: "Windows") -> float:
        """The best share (0..1) of the document's weighted words found in one window; short documents count less."""
        words = self.words.get(key) or set()
        if not words:
            return 0.0
        total = sum(self.idf.get(w, 1.0) for w in words)
        best = windows.best({w: self.idf.get(w, 1.0) for w in words})
        shrink = min(1.0, len(words) / 4)
        return round(max(best / total * shrink, min(0.8, best / ENOUGH)), 3)


class Windows(NamedTuple):
    """A text's windows as one bit set per word (bit i: window i holds the word), so that the best window for a
    document is found by splitting the windows on the document's words, not by visiting each window: a long log of
    ordinary lines has thousands of windows and few of them differ in the words a document has."""

    bits: Mapping[str, int]
    count: int

    @classmethod
    def of(cls, windows: Iterable[Iterable[str]]) -> "Windows":
        where: dict[str, list[int]] = {}
        count = 0
        for i, window in enumerate(windows):
            count = i + 1
            for word in window:
                where.setdefault(word, []).append(i)
        bits = {}
        for word, found in where.items():
            raw = bytearray((count + 7) // 8)
            for i in found:
                raw[i >> 3] |= 1 << (i & 7)
            bits[word] = int.from_bytes(raw, "little")
        return cls(bits, count)

    def best(self, weights: Mapping[str, float]) -> float:
        """The largest sum of `weights` over the words one window holds."""
        present = sorted(((w, weight) for w, weight in weights.items() if w in self.bits),
                         key=lambda item: -item[1])
        if not present:
            return 0.0
        left = [0.0] * (len(present) + 1)
        for i in range(len(present) - 1, -1, -1):
            left[i] = left[i + 1] + present[i][1]
        best = 0.0
        stack = [((1 << self.count) - 1, 0, 0.0)]
        while stack:
            mask, i, weight = stack.pop()
            if weight + left[i] <= best:
                continue
            if i == len(present):
                best = weight
                continue
            word, value = present[i]
            inside = mask & self.bits[word]
            if mask & ~inside:
                stack.append((mask & ~inside, i + 1, weight))
            if inside:
                stack.append((inside, i + 1, weight + value))
        return best
