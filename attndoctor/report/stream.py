"""Reports written while the results are still coming: JSON and JSON lines for any number of configs, in bounded memory.

Configs of one run share their verdict, finding and selection objects (the engine computes each distinct one once),
so each object's JSON is made once and reused; the document is written result by result and the gate keeps only its
checks.
"""

from __future__ import annotations

import json
from typing import IO, Any, Callable, Iterable, Iterator

from .._version import __version__
from ..engine.results import ConfigResult, Selection, Verdict
from ..engine.gate import GateCheck, GateResult
from ..engine.gate_tally import GateTally
from ..engine.install import environment_dict
from .json_format import SCHEMA_VERSION

JSONL_SCHEMA_VERSION = 1
KEPT = 2048
"""JSON text kept per shared object; beyond it the oldest is made again when it recurs."""


class _Texts:
    """JSON text per shared object, by identity (the object is kept alive beside its text)."""

    def __init__(self, make: Any) -> None:
        self.make = make
        self.texts: dict[int, tuple[Any, str]] = {}

    def __call__(self, obj: Any) -> str:
        found = self.texts.get(id(obj))
        if found is not None and found[0] is obj:
            return found[1]
        text = self.make(obj)
        if len(self.texts) >= KEPT:
            del self.texts[next(iter(self.texts))]
        self.texts[id(obj)] = (obj, text)
        return text


def _dumps(value: Any) -> str:
    return json.dumps(value, default=str)


def _summary(counts: dict[str, int], configs: int) -> dict[str, Any]:
    return {"configs": configs, "verdicts": counts}


Piece = tuple[str, list[GateCheck], tuple[str, ...]]
"""One config's written text, its gate checks and its verdicts' statuses."""


def json_piece(tally: GateTally) -> Callable[[ConfigResult], Piece]:
    """One result of --format json's `results` list, as text (each shared object's JSON made once)."""
    finding = _Texts(lambda f: _dumps(f.to_dict()))

    def verdict_text(v: Verdict) -> str:
        data = v._replace(findings=()).to_dict()  # each finding's text is made once, then spliced in
        data["missing"] = list(v.missing)
        return _dumps(data).replace('"findings": []', '"findings": [' + ", ".join(map(finding, v.findings)) + "]", 1)

    verdict = _Texts(verdict_text)
    selection = _Texts(lambda s: _dumps(s.to_dict()))

    def piece(result: ConfigResult) -> Piece:
        text = ('{"config": ' + _dumps(result.config.to_dict()) + ', "label": ' + _dumps(result.config.label())
                + ', "verdicts": [' + ", ".join(map(verdict, result.verdicts)) + '], "selected": ['
                + ", ".join(map(selection, result.selected)) + "]}")
        return text, tally.add(result), tuple(v.status for v in result.verdicts)

    return piece


def jsonl_piece(tally: GateTally) -> Callable[[ConfigResult], Piece]:
    """One line of --format jsonl."""
    by_value: dict[tuple[Any, ...], str] = {}

    def verdict_text(v: Verdict) -> str:
        # A jsonl verdict names only ids, the status and the fix: verdicts that differ in their texts alone share it.
        key = (v.backend.id, v.status, v.fix, *(f.id for f in v.findings if f.blocking and f.applies is True), "",
               *v.missing)
        text = by_value.get(key)
        if text is None:
            if len(by_value) >= KEPT * 8:
                by_value.clear()
            text = by_value[key] = _dumps(jsonl_verdict(v))
        return text

    verdict = _Texts(verdict_text)
    selection = _Texts(lambda s: _dumps(jsonl_selection(s)))

    def piece(result: ConfigResult) -> Piece:
        checks = tally.add(result)
        failed = any(not c.passed for c in checks)
        text = ('{"config": ' + _dumps(result.config.to_dict()) + ', "label": ' + _dumps(result.config.label())
                + ', "verdicts": [' + ", ".join(map(verdict, result.verdicts)) + '], "selected": ['
                + ", ".join(map(selection, result.selected)) + '], "passed": ' + ("false" if failed else "true")
                + "}\n")
        return text, checks, tuple(v.status for v in result.verdicts)

    return piece


PIECES = {"json": json_piece, "jsonl": jsonl_piece}


def write_json(run: Any, tally: GateTally, out: IO[str], pieces: Iterable[Piece] | None = None) -> GateResult:
    """The document of --format json, written result by result (the same text as render_json for many configs);
    `pieces` are the results already rendered (by worker processes), else they are rendered here."""
    header = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "attndoctor", "version": __version__},
        "command": run.command,
        "rules": {"count": run.rule_count, "files": list(run.rule_files), "ignored": dict(run.ignored)},
        "environment": environment_dict(run.environment),
    }
    out.write(_dumps(header)[:-1] + ', "results": [')
    counts: dict[str, int] = {}
    configs = 0
    for text, checks, statuses in _pieces(run, tally, json_piece, pieces):
        for status in statuses:
            counts[status] = counts.get(status, 0) + 1
        out.write((", " if configs else "") + text)
        configs += 1
    gate = tally.result()
    out.write('], "summary": ' + _dumps(_summary(counts, configs)) + ', "gate": ' + _dumps(gate.to_dict()) + "}\n")
    return gate


def jsonl_verdict(v: Verdict) -> dict[str, Any]:
    """One backend in a --format jsonl line: what a sweep filters on, without the rule texts."""
    return {"backend": v.backend.id, "status": v.status, "supported": v.supported,
            "blocking": [f.id for f in v.findings if f.blocking and f.applies is True],
            "depends_on": list(v.missing), "fix": v.fix.describe() if v.fix else None}


def jsonl_selection(s: Selection) -> dict[str, Any]:
    return {"framework": s.framework, "status": s.status, "backend": s.backend, "candidates": list(s.candidates)}


def write_jsonl(run: Any, tally: GateTally, out: IO[str], pieces: Iterable[Piece] | None = None) -> GateResult:
    """--format jsonl: one line per config, then one line with the summary and the gate."""
    counts: dict[str, int] = {}
    configs = 0
    failing: list[dict[str, Any]] = []
    for text, checks, statuses in _pieces(run, tally, jsonl_piece, pieces):
        for status in statuses:
            counts[status] = counts.get(status, 0) + 1
        failing.extend(c.to_dict() for c in checks if not c.passed)
        out.write(text)
        configs += 1
    gate = tally.result()
    out.write(_dumps({"schema_version": JSONL_SCHEMA_VERSION, "tool": {"name": "attndoctor", "version": __version__},
                      "command": run.command, "environment": environment_dict(run.environment),
                      "summary": _summary(counts, configs),
                      "gate": {"passed": gate.passed, "reasons": gate.reasons, "checks": len(gate.checks),
                               "failed": failing}}) + "\n")
    return gate


def _pieces(run: Any, tally: GateTally, make: Callable[[GateTally], Callable[[ConfigResult], Piece]],
            pieces: Iterable[Piece] | None) -> Iterator[Piece]:
    if pieces is None:
        yield from map(make(tally), run.results)
        return
    for piece in pieces:
        tally.keep(piece[1])
        yield piece
