"""The message index (attndoctor/data/messages/*.jsonl, written by tools/messages): every message the attention
paths of the libraries print, read from their sources at each release, as catalogue entries the reader can find.

A pattern is compiled only when a line holds the longest literal part of its message, so thousands of messages
cost a few substring scans of the text, not thousands of regular expressions.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Mapping

from ..errors import RuleError
from .catalogue import TARGETS, CatalogueEntry

INDEX_DIR = Path(__file__).resolve().parent.parent / "data" / "messages"
LABELS: Mapping[str, str] = {
    "pytorch": "PyTorch", "inductor": "PyTorch inductor", "flash-attn": "flash-attn 2", "flash-attn-3": "flash-attn 3",
    "flash-attn-4": "flash-attn 4", "transformer-engine": "TransformerEngine", "cudnn-frontend": "cudnn-frontend",
    "transformers": "transformers", "diffusers": "diffusers", "vllm": "vLLM", "sglang": "SGLang", "xformers": "xformers", "triton": "triton",
    "cuda": "the CUDA runtime", "loader": "the dynamic loader", "sam2": "SAM 2", "llamafactory": "LLaMA-Factory", "sageattention": "SageAttention",
    "flashinfer": "FlashInfer", "megatron": "Megatron-LM", "ms-swift": "ms-swift", "unsloth": "Unsloth", "axolotl": "axolotl",
    "tgi": "text-generation-inference", "jax": "JAX", "natten": "NATTEN", "kernels": "the kernels hub (kernels)",
    "llama-cpp": "llama.cpp",
}
"""The libraries the index reads, as reports name them."""
RELEASED_AS: Mapping[str, str] = {"llama-cpp": "llama-cpp-python"}
"""Libraries read as another package bundles them: their releases are that package's versions."""
KIND_OF = {"error": "error", "assert": "error", "warning": "warning", "log": "log"}
LIBRARY_BACKENDS: Mapping[str, tuple[str, ...]] = {
    "cudnn-frontend": ("cudnn-fe", "sdpa-cudnn", "te-fused"), "flash-attn": ("flash-attn-2",),
    "flash-attn-3": ("flash-attn-3",), "flash-attn-4": ("flash-attn-4",), "inductor": ("flex-attention",),
    "transformer-engine": ("te-flash", "te-fused", "te-unfused"), "triton": ("flex-attention",),
    "xformers": ("sdpa-efficient", "flash-attn-2"),
}
"""The backends a library's message is about when the file it was read from does not say, and the ones it can reach
users through: cuDNN's messages through cudnn-frontend graphs, PyTorch's cuDNN attention and TransformerEngine's fused
attention; triton's through FlexAttention's compiled kernels (the one Triton backend here); xformers' through its
CUTLASS memory-efficient kernels (SDPA's memory-efficient backend came from them) and its flash-attn 2 build."""
PLACEHOLDER = re.compile(r"\{[^{}]*\}")
MIN_LITERAL = 8
"""A message whose longest literal part is shorter than this is too generic to point at anything."""


class LazyPattern:
    """A regular expression compiled at its first use (most index messages never meet a candidate line); where the
    whole message is not there, its first sentence (`head`) is looked for: a paste often ends there."""

    __slots__ = ("pattern", "head", "tail", "opening", "_compiled")

    def __init__(self, pattern: str, head: str | None = None, tail: str | None = None,
                 opening: str | None = None) -> None:
        self.pattern = pattern
        self.head = head
        self.tail = tail
        self.opening = opening
        self._compiled: tuple[re.Pattern[str], ...] | None = None

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        if self._compiled is None:
            self._compiled = (re.compile(self.pattern),) + _compiled_or_none(self.head) + _compiled_or_none(
                self.tail) + _compiled_or_none(self.opening)
        if len(self._compiled) == 1:
            return self._compiled[0].finditer(text)
        for form in self._compiled:
            found = list(form.finditer(text))
            if found:
                return iter(found)
        return iter(())


HEAD_MIN = 32
"""A first sentence shorter than this (its literal words) is too generic to stand for the whole message."""


