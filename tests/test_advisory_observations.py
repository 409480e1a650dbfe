"""Advisories reproduced on the H100 outside `verify --stress` (benchmarks/advisory_repro.py, one fresh process per
case): each recorded run that went wrong must still be predicted by its advisory for that config and machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attndoctor.config import make_config
from attndoctor.engine.evaluate import Evaluator
from attndoctor.engine.rules import load_rulebase
from attndoctor.environment import environment_from_flags

RECORDS = [json.loads(line) for path in sorted((Path(__file__).parent / "observations" / "advisories").glob("*.jsonl"))
           for line in path.read_text().splitlines() if line.strip()]


def test_there_are_recordings():
    assert len(RECORDS) >= 2


def _ids(records):
    return [r["advisory"] + (":control" if r.get("control") else "") for r in records]


@pytest.mark.parametrize("record", [r for r in RECORDS if not r.get("control")],
                         ids=_ids(r for r in RECORDS if not r.get("control")))
def test_a_reproduced_advisory_is_predicted_for_its_run(record):
    assert record["outcome"] in ("wrong-results", "crashed")
    assert all(applies is True for applies in _applies(record))


@pytest.mark.parametrize("record", [r for r in RECORDS if r.get("control")],
                         ids=_ids(r for r in RECORDS if r.get("control")))
def test_a_control_run_that_went_right_is_one_its_advisory_leaves_alone(record):
    """The same code just below the advisory's bound ran clean, and the advisory does not apply there."""
    assert record["outcome"] == "ok"
    assert not any(applies is True for applies in _applies(record))


def _applies(record):
    """Whether the advisory applies on each of its backends to the run's config and machine (False where it makes no
    finding)."""
    base = load_rulebase()
    rule = base.rule(record["advisory"])
    assert rule is not None
    env = environment_from_flags({"sm": record["env"]["sm"], "torch": record["env"]["torch"],
                                  "cudnn": record["env"]["cudnn"]})
    config = make_config(record["config"])
    evaluator = Evaluator(base)
    return [next((f.applies for f in evaluator.verdict(base.backend(b), config, env, search_fix=False).findings
                  if f.id == rule.id), False) for b in rule.backends]
