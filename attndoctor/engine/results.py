"""The result model every renderer reads: findings, fix plans, verdicts, selections, one result per config, the
report; and how a backend's status follows from its findings."""

from types import MappingProxyType
from typing import Any, Mapping, NamedTuple, Sequence

from ..config import AttentionConfig
from ..environment import PACKAGES, Environment
from .rule_model import BLOCKING, EFFECTS, Backend, Fix
from .states import RUNS, STATUS_OF_EFFECT, Effect, Evidence, Status, Surface

STATUSES = tuple(Status)
"""Every status a verdict may have (see states.Status)."""
OUTSIDE = "AD-OUTSIDE-RULES"
NO_RELEASE = "AD-NO-RELEASE-RUNS"
EVERY_RELEASE = "AD-EVERY-RELEASE-RUNS"
RELEASE_FACTS = frozenset({*PACKAGES, "cudnn_compiled", "flash_attn_local", "cutlass_dsl_dev", "flash_attn_4_beta"})
"""Facts that name a release: an advisory undecided only for want of them is a modelled release that fails the
config while others run it, so the verdict depends on them (an advisory open on config facts stays a note)."""

DERIVED_FROM = {"cutlass_dsl_dev": "cutlass_dsl", "flash_attn_4_beta": "flash_attn_4", "flash_attn_local": "flash_attn"}
"""A fact read off a version -> that version, which is what a user gives."""


def opens_advisory(missing: Sequence[str] | set[str]) -> bool:
    """Whether an advisory undecided for want of exactly these facts leaves the verdict depending on them."""
    return bool(missing) and set(missing) <= RELEASE_FACTS


EFFECT_ORDER = {effect: i for i, effect in enumerate(EFFECTS)}
"""Findings are listed in this order of effect, definite ones first."""


class Finding(NamedTuple):
    """A rule (or a built-in check) that applies to a backend, or may apply (applies None) given missing facts."""

    id: str
    effect: Effect
    surfaces: Surface
    title: str
    message: str
    symptom: str
    fixes: tuple[Fix, ...]
    references: tuple[str, ...]
    applies: bool | None
    condition: str = ""
    missing: tuple[str, ...] = ()
    evidence: Evidence = Evidence.SOURCE
    data: tuple[str, ...] = ()
    workaround: str = ""
    fixed_in: Mapping[str, str] = MappingProxyType({})
    advisory: bool = False

    @property
    def blocking(self) -> bool:
        """Whether it stops the backend: a known bug only once the facts say it applies, and never while values the
        config cannot state decide it."""
        return self.effect in BLOCKING and not self.data and not (self.advisory and self.applies is None
                                                                  and not opens_advisory(self.missing))

    @property
    def at_risk(self) -> bool:
        """An advisory whose config conditions hold: only the data it names decide whether the bug bites."""
        return self.applies is True and bool(self.data) and self.effect in BLOCKING

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rule": self.id, "effect": self.effect, "applies": self.applies, "surfaces": self.surfaces,
            "title": self.title, "message": self.message, "symptom": self.symptom,
            "fixes": [f.to_dict() for f in self.fixes], "references": list(self.references),
            "evidence": self.evidence,
        }
        if self.applies is None:
            out["applies_if"] = self.condition
            out["missing"] = list(self.missing)
        if self.data:
            from .rule_model import DATA_CONDITIONS

            out["data"] = [{"name": d, "text": DATA_CONDITIONS[d]} for d in self.data]
        if self.workaround:
            out["workaround"] = self.workaround
        if self.fixed_in:
            out["fixed_in"] = dict(self.fixed_in)
        return out


class FixPlan(NamedTuple):
    """One or more fixes that, applied together, make a refused backend run (checked by re-evaluation)."""

    fixes: tuple[Fix, ...]
    result: str

    def describe(self) -> str:
        return " and ".join(f.describe() for f in self.fixes)

    def to_dict(self) -> dict[str, Any]:
        return {"fixes": [f.to_dict() for f in self.fixes], "text": self.describe(), "result": self.result}


