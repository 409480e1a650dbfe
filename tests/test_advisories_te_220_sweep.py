"""TransformerEngine advisories fixed in 2.17-2.20: each reaches the verdict of the backend it names, names the fixing
release, and leaves the fixed release and the neighbouring configs alone."""

from __future__ import annotations

import pytest

from attndoctor.engine.rules import load_rulebase

FILE = "advisories_te_220_sweep.toml"


def finding(doc, backend, rule):
    verdict = next(v for v in doc["results"][0]["verdicts"] if v["backend"] == backend)
    return next((f for f in verdict["findings"] if f["rule"] == rule), None)


def test_every_advisory_of_the_sweep_is_sourced_fixed_and_shows_both_sides():
    rules = [r for r in load_rulebase().rules if r.file.endswith(FILE)]
    assert len(rules) >= 5
    for rule in rules:
        assert rule.id.startswith("ADV-TE-") and rule.advisory, rule.id
        assert set(rule.backends) <= {"te-flash", "te-fused", "te-unfused"}, rule.id
        assert any("NVIDIA/TransformerEngine" in ref for ref in rule.references), rule.id
        assert rule.fixed_in.get("te"), rule.id
        assert {e.applies for e in rule.examples} == {True, False}, rule.id


FA4_SM8X = ["--gpu", "A100", "--flash-attn-4", "4.0.0b30", "--flash-attn", "2.8.3", "--heads", "16", "--hdim", "128",
            "--seqlen", "2048", "--dtype", "bf16", "--mask", "causal"]


@pytest.mark.parametrize("te, mode, hit", [
    ("2.18.0", "--train", True),
    ("2.15.0", "--train", True),
    ("2.19.0", "--train", False),
    ("2.18.0", "--infer", False),
])
def test_flash_attn_4_training_on_ampere_fails_until_te_219(explain, te, mode, hit):
    found = finding(explain(*FA4_SM8X, "--te", te, mode), "te-flash", "ADV-TE-FLASH-FA4-SM8X-TRAIN-BWD-ASSERT")
    assert (found is not None) == hit
    if hit:
        assert found["fixed_in"] == {"te": "2.19.0"} and "Supported: 9.x" in found["symptom"]


DET_THD = ["--gpu", "H100", "--te", "2.18.0", "--cudnn", "9.18.1", "--batch", "2", "--heads", "32", "--kv-heads", "8",
           "--hdim", "128", "--dtype", "bf16", "--mask", "padding-causal", "--layout", "thd", "--train",
           "--deterministic"]


@pytest.mark.parametrize("seqlen, hit", [("131072", True), ("2048", False)])
def test_deterministic_thd_backward_workspace_bites_from_two_to_the_thirty(explain, seqlen, hit):
    found = finding(explain(*DET_THD, "--seqlen", seqlen), "te-fused",
                    "ADV-TE-FUSED-SM90-DETERMINISTIC-THD-BWD-WORKSPACE-OOM")
    assert (found is not None) == hit


HD256_SWA = ["--gpu", "B200", "--flash-attn-4", "4.0.0b18", "--heads", "16", "--kv-heads", "8", "--hdim", "256",
             "--seqlen", "4096", "--dtype", "bf16", "--mask", "causal", "--train"]


@pytest.mark.parametrize("te, window, hit", [
    ("2.17.0", "1023,0", True),
    ("2.18.0", "1023,0", False),
    ("2.17.0", "-1,0", False),
])
def test_fa4_head_dim_256_sliding_window_asserts_until_te_218(explain, te, window, hit):
    found = finding(explain(*HD256_SWA, "--te", te, "--window", window), "te-flash",
                    "ADV-TE-FLASH-FA4-SM100-HDIM256-SWA-ASSERT")
    assert (found is not None) == hit
