"""Read a message, a log or a traceback: which catalogue messages it holds and the facts they give."""

from __future__ import annotations

import ast
import html
import re
from functools import lru_cache
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

from ..errors import UsageError
from ..inputs import MAX_BYTES
from .catalogue import CONFIG_TARGETS, ENV_TARGETS, CatalogueEntry, set_backends
from .index import LIBRARY_BACKENDS
from .facts import check_text

MAX_TEXT = MAX_BYTES
"""A log larger than this is refused (64 MiB): `why` reads the whole text into memory."""
MAX_LINE = 20_000
"""Longer lines are cut before matching: a line of megabytes (a tensor dump) is no message."""

TE_BACKENDS = {"FlashAttention": "te-flash", "FusedAttention": "te-fused", "UnfusedDotProductAttention": "te-unfused",
               "UnusedDotProductAttention": "te-unfused"}
SDPA_BACKENDS = {"memory efficient": "sdpa-efficient", "memory efficient attention": "sdpa-efficient",
                 "mem efficient attention": "sdpa-efficient", "flash attention": "sdpa-flash",
                 "cudnn attention": "sdpa-cudnn", "cudnn mha": "sdpa-cudnn"}
NODE_BACKENDS = {"ScaledDotProductFlashAttentionBackward": "sdpa-flash",
                 "ScaledDotProductEfficientAttentionBackward": "sdpa-efficient",
                 "ScaledDotProductCudnnAttentionBackward": "sdpa-cudnn", "FusedAttnFuncBackward": "te-fused",
                 "FlashAttnFuncBackward": "flash-attn-2", "FlashAttnVarlenFuncBackward": "flash-attn-2",
                 "FlashAttnQKVPackedFuncBackward": "flash-attn-2", "FlexAttentionBackward": "flex-attention"}
"""Autograd's names for the backward nodes of the attention kernels (a traceback or anomaly-mode message)."""
OP_BACKENDS = {"scaled_dot_product_flash_attention": "sdpa-flash", "flash_attention_forward": "sdpa-flash",
               "flash_attention_backward": "sdpa-flash", "scaled_dot_product_efficient_attention": "sdpa-efficient",
               "efficient_attention_forward": "sdpa-efficient", "efficient_attention_backward": "sdpa-efficient",
               "scaled_dot_product_cudnn_attention": "sdpa-cudnn"}
"""ATen's ops of SDPA's kernels, as a traceback or an inductor assertion names them (without the leading '_')."""
IMPLEMENTATIONS = {"sdpa": ("sdpa-flash", "sdpa-efficient", "sdpa-cudnn", "sdpa-math"),
                   "flash_attention_2": ("flash-attn-2",), "flash_attention_3": ("flash-attn-3",),
                   "flex_attention": ("flex-attention",)}
"""transformers' attn_implementation values, as a message's placeholder prints them ("... not implemented for sdpa")."""
FRAMEWORK_BACKENDS = {**IMPLEMENTATIONS, "torch_sdpa": IMPLEMENTATIONS["sdpa"], "flex": ("flex-attention",),
                      "fa2": ("flash-attn-2",), "flash_attn": ("flash-attn-2",), "flash_attn_2": ("flash-attn-2",),
                      "fa3": ("flash-attn-3",), "flash_attn_3": ("flash-attn-3",), "fa4": ("flash-attn-4",),
                      "flash_attn_4": ("flash-attn-4",), "te": LIBRARY_BACKENDS["transformer-engine"],
                      "transformer_engine": LIBRARY_BACKENDS["transformer-engine"]}
"""The names training and serving frameworks log for the attention backend in use ("Using attention backend
'flex'", "attention_backend='fa3'"): transformers' names and their own."""
PACKAGE_BACKENDS = {**{name: LIBRARY_BACKENDS[name] for name in ("flash-attn", "flash-attn-3", "flash-attn-4",
                                                                  "transformer-engine", "xformers")},
                    "nvidia-cudnn-frontend": ("cudnn-fe",)}