def head_of(template: str, pattern: str) -> tuple[str, str] | None:
    """(first sentence or line, its pattern) of a message of several whose first one says enough on its own: its
    own words, placeholders aside, come to HEAD_MIN characters ("out of resource: {}, Required: {}, Hardware
    limit: {}"; xformers' "Invalid shape for attention bias: {} (expected {})" above its lines of shapes)."""
    plain = template.lstrip()  # the pattern leaves out a message's opening line break
    cut_t = min((i for i in (plain.find(". "), plain.find("\n")) if i >= 0), default=-1)
    if cut_t < 0:
        return None
    first = plain[:cut_t].rstrip()
    by_line = plain[cut_t] == "\n"
    pattern = pattern.removeprefix("\\s+") if by_line else pattern  # some patterns keep the opening line break
    cut_p = _line_break(pattern) if by_line else pattern.find("\\. ")
    if cut_p <= 0 or own_chars(first) < HEAD_MIN or len(literal_of(first)) < HEAD_LITERAL:
        return None
    head = pattern[:cut_p]
    if not by_line:
        return first, head + "\\.?"
    # the line ends where the message's first line did: its last value runs to there, its final stop is optional
    if head.endswith(".*?)"):
        head = head[:-4] + ".*)"
    elif head.endswith("\\."):
        head = head[:-2] + "\\.?"
    return first, head + r"(?=\s|$)"


def _line_break(pattern: str) -> int:
    """Where a pattern's first line break is (a message's line break is \\s+ in its pattern); -1 where it has none."""
    i = 0
    while i < len(pattern):
        if pattern.startswith("\\s+", i):
            return i
        i += 2 if pattern[i] == "\\" else 1
    return -1


HEAD_LITERAL = 12
"""The first sentence's longest literal, which a line must hold before the sentence is tried on it."""


def _escaped(template: str) -> str:
    """A template with its literal (doubled) braces set aside, so that PLACEHOLDER finds placeholders only."""
    return template.replace("{{", "\0").replace("}}", "\1")


def words_of(template: str, filler: str = "") -> str:
    """A template as its message prints it, each placeholder `filler`, literal braces single."""
    return PLACEHOLDER.sub(filler, _escaped(template)).replace("\0", "{").replace("\1", "}")


def own_chars(template: str) -> int:
    """How many characters of a template are the message's own words, not its placeholders."""
    return len(words_of(template))


TAIL_WORDS = 3
"""At most this many of a message's first words a paste may have left out ("Cannot use ", "FlashInfer Internal ")."""
_OPENING = re.compile(r"(?:\\.|[^\\()\[\].*+?{}|^$])*")
"""The literal a pattern opens with: escaped characters and plain ones, up to its first group or operator."""


def tail_of(template: str, pattern: str) -> str | None:
    """The pattern without the first words of its opening literal (at most TAIL_WORDS, keeping two): a paste that
    starts inside the message. None where what is left says too little on its own."""
    opening = _OPENING.match(pattern).group(0)
    spaces = [i for i, c in enumerate(opening) if c == " " and (i == 0 or opening[i - 1] != "\\")]
    drop = min(TAIL_WORDS, len(opening.split()) - 2, len(spaces))
    if drop < 1:
        return None
    cut = spaces[drop - 1] + 1
    if own_chars(template) - len(re.sub(r"\\(.)", r"\1", opening[:cut])) < HEAD_MIN:
        return None
    return pattern[cut:]


OPENING_MIN = 40
"""The words before a message's first value that stand for the whole message where a paste ends at that value."""


def opening_of(template: str, pattern: str) -> tuple[str, str] | None:
    """(words, pattern) of a message up to its first value, for a line that ends there ("Buffer overflow when
    allocating memory for batch_prefill_tmp_v" of FlashInfer's longer message): a paste cut short, or an older
    release's shorter form. None where the words before the value say too little or little follows it."""
    plain = _escaped(template)
    first = PLACEHOLDER.search(plain)
    if first is None or "\n" in plain[:first.start()] or own_chars(template[first.end():]) < MIN_LITERAL:
        return None
    words = plain[:first.start()].strip()
    start = pattern.find("(?P<")
    end = _group_end(pattern, start) if start > 0 else None
    if len(words) < OPENING_MIN or len(words.split()) < 5 or end is None:
        return None
    return words.replace("\0", "{").replace("\1", "}"), pattern[:end] + r"[ \t.]*$"


