"""How much a library's message on a line says about the cause: its kind, where it stands, how it matched."""

from __future__ import annotations

import re
from typing import Any, Sequence

from .index import LABELS, own_chars
from .similarity import WINDOW

CATALOGUE_CAUSE = 3.5
"""A catalogue message that carries its own cause and fix (a broken install, a driver error)."""
INDEXED_CAUSE = 3.0
"""A library's own message, read from its source: it names its check, though no rule models it."""
LOG_CAUSE = -0.5
"""Added to a log line that stands as a cause: only where no error or warning was recognised, and only a log about
a kind of problem ("Unable to import the official flash attention ...")."""
ERROR_LINE, LAST_ERROR = 0.3, 0.3
"""An error outranks a warning or log line about the same run, and the last error (the exception) the others."""
REPEATED, REPEATED_MAX = 0.2, 0.6
"""A message its line repeats (the reason every refused backend gives in one "No valid backend ... Reasons: {...}"
line) beats one reason of one backend."""
FALLBACK_OP = 0.4
"""Added to a reason xformers gives for its cutlass operator, the one that runs where no other does: the reasons of
an operator the GPU or the build rules out anyway (fa3F before Hopper, an unbuilt flash op) are not what to fix."""
_XFORMERS_OP = re.compile(r"(?:^|\s)`(?P<op>[\w@.\-]+)` is not supported because:")
RESEMBLED = -0.5
"""Added to a message the text holds only in other words (why.resemble): probably it, from a release not read."""
LOOSER = -0.5
"""Added to a message whose placeholders took words that another message on its line prints as its own (flash-attn 4's
"{name} must be contiguous" on PyTorch's "(*bias): last dimension must be contiguous"): the message whose own words
cover the line is the likelier source."""
RETIRED = -0.05
"""Added to an index message its library's later releases no longer print: where a current release prints the same
words, that one is the likelier source (the versions, when given, decide it)."""
NAMED_LIBRARY = 0.05
"""Added to an index message whose library the lines up to it name: of the libraries that print it word for word
(ms-swift's copy of transformers' warning, which says `Transformers version v5.0.0`), the one the text names."""
MESSAGE_ALONE = 1.5
"""Added to such a message when no rule that holds scores CAUSE_AT: a rule that may apply (its facts not given) is
a hypothesis, the message's own cause is what the text shows."""
CAUSE_AT = 3.0
"""The score from which the best candidate is named the likely cause (exit 0)."""


def message_score(entry: Any, hit: Any, reading: Any, best_rule: float, last_error: int,
                  problems: bool) -> tuple[float, list[str]]:
    """A message's score as a cause of its own, and the reasons that go with it."""
    score = (INDEXED_CAUSE if entry.indexed else CATALOGUE_CAUSE) + (MESSAGE_ALONE if best_rule < CAUSE_AT else 0.0)
    if entry.kind == "error":
        score += ERROR_LINE + (LAST_ERROR if hit.line == last_error else 0.0)
    elif entry.kind == "log" and not entry.fix:
        score += LOG_CAUSE
    opened, reasons = _matched(entry, hit, reading)
    score += opened + (RETIRED if entry.retired else 0.0)
    tighter = _tighter(hit, reading.hits)
    if tighter is not None:
        score += LOOSER
        reasons.append(f"its placeholders take words that the {tighter.entry.library} {tighter.entry.kind} on its "
                       "line prints as its own")
    ops = {_xformers_op(reading.lines, h.line) for h in reading.hits if h.entry.id == entry.id} - {""} \
        if entry.library == "xformers" else set()
    if any(op.startswith("cutlass") for op in ops):
        score += FALLBACK_OP
        reasons.append("it is a reason of xformers' cutlass operator, the one that runs where no other does")
    repeats = _repeats(entry, reading.lines[hit.line - 1]) if 0 < hit.line <= len(reading.lines) else 1
    if max(repeats, len(ops)) > 1:
        score += min(REPEATED_MAX, REPEATED * (max(repeats, len(ops)) - 1))
        reasons.append(f"its line gives it {repeats} times" if repeats >= len(ops) else
                       f"{len(ops)} of xformers' operators give it")
    return score, reasons


def _matched(entry: Any, hit: Any, reading: Any) -> tuple[float, list[str]]:
    """What a message's line adds by how it matched (in other words; beside its library's name where another library
    prints it too), and the reason that opens the message's list."""
    if hit.resembles:
        return RESEMBLED, [f"line {hit.line} resembles this {entry.library} {entry.kind} ({hit.resembles:.0%} of the "
                           "words in common): the same check, probably from a release whose wording was not read"]
    label = LABELS.get(entry.library, entry.library)
    near = " ".join(reading.lines[max(0, hit.line - WINDOW - 1):hit.line]).lower()
    shared = entry.indexed and any(h.line == hit.line and h.entry.indexed and h.entry.library != entry.library
                                   for h in reading.hits)
    named = shared and any(re.search(rf"(?<![\w-]){_spelled(n)}(?![\w-])", near) for n in {entry.library, label})
    return (NAMED_LIBRARY if named else 0.0), [f"line {hit.line} is this {entry.library} {entry.kind}"
                                                + (f", and the text names {label}" if named else "")]


def own_positions(hit: Any) -> set[int]:
    """Where on its line a hit's own words are (none for a hit found wrapped or in other words)."""
    if hit.line <= 0 or hit.wrapped or hit.resembles:
        return set()
    return {i for start, end in hit.literal for i in range(start, end)}


def _tighter(hit: Any, hits: Sequence[Any]) -> Any:
    """Another library message on the hit's line whose own words hold every one of the hit's own words and more, or,
    where either was found wrapped over lines, one that holds the hit's text and more of its own words (a
    hand-written entry's line is its own: the index's messages there stand aside)."""
    own = own_positions(hit) if hit.entry.indexed else set()
    if not own and not (hit.wrapped and hit.entry.indexed):
        return None
    return next((other for other in hits if other.entry.id != hit.entry.id and other.entry.kind != "fact"
                 and (_wraps(other, hit) if other.wrapped or hit.wrapped else other.line == hit.line
                      and own < own_positions(other))), None)


def _wraps(other: Any, hit: Any) -> bool:
    """Whether a message found over lines holds all of a hit's text and more, or as much with more words of its own:
    the hit's placeholders took what the other prints as its own words (flashinfer's "... version
    ({flashinfer_version}). {version_mismatch_hint}" against its earlier release's whole sentence, wrapped)."""
    return hit.text in other.text and (len(other.text) > len(hit.text) or (
        len(other.text) == len(hit.text) and own_chars(other.entry.template) > own_chars(hit.entry.template)))


def _spelled(name: str) -> str:
    """A library's name as people write it: SageAttention also as 'sage attention', 'sage_attention', 'sage-attention'."""
    return r"[\s_-]?".join(re.escape(part.lower()) for part in re.split(r"(?<=[a-z])(?=[A-Z])", name))


def _xformers_op(lines: Sequence[str], number: int) -> str:
    """The operator whose list of reasons ("`cutlassF-pt` is not supported because:") a line belongs to."""
    for line in reversed(lines[max(0, number - 12):number - 1]):
        found = _XFORMERS_OP.search(line)
        if found:
            return found.group("op")
    return ""


def _repeats(entry: Any, line: str) -> int:
    """How many times a line holds an entry's message (by its required literal)."""
    literals = [lit for lit, fold in (entry.literals or ()) if not fold and lit]
    return max((line.count(lit) for lit in literals), default=1) or 1