"""Distribution names (dashes for underscores) a message's package placeholders print (pip's "X requires Y, but you
have Y ..."), and the backends they ship: the library's, except cudnn-frontend's wheel, which only cudnn-fe uses."""
PACKAGE_GROUPS = ("package", "requirement", "installed")
TE_MASKS = {"no_mask": "none", "causal": "causal", "padding": "padding", "padding_causal": "padding-causal",
            "causal_bottom_right": "causal-bottom-right", "padding_causal_bottom_right": "padding-causal-bottom-right",
            "arbitrary": "arbitrary"}
TE_BIASES = {"no_bias": "none", "post_scale_bias": "post-scale", "alibi": "alibi"}
TE_CONFIG_KEYS = {
    "transformer_engine_version": "te", "compute_capability": "gpu", "flash_attn_version": "flash_attn",
    "flash_attn_3_version": "flash_attn_3", "cudnn_version": "cudnn", "qkv_dtype": "dtype", "qkv_layout": "layout",
    "batch_size": "batch", "num_heads": "heads", "num_gqa_groups": "kv_heads", "max_seqlen_q": "seqlen_q",
    "max_seqlen_kv": "seqlen_kv", "head_dim_qk": "hdim", "head_dim_v": "hdim_v", "attn_mask_type": "mask",
    "window_size": "window", "core_attention_bias_type": "bias", "attention_dropout": "dropout",
    "deterministic": "deterministic", "is_training": "train", "fp8": "fp8", "cp_comm_type": "cp_comm",
}
"""TransformerEngine's `Running with config={...}` keys (dot_product_attention/utils.py, TE 2.x) -> our fields."""


class Hit(NamedTuple):
    """One catalogue message found in the text."""

    entry: CatalogueEntry
    line: int
    text: str
    groups: Mapping[str, str]
    wrapped: bool = False
    """Found only across lines a terminal or a web page wrapped (the message does not fit on its line)."""
    span: tuple[int, int] = (0, 0)
    """Where the match is on its line."""
    literal: tuple[tuple[int, int], ...] = ()
    """The stretches of its line that are the message's own words, not the values it printed into them."""
    resembles: float = 0.0
    """Not the message's wording but most of its words (this share): another release's form of it (why.resemble)."""


class Fact(NamedTuple):
    """A field's value as the text gives it, and where."""

    field: str
    value: Any
    line: int
    entry: str
    priority: int


class Reading(NamedTuple):
    """What the text says: the messages found, the facts (config, environment), and what frameworks say they did."""

    hits: tuple[Hit, ...]
    facts: Mapping[str, Fact]
    backends: tuple[str, ...]
    """The backends the text names (a warning about SDPA's flash kernel, an error inside TE's fused attention)."""
    framed: tuple[str, ...]
    """Those of them the text names around its messages, not through them: a call frame, a backward node, a
    framework's wrapper ("cuDNN Frontend error:"). They tell which of several libraries' copies of a message ran."""
    env_vars: Mapping[str, str]
    te_selected: str | None
    te_available: Mapping[str, bool]
    te_disabled: Mapping[str, tuple[str, ...]]
    ignored: tuple[str, ...]
    """Values the text gave that attndoctor cannot use (an unknown GPU name), each with its line."""
    lines: tuple[str, ...]


def read_source(text: str | None, log: str | None, stdin: Any) -> str:
    """The text to read: the argument, the file (`--log`), or standard input (`-` or piped)."""
    if log is not None and text not in (None, "-"):
        raise UsageError("give the text or --log FILE, not both")
    if log is not None:
        from ..inputs import describe, read_bytes

        accepted = "give a log or traceback as a text file, or pipe it in (... | attndoctor why -)"
        return check_text(read_bytes(log, describe(log, "log file", accepted, label=f"--log {log}")), f"--log {log}")
    if text is None or text == "-":
        if stdin is None or (text is None and stdin.isatty()):
            raise UsageError("no text to read; give the error message (attndoctor why 'No available kernel...'), "
                             "--log FILE, or pipe the log in (... | attndoctor why -)")
        from ..inputs import Input, read_stream

        data = read_stream(getattr(stdin, "buffer", stdin), Input("standard input", "log",
                                                                  "cut the part around the error"))
        return check_text(data, "standard input")
    return check_text(text, "the text")


