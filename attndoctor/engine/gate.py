"""The CI gate: named checks per config (exit 1 when one fails), the same for every output format.

By default the gate fails when no backend can run a config, when a wrong-results finding applies, or when a framework
present in the environment (its package installed, or named with a version) selects a backend that fails at run
time or gives wrong results: what the job would run is predicted to crash or be wrong.
`--require ID`: that backend must be `supported` (a `depends` verdict fails: a gate wants certainty).
`--require-any A,B`: at least one of them is supported.
`--fail-on EFFECT`: any applying finding of that effect or a more severe one, on the backends in scope (the
required ones, and the ones each framework would select), fails. Severity, low to high:
info < slow < unsupported < api-mismatch < wrong-results.
Findings about the machine itself (a package not installed, no GPU) never fail `--fail-on` or the no-backend check:
they are facts to report, not a config that cannot run. `check` with no config surveys the bundled model shapes:
there a shape that nothing runs (Gemma-2's softcap on PyTorch SDPA) is reported, not a failure.
"""

from typing import NamedTuple, Sequence

from ..environment import ABSENT, Environment
from ..words import a, verdict_words
from .results import ConfigResult, Report, Verdict
from .rules import FRAMEWORK_LABELS

SEVERITY = {"info": 1, "slow": 2, "unsupported": 3, "api-mismatch": 4, "wrong-results": 5}
MACHINE_FINDINGS = frozenset({"AD-NOT-INSTALLED", "AD-NO-GPU", "AD-IMPORT-FAILS", "AD-OUTSIDE-RULES"})


class GateCheck(NamedTuple):
    """One named check on one config: passed or not, with the reasons and the fixes that would pass it."""

    config: str
    name: str
    passed: bool
    reasons: Sequence[str] = ()
    fixes: Sequence[str] = ()
    backend: str = ""

    def to_dict(self) -> dict[str, object]:
        return {"config": self.config, "check": self.name, "backend": self.backend or None, "passed": self.passed,
                "reasons": list(self.reasons), "fixes": list(self.fixes)}


class GateResult(NamedTuple):
    """Whether the gate passed, every check, and one line per reason it did not."""

    passed: bool
    checks: tuple[GateCheck, ...] = ()

    @property
    def reasons(self) -> list[str]:
        return list(dict.fromkeys(f"{c.config}: {r}" for c in self.checks if not c.passed for r in c.reasons))

    def to_dict(self) -> dict[str, object]:
        return {"passed": self.passed, "reasons": self.reasons, "checks": [c.to_dict() for c in self.checks]}


def _machine_only(v: Verdict) -> bool:
    blocking = v.blocking(True)
    return bool(blocking) and all(f.id in MACHINE_FINDINGS for f in blocking)


def _why(v: Verdict) -> str:
    blocking = v.blocking(True)
    if blocking:
        return "; ".join(f"{f.id}: {f.message}" for f in blocking)
    if v.status == "depends":
        return f"depends on {', '.join(v.missing)}"
    return v.status


def _fixes(v: Verdict) -> list[str]:
    return [p.describe() for p in ([v.fix] if v.fix else []) + list(v.alternatives)]


def present_frameworks(result: ConfigResult, env: Environment) -> frozenset[str]:
    """The frameworks whose packages the environment has (probed, or named with a version): their choice runs."""
    def known(package: str) -> bool:
        return env.versions.get(package) not in (None, ABSENT)

    return frozenset(v.backend.framework for v in result.all_verdicts
                     if v.backend.requires and all(map(known, v.backend.requires)))


SELECTION_FAILS = {"fails": "fails at run time", "wrong-results": "gives wrong results"}


