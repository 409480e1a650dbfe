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


@pytest.mark.parametrize("record", RECORDS, ids=[r["advisory"] for r in RECORDS])
def test_a_reproduced_advisory_is_predicted_for_its_run(record):
    assert record["outcome"] in ("wrong-results", "crashed")
    base = load_rulebase()
    rule = base.rule(record["advisory"])
    assert rule is not None
    env = environment_from_flags({"sm": record["env"]["sm"], "torch": record["env"]["torch"],
                                  "cudnn": record["env"]["cudnn"]})
    config = make_config(record["config"])
    evaluator = Evaluator(base)
    for backend_id in rule.backends:
        verdict = evaluator.verdict(base.backend(backend_id), config, env, search_fix=False)
        assert any(f.id == rule.id and f.applies is True for f in verdict.findings), backend_id