_REQUIREMENT = re.compile(r"(?i)\b(?:requires?|required|needs?|only (?:supports?|runs? on|works? on)|"
                          r"supported (?:only )?on|must (?:be|have)|at least)\b[^.;!?]*$")
"""Words that turn what follows on the line, up to the end of the sentence, into what a check accepts."""
_PASTED = str.maketrans({
    **dict(zip("\u2018\u2019\u201a\u201b\u201c\u201d\u201e\u201f", "\'\'\'\'\"\"\"\"")),
    **dict.fromkeys("\u00a0\u2007\u2009\u200a\u202f\u3000", " "), **dict.fromkeys("\u200b\u200c\u200d\u2060\ufeff"),
    **{0xFF01 + i: 0x21 + i for i in range(94)}})
"""What a web page, a chat or an East Asian keyboard made of the characters a library printed: curly quotes,
no-break and ideographic spaces, zero-width marks, full-width punctuation."""
_COLOR = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
"""A terminal's color and title codes, which a log captured from a colored terminal keeps."""
_ENTITY = re.compile(r"&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|quot|apos|amp|lt|gt|nbsp);")
_STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?"
_LEVEL = r"(?:TRACE|DEBUG|INFO|SUCCESS|WARNING|WARN|ERROR|CRITICAL|FATAL)"
_DECORATION = re.compile(
    r"^(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?Z?\s+"                    # a CI runner's time stamp
    r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d [\w.\-]+ [\w.\-/]+(?:\[\d+\])?: " # journald / syslog
    r"|[\w.\-]+-\d+\s+\| "                                                    # docker compose's service-N |
    r"|\[rank\d+\]:\s?"                                                       # torchrun's rank tag
    r"|\((?:\w+)(?:[ =,.:\w\-]*)?\) (?=\S)"                                   # ray's and vLLM's process tag
    r"|\[pod/[^\]]*\] "                                                       # kubectl logs --prefix
    r"|\d{1,4}: (?=\S)"                                                       # srun --label
    r"|(?:>(?: |$))+"                                                         # a mail reply's or a forum's quote marks
    rf"|{_STAMP}(?: - [^\s\-][^\n]*?)?? - {_LEVEL} - "                        # Python logging: time - name - level -
    rf"|{_STAMP} \| *{_LEVEL} *\| [\w.<>\-]+:[\w.<>\-]+:\d+ - "               # loguru
    rf"|\[{_STAMP}\] (?:\[{_LEVEL}\] )?(?:\[[\w.\-]+:\d+:[\w<>]+\] )?"        # DeepSpeed
    rf"|{_LEVEL}:[\w.\-]+:(?=\S)"                                             # Python logging's default (ERROR:root:)
    rf"|{_LEVEL} \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[[\w.\-]+:\d+\] "        # vLLM
    r"|[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ [\w.\-]+:\d+\] "                # glog (C++ libraries)
    r"|E {7}"                                                                 # pytest's error column
    r")+")
"""What a launcher, a log collector, a logger, a test runner or a quoting reply puts before each line a program
printed: none of it says what went wrong, checks that read a report's line from its start would miss it, and a
message wrapped over lines is found only once its continuation is its own words again."""


_FENCE = re.compile(r"^\s*(?:```|~~~)[\w+\-. ]*$")
"""A Markdown code fence's line (```python, ```): where a paste in an issue or a chat begins and ends."""


_ESCAPE = re.compile(r'\\(?:r\\n|[nt"\\/])')
_ESCAPED = {"\\n": "\n", "\\r\\n": "\n", "\\t": "\t", '\\"': '"', "\\\\": "\\", "\\/": "/"}


def _unescaped(text: str) -> str:
    """A log record that carries the program's output as one escaped string (a JSON log line, a repr) as the lines
    the program printed; a text with more real line breaks than escaped ones is left as it is."""
    escaped = text.count("\\n")
    if escaped < 2 or escaped <= text.count("\n"):
        return text
    return _ESCAPE.sub(lambda m: _ESCAPED[m.group(0)], text)


