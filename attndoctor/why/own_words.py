"""A cause read off the error's own words where no known message and no rule explains the text: an error that says
"only head dimension 128 is supported" is about the head dim, whoever printed it."""

from __future__ import annotations

import re
from typing import Any, Mapping, NamedTuple, Sequence

from .candidate import Candidate
from .fixes import backend_package, generic_fix, own_advice, raising_package
from .reader import FRAMEWORK_BACKENDS, IMPLEMENTATIONS
from .topics import EXTENSION_FILE, text_topics

_SERVING_PREFIX = (r"(?:\([^)]*\)\s*)*(?:(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\s+\d\d-\d\d\s+[\d:.]+\s+"
                   r"\[?[\w.\-]+:\d+\]\s*)?")
"""vLLM's logger before each relayed line: "(VllmWorker rank=0 pid=2) ERROR 07-07 13:43:36 [file.py:226] "."""
_RAISED = re.compile(
    r"^\s*" + _SERVING_PREFIX + r"(?:\[[^\]]*\]:?\s*)*(?:(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)|OutOfResources|"
    r"Assertion failed|panic|LLVM ERROR)\s*:\s*(?P<message>\S.*)$")
"""An exception's line (RuntimeError: ..., [rank0]: torch._inductor.exc.InductorError: ..., Assertion failed: ...),
a Go program's panic (Ollama's runner: "panic: failed to sample token ...") or a compiler crash in LLVM's words
(triton's backend: "LLVM ERROR: Cannot select: ..." before the abort)."""
_TAGGED = re.compile(r"^\s*(?:(?:\[[^\]]*\]\s*)*\[(?:ERROR|FATAL|E)\]\s*:?|!!! Exception during processing !!!)\s*"
                     r"(?P<message>\S.*)$", re.I)
"""A logger's error line ([TensorRT-LLM][ERROR] ..., ComfyUI's "!!! Exception during processing !!! ...")."""
_UNREACHABLE = re.compile(r"^\s*UNREACHABLE executed at \S+")
"""LLVM's llvm_unreachable: its message is the line above, when it has one."""
_RAISED_BY = re.compile(r"^(?:(?:[A-Za-z_]\w*\.)+[A-Z]\w*|[A-Z]\w*(?:Error|Exception|Warning))\s*:\s*")
"""The exception class a line starts with (triton.runtime.errors.OutOfResources: ...): who raised it, not what."""
_BARE_ASSERT = re.compile(r"^\s*(?:\[[^\]]*\]:?\s*)*AssertionError\s*$")
"""An assertion that failed without a message: the statement Python shows above it is all it says."""
_ASSERT_LINE = re.compile(r"^\s*(?:\[[^\]]*\]:?\s*)*(?P<statement>assert\s+\S.*?)\s*$")
_COMPLAINT = re.compile(r"\b(?:not (?:found|installed|available|compatible|supported)|incompatible|unsupported|"
                        r"cannot|can't|unable to|failed to|forcing off|falling back|fall back)\b", re.I)
"""What a log line says when something did not work, without raising (a warning, a fallback)."""
_ATTENTION_WORD = re.compile(r"attn|attention|flash|sdpa|xformers|sage|fmha|cudnn", re.I)
_LOGGED = re.compile(r"^\s*(?:\[[^\]]*\]\s*)*(?:[A-Za-z_][\w.]*:\s+)?")
"""A logger's prefix before the message (llama_new_context_with_model: ..., [rank0] x: ...)."""
_PATH = re.compile(r"\S*[\\/]\S*")
"""A file path in a message: its folder names (ComfyUI_windows_portable) are not what the message is about."""
SHORT = 2
"""A text of at most this many lines is the message itself, whatever its first word."""
MIN_CHARS = 12
"""A shorter message ("AssertionError: ") names nothing."""


def _folders(path: re.Match[str]) -> str:
    """A path's words are not the message's, except an extension's compiled file: the import failed on the binary."""
    return path.group(0) if EXTENSION_FILE.search(path.group(0)) else " "


_SIZES = re.compile(r"size of tensor a \((?P<a>\d+)\) must match the size of tensor b \((?P<b>\d+)\) at non-singleton "
                    r"dimension (?P<dim>\d+)")
