"""JUnit XML: one testcase per config × gate check (required backends, any-of groups, runs at all, no wrong results)."""

from __future__ import annotations

from typing import IO, Any
from xml.etree import ElementTree as ET

from ..engine.results import Report
from ..engine.gate import GateResult


def render_junit(report: Report, gate: GateResult, stream: IO[str], **_: Any) -> None:
    """A <testsuites> document; a failed check is a <failure> carrying the reasons and the fixes."""
    failures = sum(not c.passed for c in gate.checks)
    suites = ET.Element("testsuites", name="attndoctor", tests=str(len(gate.checks)), failures=str(failures))
    by_config: dict[str, list] = {}
    for check in gate.checks:
        by_config.setdefault(check.config, []).append(check)
    for config, checks in by_config.items():
        suite = ET.SubElement(suites, "testsuite", name=config, tests=str(len(checks)),
                              failures=str(sum(not c.passed for c in checks)))
        for check in checks:
            case = ET.SubElement(suite, "testcase", classname=f"attndoctor.{report.command}.{config}",
                                 name=check.name)
            if not check.passed:
                failure = ET.SubElement(case, "failure", message="; ".join(check.reasons))
                lines = list(check.reasons) + [f"fix: {fix}" for fix in check.fixes]
                failure.text = "\n".join(lines)
    ET.indent(suites)
    stream.write('<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n")