def _selection_checks(result: ConfigResult, label: str, present: frozenset[str]) -> list[GateCheck]:
    """A framework that is there and picks a backend predicted to crash or be wrong fails the job it runs."""
    checks = []
    verdicts = {v.backend.id: v for v in result.all_verdicts}
    for s in result.selected:
        if s.framework not in present or s.status not in ("selected", *SELECTION_FAILS):
            continue
        ok = s.status == "selected"
        name = FRAMEWORK_LABELS.get(s.framework, s.framework)
        reasons = [] if ok else [f"{name} selects {s.backend}, which {SELECTION_FAILS[s.status]} ({s.reason})"]
        fixes = [] if ok or s.backend is None else _fixes(verdicts[s.backend])
        checks.append(GateCheck(label, f"{s.framework} selection runs", ok, reasons, fixes, s.backend or ""))
    return checks


def config_checks(result: ConfigResult, *, require: Sequence[str] = (), require_any: Sequence[Sequence[str]] = (),
                  fail_on: str | None = None, survey: bool = False,
                  present: frozenset[str] = frozenset()) -> list[GateCheck]:
    """Every gate check for one config."""
    label = result.config.name or result.config.label()
    verdicts = {v.backend.id: v for v in result.all_verdicts}
    checks: list[GateCheck] = _selection_checks(result, label, present)
    for backend in require:
        v = verdicts[backend]
        ok = v.supported is True
        checks.append(GateCheck(label, f"require {backend}", ok, [] if ok else
                                [f"required backend {backend} {verdict_words(v.status)} ({_why(v)})"],
                                [] if ok else _fixes(v), backend))
    for group in require_any:
        ok = any(verdicts[b].supported is True for b in group)
        fixes = [] if ok else [f"{b}: {fix}" for b in group for fix in _fixes(verdicts[b])[:1]]
        checks.append(GateCheck(label, f"require any of {', '.join(group)}", ok,
                                [] if ok else [f"none of {', '.join(group)} can run it"], fixes))
    if not require and not require_any and not survey:
        usable = [v for v in result.all_verdicts if not _machine_only(v) and v.status != "not-installed"]
        ok = not usable or any(v.supported is not False for v in usable)
        fixes = [f"{v.backend.id}: {v.fix.describe()}" for v in usable if v.fix][:3]
        checks.append(GateCheck(label, "some backend runs it", ok, [] if ok else ["no backend can run it"],
                                [] if ok else fixes))
    scope = set(require) | {b for group in require_any for b in group} | \
        {s.backend for s in result.selected if s.backend}
    wrong = [(v, f) for v in result.all_verdicts for f in v.findings
             if f.applies is True and f.effect == "wrong-results" and not f.data
             and (v.backend.id in scope or not (require or require_any))]
    checks.append(GateCheck(label, "no wrong results", not wrong,
                            [f"{v.backend.id} gives wrong results ({f.id}: {f.message})" for v, f in wrong],
                            [fix for v, _ in wrong for fix in _fixes(v)[:1]]))
    if fail_on:
        hits = [(v, f) for v in result.all_verdicts if v.backend.id in scope for f in v.findings
                if f.applies is True and f.id not in MACHINE_FINDINGS and SEVERITY[f.effect] >= SEVERITY[fail_on]]
        checks.append(GateCheck(label, f"fail-on {fail_on}", not hits,
                                [f"{v.backend.id} has {a(f.effect)} finding ({f.id}: {f.message})" for v, f in hits],
                                [fix for v, _ in hits for fix in _fixes(v)[:1]]))
    return checks


def evaluate_gate(report: Report, *, require: Sequence[str] = (), require_any: Sequence[Sequence[str]] = (),
                  fail_on: str | None = None, survey: bool = False) -> GateResult:
    """Run every check on every config; a survey of the bundled shapes does not fail for a shape nothing runs."""
    checks = [c for r in report.results for c in config_checks(
        r, require=require, require_any=require_any, fail_on=fail_on, survey=survey,
        present=present_frameworks(r, report.environment))]
    return GateResult(passed=all(c.passed for c in checks), checks=tuple(checks))