"""PyTorch's broadcast error (ATen's infer_size): two tensors differ in one axis."""
_VIEW = re.compile(r"shape '\[(?P<shape>[-\d, ]+)\]' is invalid for input of size (?P<size>\d+)")
"""PyTorch's view error: the new shape does not hold the tensor's elements."""


_NONE_CALLED = re.compile(r"'NoneType' object is not callable")
_ATTENTION_CALL = re.compile(r"\b(?P<name>\w*(?:attn|attention|flash|sdpa|fmha|sage)\w*)\s*\(", re.I)
"""A call of an attention function on a traceback's code line (x = sageattn(q, k, v))."""
LOOK_BACK = 4
"""Lines above an error searched for the call that raised it."""


def _above(lines: Sequence[str], number: int) -> list[str]:
    """The LOOK_BACK lines above line `number`, nearest first: where a traceback shows the code that raised."""
    return list(reversed(lines[max(0, number - 1 - LOOK_BACK):number - 1]))


def none_called(lines: Sequence[str], number: int) -> str:
    """The attention function a "'NoneType' object is not callable" error called, from the code line above it: a
    name the program set to None when its optional import failed; '' when the error is another or names none."""
    if not _NONE_CALLED.search(lines[number - 1]):
        return ""
    for line in _above(lines, number):
        found = _ATTENTION_CALL.search(line)
        if found and not line.lstrip().startswith("File "):
            return found["name"]
    return ""


def shape_topics(message: str) -> tuple[str, ...]:
    """("gqa",) where the shapes in a PyTorch size error differ on the heads axis by a whole factor: 32 query heads
    beside 8 key/value heads broadcast, or K/V of 8 heads viewed as 64."""
    sizes = _SIZES.search(message)
    if sizes:
        a, b = sorted((int(sizes["a"]), int(sizes["b"])))
        return ("gqa",) if sizes["dim"] == "1" and 1 < a < b and b % a == 0 else ()
    view = _VIEW.search(message)
    dims = [int(d) for d in view["shape"].split(",") if d.strip()] if view else []
    if len(dims) != 4 or min(dims) < 1:
        return ()
    size = int(view["size"])
    for axis in (1, 2):  # (batch, heads, seq, dim) or (batch, seq, heads, dim)
        rest = dims[0] * dims[1] * dims[2] * dims[3] // dims[axis]
        heads = size // rest if size % rest == 0 else 0
        if 1 <= heads < dims[axis] and dims[axis] % heads == 0:
            return ("gqa",)
    return ()


_EXPANDED = re.compile(r"expanded size of the tensor \(\d+\) must match the existing size")
"""PyTorch's expand error: a tensor broadcast to a shape its axes do not fit."""
_MASK_CODE = re.compile(r"\b\w*(?:attention|attn|causal|padding)_mask\b")
"""An attention mask by the names model code gives it (attention_mask, attn_mask, causal_mask, key_padding_mask)."""


def reshaped_mask(lines: Sequence[str], number: int, message: str) -> str:
    """The code line above a size, view or expand error when it reshapes or broadcasts an attention mask
    (attention_mask.view(batch_size, -1)): the mask's shape is what does not fit; '' otherwise."""
    if not (_SIZES.search(message) or _VIEW.search(message) or _EXPANDED.search(message)):
        return ""
    for line in _above(lines, number):
        code = line.strip()
        if code and not code.startswith("File ") and code.strip("^~ "):
            return code if _MASK_CODE.search(code) else ""
    return ""


PRINTER = "the library that printed it"
"""Who printed a line when no traceback frame shows whose code raised it."""


class _Printer(NamedTuple):
    """Who printed the line, as generic_fix asks for it: nobody the index knows."""

    library: str = PRINTER
    note: str = ""
    source: tuple[str, ...] = ()


