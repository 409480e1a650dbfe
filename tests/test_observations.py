"""Every recorded GPU observation (tests/observations/*.jsonl, written by `verify --record`) is replayed against
today's rules, without a GPU: an observation the rules disagree with fails, unless known_gaps.toml lists it with
a reason. Disagreeing means: observed ok where the rules say unsupported, observed rejected (or crashed, or
wrong results) where they say supported, and `depends` at all (a probed machine's environment is complete)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attndoctor.config import make_config
from attndoctor.environment import environment_from_flags
from attndoctor.errors import UsageError
from attndoctor.runs.verification import (Observation, agreement, load_known_gaps, recorded_environment, replay)

HERE = Path(__file__).resolve().parent / "observations"
FILES = sorted(HERE.glob("*.jsonl"))
GAPS_FILE = HERE / "known_gaps.toml"


def _unexplained(replays, gaps):
    return [r for r in replays if r.disagrees and not any(g.matches(r) for g in gaps)]


@pytest.fixture(scope="module")
def replays():
    return replay(FILES)


def test_known_gaps_file_loads_and_every_gap_has_a_reason():
    for gap in load_known_gaps(GAPS_FILE):
        assert gap.reason.strip() and gap.backend


def test_recorded_observations_agree_with_the_rules(replays):
    if not FILES:
        pytest.skip("no observations recorded yet")
    bad = _unexplained(replays, load_known_gaps(GAPS_FILE))
    assert not bad, (f"{len(bad)} recorded observation(s) disagree with the rules; fix the rules, or list them in "
                     f"{GAPS_FILE.name} with a reason:\n" + "\n".join(r.describe() for r in bad[:40]))


def test_known_gaps_still_match_a_disagreement(replays):
    stale = [g for g in load_known_gaps(GAPS_FILE) if not any(r.disagrees and g.matches(r) for r in replays)]
    assert not stale, "gaps that no longer match any disagreement (the rules were fixed: remove them): " + ", ".join(
        f"gap {g.index} ({g.backend})" for g in stale)


# ---------------------------------------------------------------- the replay machinery, on a toy rule base


def _record(backend, outcome, config, env):
    obs = Observation(config=make_config(config), backend=backend, outcome=outcome, predicted="", agreement="",
                      result={"error": "x" if outcome != "ok" else ""})
    return obs.record(recorded_environment(env), seed=1)


def _write(tmp_path, records):
    path = tmp_path / "obs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


ENV = environment_from_flags({"gpu": "H100", "torch": "2.6.0", "cudnn": "9.1.0", "te": "none"})
BIG = dict(batch=1, heads=8, seqlen=128, hdim=192, dtype="bf16", train=True)  # T-ALPHA-HDIM applies (cudnn < 9.5)


def test_replay_flags_ok_where_the_rules_say_unsupported(tmp_path, toy_dir):
    path = _write(tmp_path, [_record("alpha", "ok", BIG, ENV), _record("alpha", "rejected", BIG, ENV)])
    first, second = replay([path], rules_dir=str(toy_dir))
    assert first.predicted == "unsupported" and first.disagrees and "observed ok" in first.describe()
    assert second.agreement == "confirmed" and not second.disagrees


def test_replay_flags_rejected_where_the_rules_say_supported(tmp_path, toy_dir):
    small = dict(BIG, hdim=64)
    path = _write(tmp_path, [_record("alpha", "rejected", small, ENV), _record("alpha", "ok", small, ENV)])
    rejected, ok = replay([path], rules_dir=str(toy_dir))
    assert rejected.predicted == "supported" and rejected.disagrees
    assert ok.agreement == "confirmed"


def test_replay_counts_depends_as_a_disagreement(tmp_path, toy_dir):
    unknown = environment_from_flags({"gpu": "H100", "torch": "2.6.0"})  # cudnn not known
    (item,) = replay([_write(tmp_path, [_record("alpha", "ok", BIG, unknown)])], rules_dir=str(toy_dir))
    assert item.predicted == "depends" and item.agreement == "undecided" and item.disagrees


def test_known_gaps_excuse_only_what_they_name(tmp_path, toy_dir):
    path = _write(tmp_path, [_record("alpha", "ok", BIG, ENV), _record("alpha", "ok", dict(BIG, hdim=256), ENV)])
    items = replay([path], rules_dir=str(toy_dir))
    gaps_file = tmp_path / "gaps.toml"
    gaps_file.write_text('[[gap]]\nbackend = "alpha"\noutcome = "ok"\nconfig = { hdim = 192 }\n'
                         'environment = { gpu = "H100", cudnn = "9.1" }\nreason = "kernel got better"\n')
    gaps = load_known_gaps(gaps_file)
    assert [r.config.hdim for r in _unexplained(items, gaps)] == [256]
    gaps_file.write_text('[[gap]]\nbackend = "alpha"\nreason = "x"\nenvironment = { cudnn = "9.2" }\n')
    assert len(_unexplained(items, load_known_gaps(gaps_file))) == 2


def test_bad_gap_and_bad_observation_are_usage_errors(tmp_path, toy_dir):
    gaps_file = tmp_path / "gaps.toml"
    gaps_file.write_text('[[gap]]\nbackend = "alpha"\n')
    with pytest.raises(UsageError, match="reason"):
        load_known_gaps(gaps_file)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"backend": "alpha", "outcome": "ok"}) + "\n")
    with pytest.raises(UsageError, match="lacks"):
        replay([bad], rules_dir=str(toy_dir))


def test_agreement_is_shared_with_verify():
    assert agreement("ok", "unsupported") == "contradicted"
    assert agreement("rejected", "supported") == "contradicted"
