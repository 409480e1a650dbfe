"""Stress runs recorded on the H100 (tests/observations/stress/*.jsonl, written by `verify --stress --record`) are
judged again without a GPU: every finding must still be explained by today's rules, except the fully-masked-row
conventions no advisory covers yet, and the blind run of pytorch#196678 must still show where it bites."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from attndoctor.config import make_config
from attndoctor.engine.evaluate import Evaluator
from attndoctor.engine.rules import load_rulebase
from attndoctor.environment import environment_from_dict
from attndoctor.runs.stress import explained_by, judge, masked_row_conventions
from attndoctor.runs.verification import backend_environment

HERE = Path(__file__).parent / "observations" / "stress"
FILES = sorted(HERE.glob("*.jsonl"))


def cases(path: Path) -> dict[tuple[str, str], dict]:
    """(config label, regime) -> {"config", "environment", "results": {backend: record}}."""
    out: dict[tuple[str, str], dict] = defaultdict(lambda: {"results": {}})
    for line in path.read_text().splitlines():
        record = json.loads(line)
        config = make_config(record["config"])
        case = out[config.name or config.label(), record["regime"]]
        case["config"], case["environment"] = config, record["environment"]
        case["results"][record["backend"]] = record
    return out


def findings(path: Path) -> list[tuple[str, str, str, str, tuple[str, ...]]]:
    base = load_rulebase()
    evaluator = Evaluator(base)
    by_id = {b.id: b for b in base.backends}
    out = []
    for (label, regime), case in cases(path).items():
        wrong, _ = judge(case["results"])
        if regime == "masked-rows":
            wrong += masked_row_conventions(case["results"], {b: by_id[b].framework for b in case["results"]})[1]
        env = environment_from_dict(case["environment"])
        for backend, kind, _detail in wrong:
            known = explained_by(evaluator, by_id[backend], case["config"], backend_environment(env, backend), regime)
            out.append((label, regime, backend, kind, known))
    return out


def test_stress_recordings_are_there():
    assert len(FILES) >= 3


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_every_recorded_stress_finding_is_explained_by_an_advisory(path):
    unexplained = [f for f in findings(path) if not f[4] and f[3] != "convention"]
    assert not unexplained, unexplained


def test_the_blind_run_finds_196678_at_lengths_64_mod_128_only():
    found = findings(HERE / "h100_torch2.11_cudnn9.19_blind_704.jsonl") + \
        findings(HERE / "h100_torch2.11_cudnn9.19_blind_640.jsonl")
    nan = {label.rsplit("@ ", 1)[1] for label, regime, backend, kind, _ in found
           if backend == "sdpa-cudnn" and regime == "low-lse" and kind == "non-finite"}
    assert nan == {"704x704", "576x576"}
    assert all("ADV-CUDNN-SM90-BWD-KV64-LSE-NAN" in f[4] for f in found if f[3] == "non-finite")


def test_the_cudnn_masked_row_convention_is_still_told_apart():
    found = findings(HERE / "h100_torch2.11_cudnn9.19_blind_640.jsonl")
    assert {(f[2], f[3]) for f in found if f[1] == "masked-rows"} == {("sdpa-cudnn", "convention")}


def test_the_decode_run_finds_the_seqlen_q_1_advisory_on_both_cudnn_paths():
    found = findings(HERE / "h100_torch2.11_cudnn9.19_decode.jsonl")
    hits = {(f[0].rsplit("@ ", 1)[1], f[2]) for f in found if "ADV-CUDNN-FE-SM90-BWD-SQ1-NEGLSE-DKDV-NAN" in f[4]}
    assert hits == {("1x1024", "sdpa-cudnn"), ("1x1024", "cudnn-fe"), ("1x960", "sdpa-cudnn"), ("1x960", "cudnn-fe")}
