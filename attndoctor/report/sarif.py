"""SARIF 2.1.0: the rule base as tool rules (help text and fix), one result per finding that applies or may apply."""

from __future__ import annotations

from typing import IO, Any

from .._version import __version__
from ..engine.results import Report
from ..engine.gate import GateResult
from ..engine.rules import DATA_CONDITIONS
from .location import sarif_location, sources_by_label, srcroot_uri
from .formats import dump_json

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {"wrong-results": "error", "api-mismatch": "error", "unsupported": "warning", "slow": "note", "info": "note"}


def sarif_document(report: Report, gate: GateResult) -> dict[str, Any]:
    """The SARIF log as plain data."""
    rules: dict[str, dict[str, Any]] = {}
    results: list[dict[str, Any]] = []
    failing = {(c.config, c.backend) for c in gate.checks if not c.passed and c.backend}
    located: dict[Any, Any] = {}

    def where(source: tuple[str, int] | None) -> dict[str, Any] | None:
        if source not in located:
            located[source] = sarif_location(source)
        return located[source]

    for result in report.results:
        label = result.config.name or result.config.label()
        physical = where(result.config.source)
        selected = {s.backend for s in result.selected if s.backend}
        for v in result.verdicts:
            for f in v.findings:
                if f.id not in rules:
                    fixes = "; ".join(x.describe() for x in f.fixes) or "see the message"
                    rules[f.id] = {
                        "id": f.id, "name": f.id.title().replace("-", ""),
                        "shortDescription": {"text": f.title},
                        "fullDescription": {"text": f"{f.title}. Symptom: {f.symptom}" if f.symptom else f.title},
                        "help": {"text": f"Fix: {fixes}. Sources: {'; '.join(f.references)}"},
                        "properties": {"effect": f.effect, "backends": sorted({v.backend.id}),
                                       "evidence": f.evidence},
                    }
                level = LEVEL[f.effect]
                if f.effect == "unsupported" and ((label, v.backend.id) in failing or v.backend.id in selected):
                    level = "error"
                if f.applies is None:
                    level = "note"
                message = f"{v.backend.id}: {f.message}"
                if f.at_risk:
                    level = "warning"
                    message += f" (known bug, at risk if {' and '.join(DATA_CONDITIONS[d] for d in f.data)}" + \
                        (f"; workaround: {f.workaround})" if f.workaround else ")")
                if f.applies is None:
                    message += f" (applies if {f.condition})"
                if v.fix and f.applies:
                    message += f". Smallest fix: {v.fix.describe()}"
                results.append({
                    "ruleId": f.id, "level": level, "message": {"text": message},
                    "locations": [_location(physical, {"name": label, "kind": "module",
                                                       "fullyQualifiedName": f"{label}/{v.backend.id}"})],
                    "properties": {"backend": v.backend.id, "status": v.status, "applies": f.applies,
                                   "config": result.config.to_dict()},
                })
    sources = sources_by_label(report)
    for check in gate.checks:
        if not check.passed:
            rules.setdefault("AD-GATE", {"id": "AD-GATE", "name": "Gate",
                                         "shortDescription": {"text": "a gate check failed"},
                                         "help": {"text": "--require, --require-any and --fail-on decide the gate"}})
            results.append({"ruleId": "AD-GATE", "level": "error",
                            "message": {"text": f"{check.name}: {'; '.join(check.reasons)}"},
                            "locations": [_location(where(sources.get(check.config)),
                                                    {"name": check.config, "kind": "module"})]})
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "attndoctor", "version": __version__,
                            "rules": list(rules.values())}},
        "results": results,
        "invocations": [{"executionSuccessful": True, "exitCode": 0 if gate.passed else 1}],
    }
    if any(loc and "uriBaseId" in loc["artifactLocation"] for loc in located.values()):
        run["originalUriBaseIds"] = {"%SRCROOT%": {"uri": srcroot_uri()}}
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def _location(physical: dict[str, Any] | None, logical: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {"physicalLocation": physical} if physical else {}
    out["logicalLocations"] = [logical]
    return out


def render_sarif(report: Report, gate: GateResult, stream: IO[str], **_: Any) -> None:
    """Indented SARIF JSON."""
    dump_json(sarif_document(report, gate), stream)