def as_printed(line: str) -> str:
    """A pasted line with the characters its library printed: the paste's own additions taken back."""
    if _FENCE.match(line):
        return ""
    if "\x1b" in line:
        line = _COLOR.sub("", line)
    if "&" in line:
        line = _ENTITY.sub(lambda m: html.unescape(m.group(0)).replace("\n", " "), line)
    line = line.translate(_PASTED)
    bare = line.lstrip(" \t")  # a block indented as Markdown code, decorations and all
    found = _DECORATION.match(bare)
    return bare[found.end():] if found else line


def read_text(text: str, catalogue: Iterable[CatalogueEntry]) -> Reading:
    """Find every catalogue message in the text and collect the facts they give (higher priority, then first, wins)."""
    if not text.strip():
        raise UsageError("the text is empty; give the error message, a log (--log FILE) or pipe one in")
    lines = tuple(as_printed(line[:MAX_LINE]) for line in _unescaped(text).splitlines())
    entries = tuple(catalogue)
    hits = _find_hits(lines, entries)
    from .resemble import resembling_hits

    hits += resembling_hits(lines, hits, entries)
    found = _Collected()
    for hit in hits:
        if not _quoted(hit, hits, lines):
            found.take(hit)
    from .facts import merge_facts

    facts = found.facts
    for field, values in found.conflicts.items():  # several calls' values: the text does not say which one failed
        facts.pop(field, None)
        found.ignored.append(f"{field}: {', '.join(map(str, dict.fromkeys(values)))} (several values, none taken)")
    found.ignored.extend(merge_facts(facts, lines, Fact, _value, ENV_TARGETS))
    if "seqlen" in facts:
        seqlen = facts.pop("seqlen")
        for field in ("seqlen_q", "seqlen_kv"):
            if field not in facts or facts[field].priority < seqlen.priority:
                facts[field] = seqlen._replace(field=field)
    return Reading(hits=tuple(hits), facts=facts, backends=tuple(found.backends), framed=tuple(found.framed),
                   env_vars=found.env_vars, te_selected=found.te_selected, te_available=found.te_available,
                   te_disabled={k: tuple(v) for k, v in found.te_disabled.items()}, ignored=tuple(found.ignored),
                   lines=lines)


def _find_hits(lines: tuple[str, ...], entries: tuple[CatalogueEntry, ...]) -> list[Hit]:
    """Every place a catalogue message occurs: on its line, or wrapped over the lines around it."""
    hits: list[Hit] = []
    for number, entry in _candidate_lines(lines, entries):
        found: list[Hit] = []
        whole = False
        for match in entry.pattern.finditer(lines[number - 1]):
            groups = {k: v.strip() for k, v in match.groupdict().items() if v is not None}
            text = match.group(0)
            # a message opening with a placeholder matches the line's indentation too: its span is the message's
            start, end = match.start() + len(text) - len(text.lstrip()), match.end() - len(text) + len(text.rstrip())
            found.append(Hit(entry, number, text.strip(), groups, span=(start, end), literal=_own_words(match)))
            whole = whole or match.re.pattern == entry.pattern.pattern
        if not whole and entry.literals and entry.kind != "fact" and (not found or "\n" not in entry.template):
            # only the first sentence of a one-line message on the line: the rest may be where a wrap put it
            hit = _wrapped_hit(lines, number, entry)
            if hit is not None and all(len(hit.text) > len(h.text) for h in found) and not any(
                    h.entry is entry and abs(h.line - number) <= 2 for h in hits):
                found = [hit]
        hits += found
    return hits


def _own_words(match: re.Match[str]) -> tuple[tuple[int, int], ...]:
    """The parts of a match outside its named groups."""
    cuts = sorted(match.span(name) for name, value in match.groupdict().items() if value is not None)
    out, at = [], match.start()
    for start, end in cuts:
        if start > at:
            out.append((at, start))
        at = max(at, end)
    if match.end() > at:
        out.append((at, match.end()))
    return tuple(out)


def first_hits(hits: Iterable[Hit]) -> list[Hit]:
    """The first hit of each message, in the text's order."""
    first: dict[str, Hit] = {}
    for hit in hits:
        first.setdefault(hit.entry.id, hit)
    return list(first.values())


