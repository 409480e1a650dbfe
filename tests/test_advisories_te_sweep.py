"""TransformerEngine advisories from the tracker sweeps (advisories_te_sweep.toml, and the fixes of 2.17-2.20 in
advisories_te_220_sweep.toml): each reaches the verdict of the backend it names, names its fix, and leaves the
neighbouring releases and configs alone."""

from __future__ import annotations

import pytest

from attndoctor.engine.rules import load_rulebase

FILE = "advisories_te_sweep.toml"
FILE_220 = "advisories_te_220_sweep.toml"


def finding(doc, backend, rule):
    verdict = next(v for v in doc["results"][0]["verdicts"] if v["backend"] == backend)
    return verdict, next((f for f in verdict["findings"] if f["rule"] == rule), None)


def sourced_te_advisories(file: str, least: int) -> list:
    """The advisories of one sweep file, each checked to be a TE advisory citing TE and showing both sides."""
    rules = [r for r in load_rulebase().rules if r.file.endswith(file)]
    assert len(rules) >= least
    for rule in rules:
        assert rule.id.startswith("ADV-TE-") and rule.advisory, rule.id
        assert set(rule.backends) <= {"te-flash", "te-fused", "te-unfused"}, rule.id
        assert any("NVIDIA/TransformerEngine" in ref for ref in rule.references), rule.id
        assert {e.applies for e in rule.examples} == {True, False}, rule.id
    return rules


def test_every_advisory_of_the_sweep_is_sourced_and_shows_both_sides():
    for rule in sourced_te_advisories(FILE, 16):
        assert rule.symptom and (rule.workaround or rule.fixes), rule.id


def test_every_advisory_fixed_in_te_217_to_220_is_sourced_fixed_and_shows_both_sides():
    for rule in sourced_te_advisories(FILE_220, 5):
        assert rule.fixed_in.get("te"), rule.id


FA4 = ["--gpu", "B200", "--te", "2.18.0", "--flash-attn-3", "none", "--heads", "8", "--hdim", "128", "--seqlen",
       "1024", "--dtype", "bf16", "--infer"]
FA4_ZERO = "ADV-TE-FLASH-FA4-CAUSAL-WINDOW-SENTINEL-ZERO"


@pytest.mark.parametrize("beta, mask, hit", [
    ("30", "causal", True),
    ("36", "padding-causal", True),
    ("29", "causal", False),
    ("30", "none", False),
])
def test_flash_attn_4_betas_from_30_zero_te_causal_attention(explain, beta, mask, hit):
    doc = explain(*FA4, "--flash-attn-4", f"4.0.0b{beta}", "--mask", mask)
    _, found = finding(doc, "te-flash", FA4_ZERO)
    assert (found is not None) == hit
    if hit:
        assert found["effect"] == "wrong-results" and "NVIDIA/TransformerEngine#3528" in " ".join(found["references"])


FP8 = ["--gpu", "H100", "--cudnn", "9.8.0", "--heads", "16", "--seqlen", "4096", "--dtype", "fp8", "--fp8-recipe",
       "delayed", "--mask", "causal", "--train"]
FP8_BWD = "ADV-TE-FUSED-FP8-HOPPER-BWD-HDIM-NOT-128"


def test_fp8_hopper_training_off_128_fails_until_te_28_and_the_bf16_backward_avoids_it(explain, cli):
    _, found = finding(explain(*FP8, "--te", "2.5.0", "--hdim", "64"), "te-fused", FP8_BWD)
    assert found is not None and found["fixed_in"] == {"te": "2.8.0"}
    assert "hidden_dim shoud be equal to 128" in found["symptom"]
    for extra in (["--te", "2.8.0", "--hdim", "64"], ["--te", "2.5.0", "--hdim", "128"],
                  ["--te", "2.5.0", "--hdim", "64", "--set-env", "NVTE_FP8_DPA_BWD=0"]):
        assert finding(explain(*FP8, *extra), "te-fused", FP8_BWD)[1] is None, extra


MLA = ["--gpu", "H100", "--te", "2.6.0", "--heads", "16", "--seqlen", "4096", "--hdim", "256", "--hdim-v", "128",
       "--dtype", "bf16", "--mask", "causal", "--train"]
MLA_BUG = "ADV-TE-FUSED-HOPPER-MLA-BWD-CUDNN911"


@pytest.mark.parametrize("te, cudnn, hit", [
    ("2.6.0", "9.11.1", True),   # TE 2.6 excludes 9.11.0 and 9.12.0 by equality only
    ("2.6.0", "9.11.0", False),
    ("2.5.0", "9.12.0", True),   # no exclusion before 2.6
    ("2.7.0", "9.13.0", False),  # fixed in cuDNN 9.13
    ("2.8.0", "9.11.1", False),  # TE 2.8 excludes every cuDNN from 9.11
])
def test_hopper_mla_backward_bug_is_the_complement_of_te_exclusions(explain, te, cudnn, hit):
    doc = explain(*[a if a != "2.6.0" else te for a in MLA], "--cudnn", cudnn)
    assert (finding(doc, "te-fused", MLA_BUG)[1] is not None) == hit


FA4_SM8X = ["--gpu", "A100", "--flash-attn-4", "4.0.0b30", "--flash-attn", "2.8.3", "--heads", "16", "--hdim", "128",
            "--seqlen", "2048", "--dtype", "bf16", "--mask", "causal"]


@pytest.mark.parametrize("te, mode, hit", [
    ("2.18.0", "--train", True),
    ("2.15.0", "--train", True),
    ("2.19.0", "--train", False),
    ("2.18.0", "--infer", False),
])
def test_flash_attn_4_training_on_ampere_fails_until_te_219(explain, te, mode, hit):
    _, found = finding(explain(*FA4_SM8X, "--te", te, mode), "te-flash", "ADV-TE-FLASH-FA4-SM8X-TRAIN-BWD-ASSERT")
    assert (found is not None) == hit
    if hit:
        assert found["fixed_in"] == {"te": "2.19.0"} and "Supported: 9.x" in found["symptom"]


DET_THD = ["--gpu", "H100", "--te", "2.18.0", "--cudnn", "9.18.1", "--batch", "2", "--heads", "32", "--kv-heads", "8",
           "--hdim", "128", "--dtype", "bf16", "--mask", "padding-causal", "--layout", "thd", "--train",
           "--deterministic"]


@pytest.mark.parametrize("seqlen, hit", [("131072", True), ("2048", False)])
def test_deterministic_thd_backward_workspace_bites_from_two_to_the_thirty(explain, seqlen, hit):
    _, found = finding(explain(*DET_THD, "--seqlen", seqlen), "te-fused",
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
    _, found = finding(explain(*HD256_SWA, "--te", te, "--window", window), "te-flash",
                       "ADV-TE-FLASH-FA4-SM100-HDIM256-SWA-ASSERT")
    assert (found is not None) == hit
