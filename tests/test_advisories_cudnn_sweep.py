"""Advisories of the cuDNN attention sweep reach the verdicts of sdpa-cudnn, cudnn-fe and te-fused with their fixes."""

from __future__ import annotations

import tomllib
from pathlib import Path

from attndoctor.engine.expr import FUNCTIONS, VARIABLES
from attndoctor.engine.rules import EVIDENCE

RULES = Path(__file__).resolve().parents[1] / "rules" / "advisories_cudnn_sweep.toml"


def findings(explain, *args, backend):
    doc = explain(*args)
    verdict = next(v for v in doc["results"][0]["verdicts"] if v["backend"] == backend)
    return {f["rule"]: f for f in verdict["findings"]}


def test_every_advisory_names_its_sources_and_both_kinds_of_example():
    rules = tomllib.loads(RULES.read_text())["rule"]
    assert len(rules) >= 14
    for rule in rules:
        assert rule["id"].startswith("ADV-"), rule["id"]
        assert rule["evidence"] in EVIDENCE, rule["id"]
        assert any("#" in ref or "@" in ref for ref in rule["references"]), rule["id"]
        kinds = {example["applies"] for example in rule["examples"]}
        assert kinds == {True, False}, rule["id"]
        if rule["evidence"] == "inferred":
            assert rule.get("notes"), rule["id"]


def test_conditions_use_only_known_variables():
    import re
    rules = tomllib.loads(RULES.read_text())["rule"]
    for rule in rules:
        text = re.sub(r"'[^']*'", "", rule.get("condition", ""))
        names = set(re.findall(r"\b[a-z_][a-z0-9_]*\b", text)) - {"and", "or", "not", "in"} - set(FUNCTIONS)
        assert names <= set(VARIABLES), (rule["id"], names - set(VARIABLES))


DROPOUT = ["--gpu", "H100", "--cudnn", "9.12.0", "--heads", "8", "--seqlen", "1024", "--hdim", "64", "--dtype", "bf16",
           "--train", "--layout", "bhsd", "--dropout", "0.1"]


def test_torch_2_8_dropout_with_cudnn_9_12_is_refused_until_torch_2_9(explain):
    found = findings(explain, *DROPOUT, "--torch", "2.8.0", backend="sdpa-cudnn")
    assert found["ADV-SDPA-CUDNN-DROPOUT-CUDNN911-913-PRE29"]["applies"] is True
    assert found["ADV-SDPA-CUDNN-DROPOUT-CUDNN911-913-PRE29"]["fixed_in"] == {"torch": "2.9.0", "cudnn": "9.14.0"}
    assert "ADV-SDPA-CUDNN-DROPOUT-CUDNN911-913-PRE29" not in findings(explain, *DROPOUT, "--torch", "2.9.0",
                                                                       backend="sdpa-cudnn")


def test_dropout_not_a_sixteenth_is_rounded_before_torch_2_12(explain):
    found = findings(explain, *DROPOUT, "--torch", "2.11.0", backend="sdpa-cudnn")
    assert found["ADV-SDPA-CUDNN-DROPOUT-SIXTEENTHS-ROUNDED-PRE212"]["applies"] is True
    sixteenth = [a if a != "0.1" else "0.125" for a in DROPOUT]
    assert "ADV-SDPA-CUDNN-DROPOUT-SIXTEENTHS-ROUNDED-PRE212" not in findings(
        explain, *sixteenth, "--torch", "2.11.0", backend="sdpa-cudnn")


CROSS = ["--gpu", "H100", "--cudnn", "9.12.0", "--heads", "8", "--seqlen-q", "1024", "--seqlen-kv", "1000", "--hdim",
         "64", "--dtype", "bf16", "--train", "--layout", "bshd"]


def test_frontend_1_15_0_leaves_the_key_tail_of_cross_attention_exposed(explain):
    advisory = "ADV-CUDNN-FE-1150-KV-TAIL-WORKAROUND-KEYED-ON-SQ"
    found = findings(explain, *CROSS, "--cudnn-frontend", "1.15.0", backend="cudnn-fe")
    assert found[advisory]["fixed_in"] == {"cudnn_frontend": "1.16.0", "cudnn": "9.15.1"}
    assert "NVIDIA/cudnn-frontend#160" in " ".join(found[advisory]["references"])
    assert advisory not in findings(explain, *CROSS, "--cudnn-frontend", "1.16.0", backend="cudnn-fe")
    patched_backend = [a if a != "9.12.0" else "9.15.1" for a in CROSS]
    assert advisory not in findings(explain, *patched_backend, "--cudnn-frontend", "1.15.0", backend="cudnn-fe")


def test_te_2_10_ships_the_frontend_with_the_key_tail_workaround(explain):
    advisory = "ADV-TE-FUSED-BWD-KV-TAIL-NEGLSE-NAN-PRE210"
    args = ["--gpu", "H100", "--cudnn", "9.12.0", "--heads", "16", "--seqlen", "1000", "--hdim", "128", "--dtype",
            "bf16", "--train", "--causal", "--layout", "bshd"]
    assert advisory in findings(explain, *args, "--te", "2.8.0", backend="te-fused")
    assert advisory not in findings(explain, *args, "--te", "2.10.0", backend="te-fused")


def test_frost_padded_thd_offsets_need_the_engines_and_stop_at_1_32(explain):
    advisory = "ADV-CUDNN-FE-FROST-FWD-PADDED-THD-OFFSETS-IGNORED"
    args = ["--gpu", "B200", "--cudnn", "9.25.0", "--heads", "8", "--seqlen", "2048", "--hdim", "128", "--dtype",
            "bf16", "--infer", "--layout", "thd"]
    found = findings(explain, *args, "--cudnn-frontend", "1.30.0", backend="cudnn-fe")
    assert found[advisory]["fixed_in"] == {"cudnn_frontend": "1.32.0"}
    assert advisory not in findings(explain, *args, "--cudnn-frontend", "1.28.0", backend="cudnn-fe")
    assert advisory in findings(explain, *args, "--cudnn-frontend", "1.28.0",
                                "--set-env", "CUDNN_FRONTEND_ENABLE_FROST_ENGINES=1", backend="cudnn-fe")
    assert advisory not in findings(explain, *args, "--cudnn-frontend", "1.32.0", backend="cudnn-fe")