def _quoted(hit: Hit, hits: list[Hit], lines: Sequence[str]) -> bool:
    """Whether a loose value fact ('fp16' anywhere) is only a word of a library message on its line ("FlashAttention
    only supports fp16 and bf16"), or of a requirement the line states in any words ("backward requires A100 or
    H100"): the text says what is accepted, not what the user ran."""
    if hit.entry.kind != "fact" or hit.wrapped or not hit.groups:
        return False
    start, end = hit.span
    if hit.entry.library == "text" and 0 < hit.line <= len(lines) and _REQUIREMENT.search(lines[hit.line - 1][:start]):
        return True
    return any(other.entry.kind != "fact" and other.line == hit.line and
               any(a <= start and end <= b for a, b in other.literal) for other in hits)


class _Collected:
    """What the hits say, gathered hit by hit: facts, the backends named and framed, TransformerEngine's story."""

    def __init__(self) -> None:
        self.facts: dict[str, Fact] = {}
        self.ignored: list[str] = []
        self.backends: list[str] = []
        self.framed: list[str] = []
        self.env_vars: dict[str, str] = {}
        self.te_selected: str | None = None
        self.te_available: dict[str, bool] = {}
        self.te_disabled: dict[str, list[str]] = {}
        self.conflicts: dict[str, list[Any]] = {}
        """Config fields the text gives several values of, equally sure (the lines of several calls)."""

    def give(self, field: str, raw: Any, hit: Hit, priority: int | None = None) -> None:
        value = _value(field, raw)
        if value is None:
            self.ignored.append(f"line {hit.line}: {field} {raw!r} (not understood)")
            return
        rank = hit.entry.priority if priority is None else priority
        old = self.facts.get(field)
        if old is None or rank > old.priority:
            self.facts[field] = Fact(field, value, hit.line, hit.entry.id, rank)
            self.conflicts.pop(field, None)
        elif rank == old.priority and value != old.value and field in CONFIG_TARGETS:
            self.conflicts.setdefault(field, [old.value]).append(value)

    def name(self, backends: Iterable[str], *, framed: bool = True) -> None:
        self.backends.extend(b for b in backends if b not in self.backends)
        if framed:
            self.framed.extend(b for b in backends if b not in self.framed)

    def take(self, hit: Hit) -> None:
        entry = hit.entry
        if entry.kind != "fact" and len(entry.backends) == 1:
            self.name(entry.backends, framed=False)
        for group, value in hit.groups.items():
            self.name(IMPLEMENTATIONS.get(value.strip("`'\" ").lower(), ()) or (
                PACKAGE_BACKENDS.get(value.lower().replace("_", "-"), ()) if group in PACKAGE_GROUPS else ()))
        for group, target in entry.facts.items():
            raw = hit.groups.get(group)
            if raw is not None:
                self._fact(target, raw, hit)
        for target, value in entry.sets.items():
            if target == "backend":
                self.name(set_backends(entry))
            else:
                self.give(target, value, hit)
        self._te(hit)

    def _fact(self, target: str, raw: str, hit: Hit) -> None:
        if target == "backend":
            backend = (TE_BACKENDS.get(raw.split()[0]) or SDPA_BACKENDS.get(raw.lower()) or NODE_BACKENDS.get(raw)
                       or OP_BACKENDS.get(raw.removesuffix("_backward")))
            if backend:
                self.name((backend,))
            elif raw.lower().replace("-", "_") in FRAMEWORK_BACKENDS:
                self.name(FRAMEWORK_BACKENDS[raw.lower().replace("-", "_")])
        elif target == "selected":
            self.te_selected = TE_BACKENDS.get(raw)
        elif target == "env_var":
            name, _, value = raw.partition("=")
            self.env_vars[name] = value
        else:
            self.give(target, raw, hit)

    def _te(self, hit: Hit) -> None:
        """TransformerEngine's debug lines: the config it printed, the backends it had, the ones it turned off."""
        entry = hit.entry
        if entry.parse == "te-config":
            for key, value in _python_dict_items(hit.text):
                target = TE_CONFIG_KEYS.get(key)
                if target == "fp8":
                    if value is True:
                        self.give("dtype", "fp8", hit)
                elif target is not None and value is not None:
                    self.give(target, value, hit)
        elif entry.parse == "te-backends":
            for name, value in re.findall(r"(\w+)=(True|False)", hit.groups.get("available", "")):
                if name in TE_BACKENDS:
                    self.te_available[TE_BACKENDS[name]] = value == "True"
        if entry.id == "TE-DEBUG-DISABLING":
            backend = TE_BACKENDS.get(hit.groups.get("te_backend", "").split()[0])
            if backend:
                self.te_disabled.setdefault(backend, []).append(hit.text)