def error_line(lines: Sequence[str]) -> tuple[int, str] | None:
    """(line number, message) of the text's last error: an exception's line, a logger's error line, or the text
    itself when it is a line or two."""
    for number in range(len(lines), 0, -1):
        if _BARE_ASSERT.match(lines[number - 1]):
            statement = failed_assert(lines, number)
            if statement:
                return number, statement
        found = _RAISED.match(lines[number - 1]) or _TAGGED.match(lines[number - 1])
        if found and len(found.group("message").strip(" `'\"")) >= MIN_CHARS:
            return number, message_part(found.group("message") + _wrapped_on(lines, number)).strip(" `")
        above = lines[number - 2].strip() if number > 1 and _UNREACHABLE.match(lines[number - 1]) else ""
        if len(above) >= MIN_CHARS:
            return number - 1, above
    records = [n for n, line in enumerate(lines, 1) if line.strip(" `") and not _continues(lines, n)]
    last = (records[-1], message_part((lines[records[-1] - 1].strip() + _wrapped_on(lines, records[-1])).strip(" `"))
            ) if records else None
    complaint = _complaint(lines)
    if last and _ASSERT_LINE.match(lines[last[0] - 1]):
        return last  # a traceback whose paste ends at the failing assert's line, its AssertionError cut off
    if last and len(records) <= SHORT and len(last[1]) >= MIN_CHARS and not (
            complaint and not _ATTENTION_WORD.search(last[1])):
        return last
    return complaint


WRAP_WIDTH = 72
"""A line at least this long may have been wrapped by a terminal, a mail or a page; a shorter one ended itself."""
_NEW_RECORD = re.compile(r"^\s{2,}\S|^\s*(?:Traceback|During handling|The above exception|File \"|Aborted|"
                         r"Segmentation fault|Killed|Exit code|exit \d|(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\b)")
"""A line that starts a record of its own after an exception's line: a traceback's frame, a chained traceback, a
log line, the shell's word for how the program ended."""


def _wrapped_on(lines: Sequence[str], number: int, most: int = 4) -> str:
    """The rest of the message on line `number` that a wrap put on the lines after it ('' where the line ended
    itself): each following line while the one before is long enough to have been wrapped and it starts no record
    of its own."""
    rest = []
    for previous, line in zip(lines[number - 1:number - 1 + most], lines[number:number + most]):
        if (len(previous.rstrip()) < WRAP_WIDTH or not line.strip() or _NEW_RECORD.match(line)
                or _RAISED.match(line) or _TAGGED.match(line)):
            break
        rest.append(line.strip())
    return "".join(" " + part for part in rest)


def _continues(lines: Sequence[str], number: int) -> bool:
    """Whether line `number` is the rest of the line before it that a wrap put on a line of its own."""
    return number > 1 and bool(_wrapped_on(lines, number - 1, most=1))


def _complaint(lines: Sequence[str]) -> tuple[int, str] | None:
    """(line number, message) of the last log line that says an attention backend did not work, without raising."""
    for number in range(len(lines), 0, -1):
        message = _LOGGED.sub("", lines[number - 1]).strip(" `*")
        if _COMPLAINT.search(message) and _ATTENTION_WORD.search(message) and len(message) >= MIN_CHARS:
            return number, message
    return None


def failed_assert(lines: Sequence[str], number: int) -> str:
    """The `assert ...` statement a bare AssertionError on line `number` failed, from the traceback's code line
    above it; '' when none is shown."""
    for line in _above(lines, number):
        found = _ASSERT_LINE.match(line)
        if found:
            return found["statement"]
    return ""


def message_part(line: str) -> str:
    """The line without the exception classes it starts with (a chain: InductorError: RuntimeError: ...)."""
    while True:
        rest = _RAISED_BY.sub("", line, count=1)
        if rest == line:
            return line
        line = rest


_ASSERTED_AVAILABLE = re.compile(r"^assert\s+(?:\w+\.)*(?:is_(?P<call>\w+?)_available\(\)|(?P<flag>\w+?)_AVAILABLE)\s*$",
                                 re.I)


def asserted_available(message: str) -> str:
    """The package a failed `assert X_AVAILABLE` / `assert is_x_available()` asked for, lower case ('flash_attn_2');
    '' for another message."""
    found = _ASSERTED_AVAILABLE.match(message)
    return (found["call"] or found["flag"]).lower() if found else ""


UNSUPPORTED = re.compile(r"\b(?:does not|doesn't|do not|don't|is not|isn't|are not|aren't)\s+(?:currently\s+|yet\s+)?"
                         r"support(?:ed)?\b", re.I)
"""An error that says what is not supported ("SageAttention doesn't currently support training. Please use ...")."""


