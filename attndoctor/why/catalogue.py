"""The error catalogue (rules/errors.toml): messages as data, validated at load like the rules."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, NamedTuple

from ..engine.states import InstallKind
from ..errors import RuleError
from .literals import required_literals

from ..engine.rules import ERROR_CATALOGUE as CATALOGUE_FILE
"""The catalogue's file name in a rules folder; the rule loader skips it."""
LIBRARIES = ("pytorch", "cudnn-frontend", "flash-attn", "transformer-engine", "vllm", "cuda", "loader", "text", "python",
             "pip", "xformers", "transformers", "triton", "sam2", "llamafactory", "flashinfer", "qwen", "jax",
             "sageattention", "tgi")
KINDS = ("error", "warning", "log", "fact")
PARSERS = ("te-config", "te-backends")
INSTALL_KINDS = tuple(kind.value for kind in InstallKind)
"""The broken-install findings (attndoctor/engine/install.py) a message can be the symptom of."""
CONFIG_TARGETS = ("batch", "heads", "kv_heads", "seqlen", "seqlen_q", "seqlen_kv", "hdim", "hdim_v", "dtype", "train",
                  "mask", "window", "dropout", "softcap", "bias", "layout", "cp", "cp_comm", "deterministic")
ENV_TARGETS = ("gpu", "torch", "cuda", "cudnn", "flash_attn", "flash_attn_3", "flash_attn_4", "cutlass_dsl", "cudnn_frontend",
               "te", "driver")
SPECIAL_TARGETS = ("backend", "selected", "env_var")
"""backend: the backend a line is about; selected: the backend a framework says it chose; env_var: NAME=VALUE."""
TARGETS = CONFIG_TARGETS + ENV_TARGETS + SPECIAL_TARGETS
KEYS = {"id", "library", "kind", "pattern", "source", "backends", "rules", "facts", "sets", "meaning", "fix",
        "priority", "parse", "install", "verified", "note", "topic", "summary"}
ID_PATTERN = re.compile(r"^[A-Z][A-Z0-9]*(-[A-Z0-9]+)+$")


class CatalogueEntry(NamedTuple):
    """One message a library prints: how to find it, what it says, and which rules it can come from."""

    id: str
    library: str
    kind: str
    pattern: re.Pattern[str]
    source: tuple[str, ...]
    backends: tuple[str, ...]
    rules: tuple[str, ...]
    facts: Mapping[str, str]
    sets: Mapping[str, Any]
    meaning: str
    fix: str
    priority: int
    parse: str
    file: str
    line: int
    install: str = ""
    """The kind of broken-install finding this message is the symptom of (arch, abi, unreadable), if any."""
    verified: bool = True
    """False when the message was not found in the cited source at the cited tag (see `note`)."""
    note: str = ""
    literals: tuple[tuple[str, bool], ...] | None = None
    """Texts one of which every match contains, each with whether it is compared case-folded (see literals.py);
    None: the pattern is tried on every line."""
    topic: tuple[str, ...] = ()
    """The kinds of problem the message is (why.topics.TOPICS), where neither its rules nor its install kind say it;
    more than one where both hold (an extension built for another torch release: a version mismatch that breaks the
    binary interface)."""
    indexed: bool = False
    """Read from a library's source by tools/messages (the message index), not written by hand."""
    template: str = ""
    """The message as its source writes it, placeholders as `{name}` (index entries only): its words."""
    retired: str = ""
    """The first release read after the message's last one whose same file no longer prints it (index entries only)."""
    summary: bool = False
    """A header printed above the reasons it announces (xformers' "No operator found for ..."): a cause only where the
    text holds none of them, nor any other error or warning."""
    asserted: bool = False
    """The message is an assert's (index entries only): `note` is what must hold, not what made it print."""

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"id": self.id, "library": self.library, "kind": self.kind, "pattern": self.pattern.pattern,
                "source": list(self.source), "backends": list(self.backends), "rules": list(self.rules),
                "meaning": self.meaning, "fix": self.fix, "verified": self.verified}


def catalogue_path(rules_dir: str | None = None) -> Path:
    """The catalogue of a rules folder, else the bundled one."""
    if rules_dir:
        own = Path(rules_dir) / CATALOGUE_FILE
        if own.is_file():
            return own
    from ..engine.rules import bundled_rules_dir

    return bundled_rules_dir() / CATALOGUE_FILE