def _group_end(pattern: str, start: int) -> int | None:
    """Where the group that opens at `start` closes (escapes and character classes skipped); None if it does not."""
    depth, i, in_class = 0, start, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c in "()":
            depth += 1 if c == "(" else -1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _compiled_or_none(pattern: str | None) -> tuple[re.Pattern[str], ...]:
    """A head cut inside a group does not compile; the whole message is then the only form looked for."""
    try:
        return (re.compile(pattern),) if pattern else ()
    except re.error:
        return ()


def literal_of(template: str) -> str:
    """The longest literal part of a message template, within one of its lines and without the final stop people
    leave out when they quote it: every printed form of the message contains it."""
    pieces = PLACEHOLDER.split(_escaped(template))
    parts = [p.strip().strip("`'\"").strip() for piece in pieces for p in piece.split("\n")]
    best = max(parts, key=len, default="").rstrip(".:;!, ")
    return best.replace("\0", "{").replace("\1", "}")


_ONCE_GUARD = re.compile(r"^!\s*\w*(?:warn|print|logg?ed|once|shown|reported)\w*$", re.I)
"""A condition that only keeps a message from repeating (`if (!warned)`): no check behind the message."""


def meaning_of(record: Mapping[str, Any]) -> str:
    """One line: who prints the message and the check behind it."""
    label = LABELS.get(record["library"], record["library"])
    condition = " ".join(str(record.get("condition") or "").split())
    condition = "" if _ONCE_GUARD.match(condition) else condition
    if condition and record.get("trigger"):
        return f"{label} printed this when `{condition[:160]}`"
    if condition:
        return f"{label} printed this when its check `{condition[:160]}` failed"
    return f"{label} prints this {KIND_OF.get(record.get('kind', ''), 'message')}"


def to_entry(record: Mapping[str, Any], where: str) -> CatalogueEntry | None:
    """A catalogue entry for one index record; None for a message too generic to find."""
    template = str(record.get("template", ""))
    literal = literal_of(template)
    if len(literal) < MIN_LITERAL:
        return None
    pattern = record.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise RuleError("'pattern' missing", file=where, rule=str(record.get("id", "?")))
    head = head_of(template, pattern)
    if head is not None:
        literal = literal_of(head[0])
    opening = opening_of(template, pattern)
    extra = ((opening[0], False),) if opening and opening[0] not in literal else ()
    sources = tuple(f"{s.get('repo', '')} {s.get('path', '')}@{s.get('ref', '')}"
                    + (f":{s['line']}" if s.get("line") else "") for s in record.get("sources") or ())
    facts = {group: field for group, field in (record.get("facts") or {}).items() if field in TARGETS}
    return CatalogueEntry(
        id=str(record["id"]).upper(), library=str(record["library"]), kind=KIND_OF.get(record.get("kind", ""), "error"),
        pattern=LazyPattern(pattern, head[1] if head else None, tail_of(template, pattern),
                            opening[1] if opening else None), source=sources,
        backends=tuple(record.get("backend") or ()) or LIBRARY_BACKENDS.get(str(record["library"]), ()),
        rules=tuple(record.get("rules") or ()), facts=facts, sets={}, meaning=meaning_of(record), fix="",
        priority=-1, parse="", file=where, line=0, note=str(record.get("condition") or ""),
        literals=((literal, False), *extra), indexed=True, template=template,
        retired=str(record.get("retired") or ""), asserted=record.get("kind") == "assert")


@lru_cache(maxsize=2)
def load_index(directory: str | None = None) -> tuple[CatalogueEntry, ...]:
    """Every message of the index, as catalogue entries; an unreadable file raises RuleError naming it."""
    folder = Path(directory) if directory else INDEX_DIR
    out: list[CatalogueEntry] = []
    for path in sorted(folder.glob("*.jsonl")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            where = f"{path.name}:{number}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RuleError(f"not JSON ({exc.msg})", file=where) from None
            if not isinstance(record, dict) or "id" not in record or "library" not in record:
                raise RuleError("a message needs an id and a library", file=where)
            entry = to_entry(record, path.name)
            if entry is not None:
                out.append(entry)
    return tuple(out)