WORD_BACKENDS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple((re.compile(p, re.I), b) for p, b in (
    (r"flash[_ -]?(?:attention|attn)[_ -]?v?3\b|\bFA ?3\b", ("flash-attn-3",)),
    (r"flash[_ -]?(?:attention|attn)[_ -]?v?4\b|\bFA ?4\b", ("flash-attn-4",)),
    (r"flash[_ -]?(?:attention|attn)(?![_ -]?v?[34]\b)|\bFA ?2\b", ("flash-attn-2",)),
    (r"\bflex[_ ]?attention|\bblock[_ ]?masks?\b", ("flex-attention",)),
    (r"\bsdpa\b|scaled_dot_product_attention", IMPLEMENTATIONS["sdpa"]),
))
"""The attention an error names in its own words ("Sequence parallelism requires flash attention", "Block masks are
not implemented yet"): FlashAttention without a version is flash-attn 2, as the frameworks that print it mean."""


def word_backends(message: str) -> tuple[str, ...]:
    """The backends the one attention an error's words name stands for; none where they name several or none."""
    named = [backends for pattern, backends in WORD_BACKENDS if pattern.search(message)]
    return named[0] if len(named) == 1 else ()


def words_cause(reading: Any, score: float, packages: Mapping[str, str], fallback: tuple[str, ...] = ()) -> Any | None:
    """The error's own words as a candidate of `score`, when they name a kind of problem; None otherwise. Its
    backends are those the text names, else those the error's words name, else `fallback`."""
    found = error_line(reading.lines)
    if found is None:
        return None
    number, message = found
    called = none_called(reading.lines, number)
    backends = tuple(reading.framed or reading.backends) or word_backends(called or message) or fallback
    wanted = "" if called else asserted_available(message)
    if wanted:
        backends = FRAMEWORK_BACKENDS.get(wanted, ()) or backends
        package = backend_package(backends, packages) or wanted
        topics = ("install-missing",)
        reason = f"line {number} is a failed `{message}`: the program checked that {wanted} imported, and it did not"
        title = f"{wanted} is not available: its package did not import"
        cause = (f"the program requires {wanted} ({message}), which it found unavailable: {package} is not installed, "
                 "or does not import with this torch, CUDA and Python")
        fixes = (f"install {package} built for this torch, CUDA and Python and check that it imports (python -c "
                 f"\"import {package.replace('-', '_')}\"), or choose another attention in the program",)
    elif called:
        topics = ("install-missing",)
        reason = f"line {number} calls {called}, which is None: the program set it to None when its import failed"
        title = f"{called} is None: its package did not import"
        cause = (f"the program calls {called}, which it set to None because the package that provides it is not "
                 "installed or does not import")
        fixes = (f"install the package that provides {called} (built for this torch, CUDA and Python) and check that "
                 f"it imports, or choose another attention in the program than the one that calls {called}",)
    else:
        reshaped = reshaped_mask(reading.lines, number, message)
        topics = tuple(dict.fromkeys(t for t in (*text_topics(_PATH.sub(_folders, message)), *shape_topics(message),
                                                 *(("mask",) if reshaped else ())) if t != "other"))
        advice = own_advice(reading.lines, number)
        if not topics and advice and UNSUPPORTED.search(message):
            topics, fixes = ("other",), advice
            reason = (f"line {number} is an error no known message or rule explains; it says what is not supported "
                      "and what to use instead")
            title = f"the error on line {number} names what is not supported"
            cause = f"the error on line {number} says what is not supported: {message[:200]}"
        elif not topics:
            return None
        else:
            kinds = ", ".join(t.replace("-", " ") for t in topics)
            reason = (f"line {number} is an error no known message or rule explains; its own words are about: {kinds}"
                      + (f" (the code line above it reshapes an attention mask: {reshaped[:120]})" if reshaped else ""))
            title = f"the error on line {number} names its check itself"
            cause = f"the error on line {number} says what it checks ({kinds}): {message[:200]}"
            printer = _Printer(library=raising_package(reading.lines, number) or PRINTER, note=message[:160])
            fixes = (*advice, generic_fix(printer, topics, backends, message, packages))
    return Candidate(id="ERROR-OWN-WORDS", kind="words", score=score, reasons=(reason,), title=title, cause=cause,
                     fixes=fixes, backends=backends, applies=None, lines=(number,), topics=topics)
