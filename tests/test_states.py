"""The engine's states are str enums: each reads and serialises as the string it replaced, and every table or branch
that decides by one covers every member."""

from __future__ import annotations

import json
import pickle

import pytest

from attndoctor.engine import gate
from attndoctor.engine.results import EFFECT_ORDER, STATUSES, Finding, Verdict, status_of
from attndoctor.engine.rule_model import DEFAULT_SURFACE, EFFECTS, EVIDENCE, SURFACES, Backend
from attndoctor.engine.selection import walk
from attndoctor.engine.states import (BLOCKING_EFFECTS, FIXED, RUNS, STATUS_OF_EFFECT, Effect, Evidence, InstallKind,
                                      Outcome, Severity, Status, Surface)
from attndoctor.report import github, text, verify_text
from attndoctor.runs.verification import OBSERVED, agreement
from attndoctor.words import verdict_words

ENUMS = (Status, Effect, Surface, Evidence, Outcome, InstallKind, Severity)
BEFORE = {  # the strings each state was before it was an enum: output must not change
    Status: ("supported", "known-bug", "depends", "outside-rules", "unsupported", "api-mismatch", "wrong-results",
             "not-installed"),
    Effect: ("unsupported", "api-mismatch", "wrong-results", "slow", "info"),
    Surface: ("dispatch", "runtime", "silent"),
    Evidence: ("source", "observed", "inferred"),
    Outcome: ("ok", "rejected", "api-mismatch", "wrong-results", "crashed", "not-installed", "out-of-memory",
              "skipped"),
    InstallKind: ("arch", "abi", "unreadable"),
    Severity: ("error", "warning"),
}


@pytest.mark.parametrize("enum", ENUMS, ids=lambda e: e.__name__)
def test_members_read_and_serialise_as_the_strings_they_replaced(enum):
    assert tuple(m.value for m in enum) == BEFORE[enum]
    for member in enum:
        assert member == member.value and hash(member) == hash(member.value)
        assert str(member) == f"{member}" == f"{member:s}" == "%s" % member == member.value
        assert f"{member:>20}" == f"{member.value:>20}"
        assert json.dumps({member: [member]}) == json.dumps({member.value: [member.value]})
        assert pickle.loads(pickle.dumps(member)) is member
        assert enum(member.value) is member


def test_the_engine_tuples_are_the_enums_in_order():
    assert STATUSES == tuple(Status) and EFFECTS == tuple(Effect) and SURFACES == tuple(Surface)
    assert EVIDENCE == tuple(Evidence) and OBSERVED == tuple(Outcome)


@pytest.mark.parametrize("table", [RUNS, text.MARK, github.MARK], ids=["RUNS", "text.MARK", "github.MARK"])
def test_every_status_has_its_entry(table):
    assert set(table) == set(Status)


@pytest.mark.parametrize("table", [DEFAULT_SURFACE, EFFECT_ORDER, gate.SEVERITY],
                         ids=["DEFAULT_SURFACE", "EFFECT_ORDER", "gate.SEVERITY"])
def test_every_effect_has_its_entry(table):
    assert set(table) == set(Effect)


def test_each_blocking_effect_is_the_status_it_gives():
    assert set(STATUS_OF_EFFECT) == set(BLOCKING_EFFECTS)
    for effect, status in STATUS_OF_EFFECT.items():
        assert status == effect and isinstance(status, Status)
    assert set(FIXED) <= set(Status)


def _finding(effect: Effect, surfaces: Surface, applies: bool | None = True, ident: str = "T-X") -> Finding:
    return Finding(id=ident, effect=effect, surfaces=surfaces, title="t", message="m", symptom="s", fixes=(),
                   references=("r",), applies=applies)


BACKEND = Backend(id="alpha", framework="f", label="alpha", requires=(), select="", references=())


@pytest.mark.parametrize("status", list(Status))
def test_every_status_is_walked_and_worded(status):
    """The framework's walk and the words branch on the status: each member takes a definite path."""
    findings = ()
    if status in STATUS_OF_EFFECT.values():
        findings = (_finding(Effect(status.value), Surface.RUNTIME),)
    verdict = Verdict(backend=BACKEND, status=status, findings=findings)
    assert verdict.supported is RUNS[status]
    pick = walk(["alpha"], {"alpha": verdict})
    expected = {True: "selected", None: "depends"}.get(RUNS[status], "fails")
    if status == Status.NOT_INSTALLED:
        expected = "none"
    assert pick.status == expected
    assert verdict_words(status)


@pytest.mark.parametrize("surface", list(Surface))
def test_every_surface_decides_the_walk(surface):
    verdict = Verdict(backend=BACKEND, status=Status.UNSUPPORTED, findings=(_finding(Effect.UNSUPPORTED, surface),))
    pick = walk(["alpha"], {"alpha": verdict})
    assert pick.status == {Surface.DISPATCH: "none", Surface.RUNTIME: "fails", Surface.SILENT: "wrong-results"}[
        surface]


@pytest.mark.parametrize("effect", list(Effect))
def test_every_effect_gives_a_status(effect):
    status = status_of([_finding(effect, DEFAULT_SURFACE[effect])])
    assert isinstance(status, Status)
    assert status == (STATUS_OF_EFFECT.get(effect) or Status.SUPPORTED)


@pytest.mark.parametrize("outcome", list(Outcome))
def test_every_outcome_is_judged_against_every_status(outcome):
    for status in Status:
        assert agreement(outcome, status) in ("confirmed", "contradicted", "undecided", "inconclusive")
    assert outcome in verify_text.SHORT


@pytest.mark.parametrize("evidence", list(Evidence))
def test_evidence_serialises_as_its_string(evidence):
    finding = _finding(Effect.INFO, Surface.DISPATCH)._replace(evidence=evidence)
    assert json.loads(json.dumps(finding.to_dict()))["evidence"] == evidence.value
