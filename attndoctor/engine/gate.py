"""The CI gate: does a report pass, and if not, why (exit 1)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from .evaluate import Report, Verdict

SEVERITY = {"info": 1, "slow": 2, "unsupported": 3, "api-mismatch": 4, "wrong-results": 5}
"""--fail-on X fails on any applying finding of severity >= X, on the backends in scope."""
MACHINE_FINDINGS = frozenset({"AD-NOT-INSTALLED", "AD-NO-GPU", "AD-IMPORT-FAILS"})


@dataclass
class GateResult:
    """Whether the gate passed, and one line per reason it did not."""

    passed: bool
    reasons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {"passed": self.passed, "reasons": list(self.reasons)}


def _machine_only(v: Verdict) -> bool:
    blocking = v.blocking(True)
    return bool(blocking) and all(f.id in MACHINE_FINDINGS for f in blocking)


def evaluate_gate(report: Report, *, require: Sequence[str] = (), require_any: Sequence[Sequence[str]] = (),
                  fail_on: str | None = None) -> GateResult:
    """Requirements first; without any, fail only when a config cannot run at all or a result would be wrong."""
    reasons: list[str] = []
    for result in report.results:
        label = result.config.label()
        verdicts = {v.backend.id: v for v in result.all_verdicts}
        for backend in require:
            v = verdicts.get(backend)
            if v is None:
                continue
            if v.supported is not True:
                why = "; ".join(f"{f.id}: {f.message}" for f in v.blocking(True)) or \
                    f"depends on {', '.join(v.missing)}"
                reasons.append(f"{label}: required backend {backend} is {v.status} ({why})")
        for group in require_any:
            if not any(verdicts[b].supported is True for b in group if b in verdicts):
                reasons.append(f"{label}: none of {', '.join(group)} can run it")
        if not require and not require_any:
            usable = [v for v in result.all_verdicts if not _machine_only(v) and v.status != "not-installed"]
            if usable and not any(v.supported is not False for v in usable):
                reasons.append(f"{label}: no backend can run it")
        scope = set(require) | {b for group in require_any for b in group} | \
            {s.backend for s in result.selected if s.backend}
        for v in result.all_verdicts:
            for f in v.findings:
                if f.applies is not True:
                    continue
                if f.effect == "wrong-results" and (v.backend.id in scope or not (require or require_any)):
                    reasons.append(f"{label}: {v.backend.id} gives wrong results ({f.id}: {f.message})")
                elif fail_on and v.backend.id in scope and f.id not in MACHINE_FINDINGS and \
                        SEVERITY[f.effect] >= SEVERITY[fail_on]:
                    reasons.append(f"{label}: {v.backend.id} has a {f.effect} finding ({f.id}: {f.message})")
    unique = list(dict.fromkeys(reasons))
    return GateResult(passed=not unique, reasons=unique)