WRAP_REACH = 320
"""How many characters of the lines before and after a line a wrapped message is looked for in: a message of a few
sentences wrapped at 80 columns or narrower."""


def _reach(lines: Sequence[str], indices: Iterable[int]) -> int:
    """How many of the lines at `indices` (taken in order) hold the first WRAP_REACH characters, blank lines ending it."""
    taken = length = 0
    for i in indices:
        if length >= WRAP_REACH or not lines[i].strip():
            break
        taken, length = taken + 1, length + len(lines[i].strip()) + 1
    return taken


def _wrapped_hit(lines: tuple[str, ...], number: int, entry: CatalogueEntry) -> Hit | None:
    """The entry's message across the line and its neighbours joined as one: a message a terminal, a mail or a web
    page wrapped ("... only supported in Hopper and" / "above : 80.") is found where its longest literal part is. Only
    a match that runs over from the line into a neighbour counts."""
    first = number - 1 - _reach(lines, range(number - 2, -1, -1))
    parts = [line.strip() for line in lines[first:number + _reach(lines, range(number, len(lines)))]]
    # a terminal wraps at its width, inside a word as well ("failed to dispatch grou" / "p_size 5")
    for glue in (" ", ""):
        start = sum(len(p) + len(glue) for p in parts[:number - 1 - first])
        end = start + len(parts[number - 1 - first])
        for match in entry.pattern.finditer(glue.join(parts)):
            if match.start() < end and match.end() > start and (match.start() < start or match.end() > end):
                groups = {k: v for k, v in match.groupdict().items() if v is not None}
                return Hit(entry, number, match.group(0).strip(), groups, wrapped=True)
    return None


_WORD = re.compile(r"\w+")
_INNER_WORD = re.compile(r"(?<=\W)\w+(?=\W)")
"""A word of a literal with a non-word character on either side inside it: wherever the literal occurs, a whole word."""


@lru_cache(maxsize=None)
def _inner_words(literal: str) -> tuple[str, ...]:
    return tuple(_INNER_WORD.findall(literal))


def _candidate_lines(lines: tuple[str, ...], entries: tuple[CatalogueEntry, ...]) -> list[tuple[int, CatalogueEntry]]:
    """(line number, entry) for every line that holds one of the entry's required literals, in text order then
    catalogue order; an entry without literals is tried on every line. A long log of ordinary lines then costs a
    few substring scans of the whole text instead of every pattern on every line."""
    from bisect import bisect_right

    texts: dict[bool, list[tuple[str, list[int]]]] = {}
    # a literal a wrap split is still found, also where the wrap indented its second line (a text without indented
    # lines is scanned once)
    strips = (str.rstrip, str.strip) if any(line[:1].isspace() for line in lines) else (str.rstrip,)
    for fold, strip in ((fold, strip) for strip in strips for fold in (False, True)):
        seen = [strip(line).lower() for line in lines] if fold else [strip(line) for line in lines]
        starts = [0]
        for line in seen:
            starts.append(starts[-1] + len(line) + 1)
        texts.setdefault(fold, []).append((" ".join(seen), starts))
    every = [i for i, line in enumerate(lines) if line.strip()]
    # a literal can be in the text only where every word it holds whole is one of the text's: most of the index's
    # thousands of messages are then ruled out without a scan of a long log
    present = {fold: frozenset(_WORD.findall(variants[0][0])) for fold, variants in texts.items()}
    wanted: dict[int, set[int]] = {}
    for index, entry in enumerate(entries):
        if entry.literals is None:
            for i in every:
                wanted.setdefault(i, set()).add(index)
            continue
        for literal, fold in entry.literals:
            if not present[fold].issuperset(_inner_words(literal)):
                continue
            for joined, starts in texts[fold]:
                at = joined.find(literal)
                while at >= 0:
                    i = bisect_right(starts, at) - 1
                    wanted.setdefault(i, set()).add(index)
                    at = joined.find(literal, starts[i + 1])
    return [(i + 1, entries[k]) for i in sorted(wanted) for k in sorted(wanted[i])]