@lru_cache(maxsize=4)
def load_catalogue(path: str | None = None) -> tuple[CatalogueEntry, ...]:
    """Every [[error]] of the catalogue file, validated; a bad entry raises RuleError naming file, id and line."""
    from ..engine.rules import read_data_file

    file = Path(path) if path else catalogue_path()
    display = file.name
    text, doc = read_data_file(file, display)
    extra = sorted(set(doc) - {"error"})
    if extra:
        raise RuleError(f"unknown top-level key {extra[0]!r}; expected [[error]]", file=display)
    tables = doc.get("error", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise RuleError("'error' must be an array of tables ([[error]])", file=display)
    entries = [_entry(t, display, text) for t in tables]
    seen: dict[str, CatalogueEntry] = {}
    for entry in entries:
        if entry.id in seen:
            raise RuleError(f"duplicate id (also at line {seen[entry.id].line})", file=display, rule=entry.id,
                            position=f"line {entry.line}")
        seen[entry.id] = entry
    return tuple(entries)


def check_links(entries: tuple[CatalogueEntry, ...], rule_ids: set[str], backend_ids: set[str]) -> None:
    """Every rule and backend an entry names exists in the rule base (a renamed rule breaks the catalogue loudly)."""
    for entry in entries:
        where = {"file": entry.file, "rule": entry.id, "position": f"line {entry.line}"}
        for rule in entry.rules:
            if rule not in rule_ids:
                raise RuleError(f"unknown rule {rule!r} in rules", **where)
        for backend in entry.backends + set_backends(entry):
            if backend not in backend_ids:
                raise RuleError(f"unknown backend {backend!r}; known: {', '.join(sorted(backend_ids))}", **where)


def set_backends(entry: CatalogueEntry) -> tuple[str, ...]:
    """The backends a match names through `sets` (one id, or a list for a family such as SDPA's kernels)."""
    value = entry.sets.get("backend", ())
    return (value,) if isinstance(value, str) else tuple(value)


def _entry(table: dict[str, Any], file: str, text: str) -> CatalogueEntry:
    from ..engine.rules import _line_of

    ident = table.get("id")
    line = _line_of(text, ident) if isinstance(ident, str) else 0

    def err(message: str) -> RuleError:
        return RuleError(message, file=file, rule=str(ident or "?"), position=f"line {line}" if line else "")

    if not isinstance(ident, str) or not ID_PATTERN.match(ident):
        raise err("'id' must be upper case words joined by dashes, e.g. CUDNN-FE-NO-EXECUTION-PLANS")
    unknown = sorted(set(table) - KEYS)
    if unknown:
        raise err(f"unknown key {unknown[0]!r}; expected one of {', '.join(sorted(KEYS))}")
    library, kind = table.get("library"), table.get("kind", "error")
    if library not in LIBRARIES:
        raise err(f"'library' must be one of {', '.join(LIBRARIES)}, got {library!r}")
    if kind not in KINDS:
        raise err(f"'kind' must be one of {', '.join(KINDS)}, got {kind!r}")
    raw = table.get("pattern")
    if not isinstance(raw, str) or not raw:
        raise err("'pattern' must be a non-empty regular expression")
    try:
        pattern = re.compile(raw, re.MULTILINE)
    except re.error as exc:
        raise err(f"'pattern' does not compile: {exc}") from None
    if pattern.search(""):
        raise err("'pattern' matches empty text")
    source = _strings(table.get("source"), "source", err)
    if not source:
        raise err("'source' must name where the message is emitted (repo path@tag) or the issue it was copied from")
    facts = table.get("facts", {})
    if not isinstance(facts, dict):
        raise err("'facts' must be a table: group name -> field")
    for group, target in facts.items():
        if group not in pattern.groupindex:
            raise err(f"'facts': the pattern has no group (?P<{group}>...)")
        if target not in TARGETS:
            raise err(f"'facts': unknown field {target!r}; accepted: {', '.join(TARGETS)}")
    sets = table.get("sets", {})
    if not isinstance(sets, dict) or any(k not in TARGETS for k in sets):
        bad = next((k for k in sets if k not in TARGETS), None) if isinstance(sets, dict) else None
        raise err(f"'sets': unknown field {bad!r}; accepted: {', '.join(TARGETS)}" if bad else
                  "'sets' must be a table: field -> value")
    meaning = table.get("meaning", "")
    if not isinstance(meaning, str) or (kind != "fact" and not meaning):
        raise err("'meaning' must say in one line what the message means")
    fix = table.get("fix", "")
    priority = table.get("priority", 0)
    parse = table.get("parse", "")
    if not isinstance(fix, str):
        raise err("'fix' must be text")
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise err("'priority' must be an integer")
    if parse and parse not in PARSERS:
        raise err(f"'parse' must be one of {', '.join(PARSERS)}, got {parse!r}")
    if kind == "fact" and not (facts or sets):
        raise err("a fact entry must give facts or sets")
    install = table.get("install", "")
    if install and install not in INSTALL_KINDS:
        raise err(f"'install' must be one of {', '.join(INSTALL_KINDS)}, got {install!r}")
    topic = _strings(table.get("topic"), "topic", err)
    from .topics import TOPICS

    for one in topic:
        if one not in TOPICS:
            raise err(f"'topic' must be one of {', '.join(TOPICS)} (or a list of them), got {one!r}")
    verified, note, summary = table.get("verified", True), table.get("note", ""), table.get("summary", False)
    for name, value in (("verified", verified), ("summary", summary)):
        if not isinstance(value, bool):
            raise err(f"'{name}' must be true or false")
    if not isinstance(note, str) or (verified is False and not note):
        raise err("'note' must be text; an entry with verified = false says in its note what could not be confirmed")
    return CatalogueEntry(
        id=ident, library=library, kind=kind, pattern=pattern, source=source,
        backends=_strings(table.get("backends"), "backends", err), rules=_strings(table.get("rules"), "rules", err),
        facts=dict(facts), sets=dict(sets), meaning=meaning, fix=fix, priority=priority, parse=parse, file=file,
        line=line, install=install, verified=verified, note=note, literals=required_literals(raw), topic=topic,
        summary=summary)


def _strings(value: Any, what: str, err: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise err(f"'{what}' must be a list of non-empty strings")
    return tuple(value)