class Verdict(NamedTuple):
    """Everything known about one backend for one config: status, all findings, and the smallest fix."""

    backend: Backend
    status: Status
    findings: tuple[Finding, ...]
    fix: FixPlan | None = None
    alternatives: tuple[FixPlan, ...] = ()
    where: tuple[Any, ...] = ()
    """For a `depends` verdict: per reference GPU, the releases of the deciding package that do not refuse it."""

    @property
    def supported(self) -> bool | None:
        return RUNS[self.status]

    @property
    def advisories(self) -> list[Finding]:
        """The known bugs at risk on this config."""
        return [f for f in self.findings if f.at_risk]

    @property
    def missing(self) -> tuple[str, ...]:
        names: set[str] = set()
        for f in self.findings:
            if f.applies is None and f.blocking:
                names.update(DERIVED_FROM.get(name, name) for name in f.missing)
        return tuple(sorted(names))

    def blocking(self, applies: bool | None = True) -> list[Finding]:
        return [f for f in self.findings if f.blocking and f.applies is applies]

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend.id, "framework": self.backend.framework, "supported": self.supported,
            "status": self.status, "findings": [f.to_dict() for f in self.findings],
            "missing": list(self.missing), "fix": self.fix.to_dict() if self.fix else None,
            "alternatives": [a.to_dict() for a in self.alternatives],
            "runs_where": [w.to_dict() for w in self.where],
        }


class Selection(NamedTuple):
    """Which backend a framework would run by default, and whether that run would work."""

    framework: str
    status: str  # selected | fails | wrong-results | depends | none | not-installed
    backend: str | None
    order: tuple[str, ...]
    candidates: tuple[str, ...] = ()
    note: str = ""
    entry: str = ""
    reason: str = ""
    references: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "framework": self.framework, "status": self.status, "backend": self.backend, "order": list(self.order),
            "candidates": list(self.candidates), "note": self.note, "order_rule": self.entry, "reason": self.reason,
            "references": list(self.references),
        }


class ConfigResult(NamedTuple):
    """The verdicts and selections for one config."""

    config: AttentionConfig
    all_verdicts: tuple[Verdict, ...]
    selected: tuple[Selection, ...]
    shown: tuple[str, ...] | None = None

    @property
    def verdicts(self) -> tuple[Verdict, ...]:
        """The verdicts the user asked to see (--backend), in the order asked."""
        if self.shown is None:
            return self.all_verdicts
        by_id = {v.backend.id: v for v in self.all_verdicts}
        return tuple(by_id[b] for b in self.shown)

    def verdict(self, backend_id: str) -> Verdict:
        return next(v for v in self.all_verdicts if v.backend.id == backend_id)

    def to_dict(self) -> dict[str, Any]:
        return {"config": self.config.to_dict(), "label": self.config.label(),
                "verdicts": [v.to_dict() for v in self.verdicts], "selected": [s.to_dict() for s in self.selected]}


class Report(NamedTuple):
    """A full answer: the environment, one result per config, and what the rule base was."""

    command: str
    environment: Environment
    results: list[ConfigResult]
    rule_count: int
    rule_files: tuple[str, ...] = ()
    ignored: Mapping[str, str] = MappingProxyType({})
    models: tuple[Any, ...] = ()
    """Per-layer plans of the models read with --model (attndoctor.model_plan.ModelPlan)."""


def status_of(findings: Sequence[Finding]) -> Status:
    """A backend's status from its findings: the worst definite effect, else what keeps it open."""
    if any(f.id == "AD-NOT-INSTALLED" and f.applies for f in findings):
        return Status.NOT_INSTALLED
    definite = [f for f in findings if f.blocking and f.applies is True]
    if definite:
        for effect in BLOCKING:
            if any(f.effect == effect for f in definite):
                return STATUS_OF_EFFECT[effect]
    if any(f.id == OUTSIDE for f in findings):
        return Status.OUTSIDE_RULES
    if any(f.blocking and f.applies is None for f in findings):
        return Status.DEPENDS
    if any(f.at_risk for f in findings):
        return Status.KNOWN_BUG
    return Status.SUPPORTED