def _python_dict_items(text: str) -> Iterable[tuple[str, Any]]:
    """The 'key': value pairs of a printed Python dict, each value read as a literal when it is one."""
    for match in re.finditer(r"'(\w+)':\s*((?:\((?:[^()]|\([^()]*\))*\))|tensor\(\d+[^)]*\)|'[^']*'|<[^>]*>|[^,}]+)",
                             text):
        key, raw = match.group(1), match.group(2).strip()
        tensor = re.match(r"tensor\((\d+)", raw)
        if tensor:
            yield key, int(tensor.group(1))
            continue
        try:
            yield key, ast.literal_eval(raw)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            yield key, raw


RELEASE_TRIPLES = frozenset({"flash_attn", "flash_attn_3", "flash_attn_4"})
"""Packages whose releases always have three parts or more (2.7.4, 4.0.0b36)."""


def _value(field: str, raw: Any) -> Any:
    """A fact's value in attndoctor's vocabulary, or None when the text's value cannot be used."""
    from ..config import DTYPE_ALIASES, DTYPES, LAYOUTS

    text = str(raw).strip()
    if field in ("batch", "heads", "kv_heads", "seqlen", "seqlen_q", "seqlen_kv", "hdim", "hdim_v", "cp"):
        digits = re.match(r"\d+$", text)
        return int(text) if digits and int(text) > 0 else None
    if field == "dtype":
        key = text.lower().replace("torch.", "").rstrip(".,;:")
        key = DTYPE_ALIASES.get(key, DTYPE_ALIASES.get(f"torch.{key}", key))
        return key if key in DTYPES else None
    if field in ("train", "deterministic"):
        return raw if isinstance(raw, bool) else {"true": True, "false": False}.get(text.lower())
    if field == "mask":
        return TE_MASKS.get(text, text if text in TE_MASKS.values() else None)
    if field == "bias":
        return TE_BIASES.get(text, text if text in TE_BIASES.values() else None)
    if field == "layout":
        return text if text in LAYOUTS else None
    if field == "window":
        if isinstance(raw, tuple) and len(raw) == 2 and all(isinstance(v, int) for v in raw):
            return f"{raw[0]},{raw[1]}"
        return None
    if field in ("dropout", "softcap"):
        try:
            return float(raw)
        except (TypeError, ValueError):
            return None
    if field == "cp_comm":
        return text if text in ("p2p", "a2a", "all_gather", "a2a+p2p") else None
    if field == "gpu":
        return _gpu(text)
    if field in ENV_TARGETS:
        if text.lower() in ("not installed", "none"):
            return "none"
        if field == "cudnn":
            from ..environment import cudnn_from_integer

            text = cudnn_from_integer(text)
        version = re.match(r"v?(\d+(?:\.\d+)+(?:(?:\.post|\.dev|rc|a|b)\d+)?)", text)
        if version and field in RELEASE_TRIPLES and version.group(1).count(".") < 2:
            return None  # "Flash Attention 2.0" names the kernel generation; flash-attn releases have three parts
        return version.group(1) if version else None
    return raw if field in CONFIG_TARGETS else None


def _gpu(text: str) -> str | None:
    """A GPU name or architecture the environment understands (H100, sm90, 12.0), else None."""
    from ..gpus import resolve_gpu

    candidates = [text]
    if re.fullmatch(r"\d{2,3}", text):
        candidates = [f"sm{text}"]
    elif re.fullmatch(r"\d+\.\d", text):
        candidates = [f"sm{text.replace('.', '')}"]
    elif re.fullmatch(r"(?i)rtx ?\d{4}", text):
        candidates = [f"RTX {text[-4:]}", f"rtx{text[-4:]}"]
    for candidate in candidates:
        try:
            resolve_gpu(candidate)
            return candidate
        except UsageError:
            continue
    return None
