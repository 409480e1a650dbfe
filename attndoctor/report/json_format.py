"""The stable JSON document (schema_version) behind --format json."""

from __future__ import annotations

import json
from typing import IO, Any

from .._version import __version__
from ..engine.results import Report
from ..engine.gate import GateResult
from ..engine.install import environment_dict
from ..environment import REPORT_SCHEMA_VERSION as SCHEMA_VERSION
from ..console.progress import COMPACT_OVER


def report_document(report: Report, gate: GateResult) -> dict[str, Any]:
    """The report as plain data."""
    counts: dict[str, int] = {}
    for result in report.results:
        for v in result.verdicts:
            counts[v.status] = counts.get(v.status, 0) + 1
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "attndoctor", "version": __version__},
        "command": report.command,
        "rules": {"count": report.rule_count, "files": list(report.rule_files), "ignored": dict(report.ignored)},
        "environment": environment_dict(report.environment),
        "results": [r.to_dict() for r in report.results],
        "summary": {"configs": len(report.results), "verdicts": counts},
        "gate": gate.to_dict(),
        **({"models": [m.to_dict() for m in report.models]} if report.models else {}),
    }


"""Above this many configs the JSON is written compact: the C encoder is 10x faster than the indenting one."""


def render_json(report: Report, gate: GateResult, stream: IO[str], **_: Any) -> None:
    """JSON text, indented for a handful of configs and compact for many."""
    indent = 2 if len(report.results) <= COMPACT_OVER else None
    stream.write(json.dumps(report_document(report, gate), indent=indent, default=str) + "\n")
