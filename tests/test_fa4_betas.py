"""flash-attn 4 verdicts per beta: betas whose checks differ in the wheels give different verdicts."""

import json
from pathlib import Path

import pytest

from attndoctor.engine.rules import load_rulebase

ROOT = Path(__file__).resolve().parents[1]


def _verdict(doc: dict) -> dict:
    return next(v for v in doc["results"][0]["verdicts"] if v["backend"] == "flash-attn-4")


def _fa4(explain, gpu: str, beta: str, *config: str) -> dict:
    return _verdict(explain("--gpu", gpu, "--flash-attn-4", beta, "--backend", "flash-attn-4", "--heads", "16",
                            "--seqlen", "2048", "--dtype", "bf16", *config))


def _rules(verdict: dict) -> set[str]:
    return {f["rule"] for f in verdict["findings"] if f["applies"] is not False}


def test_newest_beta_read_answers_inside_the_rules(explain):
    verdict = _fa4(explain, "B200", "4.0.0b36", "--hdim", "128", "--infer")
    assert verdict["status"] == "supported"
    assert "FA4-BETA-NEWER-THAN-READ" not in _rules(verdict)
    assert "AD-OUTSIDE-RULES" not in _rules(verdict)


@pytest.mark.parametrize("beta", ["4.0.0b37", "4.0.0b2"])
def test_betas_outside_the_ones_read_are_outside_the_rules(explain, beta):
    verdict = _fa4(explain, "B200", beta, "--hdim", "128", "--infer")
    assert verdict["status"] == "outside-rules"


def test_hd256_softcap_forward_refused_until_beta33_and_runs_from_beta34(explain):
    args = ("--hdim", "256", "--softcap", "50", "--infer")
    b33, b34, b36 = (_fa4(explain, "B200", b, *args) for b in ("4.0.0b33", "4.0.0b34", "4.0.0b36"))
    assert b33["status"] == "unsupported" and "FA4-SOFTCAP-SM100-HD256" in _rules(b33)
    assert b34["status"] == "supported" and b36["status"] == "supported"


def test_hd256_softcap_backward_stays_refused_at_beta36(explain):
    verdict = _fa4(explain, "B200", "4.0.0b36", "--hdim", "256", "--softcap", "50", "--train")
    assert verdict["status"] == "unsupported"
    assert "FA4-SOFTCAP-SM100-HD256" in _rules(verdict)


def test_hd256_on_sm100_arrives_in_beta11(explain):
    b10, b11 = (_fa4(explain, "B200", b, "--hdim", "256", "--infer") for b in ("4.0.0b10", "4.0.0b11"))
    assert b10["status"] == "unsupported" and "FA4-HDIM-SM100-SHAPES-BY-BETA" in _rules(b10)
    assert b11["status"] != "unsupported"


def test_sm8x_forward_arrives_in_beta5(explain):
    # with the runtime the wheels require (>= 4.4.2): from 4.6.0 on, betas 3 to 19 fail every forward
    b4, b5 = (_fa4(explain, "A100 80GB", b, "--hdim", "128", "--infer", "--cutlass-dsl", "4.4.2")
              for b in ("4.0.0b4", "4.0.0b5"))
    assert b4["status"] == "unsupported" and "FA4-ARCH-FORWARD-BEFORE-B5" in _rules(b4)
    assert b5["status"] == "supported"


def test_fp8_forward_arrives_in_beta10(explain):
    b9, b10 = (_fa4(explain, "B200", b, "--hdim", "128", "--dtype", "fp8", "--infer") for b in ("4.0.0b9", "4.0.0b10"))
    assert b9["status"] == "unsupported" and "FA4-DTYPE-FP8-BEFORE-B10" in _rules(b9)
    assert b10["status"] != "unsupported"


def test_sm100_backward_head_dim_not_multiple_of_32_fixed_in_beta30(explain):
    b29, b30 = (_fa4(explain, "B200", b, "--hdim", "104", "--train") for b in ("4.0.0b29", "4.0.0b30"))
    assert b29["status"] == "unsupported" and "ADV-FA4-SM100-BWD-HDIM-NOT-MULT32" in _rules(b29)
    finding = next(f for f in b29["findings"] if f["rule"] == "ADV-FA4-SM100-BWD-HDIM-NOT-MULT32")
    assert finding["fixed_in"] == {"flash_attn_4": "4.0.0b30"}
    assert "ADV-FA4-SM100-BWD-HDIM-NOT-MULT32" not in _rules(b30)


def test_sm89_large_head_dim_forward_does_not_fit_but_sm80_does(explain):
    ada = _fa4(explain, "RTX 4090", "4.0.0b36", "--hdim", "256", "--infer", "--causal")
    ampere = _fa4(explain, "A100 80GB", "4.0.0b36", "--hdim", "256", "--infer", "--causal")
    small = _fa4(explain, "RTX 4090", "4.0.0b36", "--hdim", "192", "--infer", "--causal")
    assert ada["status"] == "unsupported" and "FA4-SM86-SM89-FWD-SMEM" in _rules(ada)
    assert "FA4-SM86-SM89-FWD-SMEM" not in _rules(ampere)
    assert "FA4-SM86-SM89-FWD-SMEM" not in _rules(small)


def test_without_a_beta_number_the_beta_checks_stay_open(explain):
    verdict = _fa4(explain, "B200", "4.0.0", "--hdim", "256", "--softcap", "50", "--infer")
    assert verdict["status"] == "depends"


def test_rules_cite_the_wheels_the_tool_read():
    """Every wheel a rule cites is one tools/fa4 read, and the read table records its sha256."""
    data = json.loads((ROOT / "tools" / "fa4" / "out" / "checks.json").read_text())
    read = {w["wheel"]: w["sha256"] for w in data["wheels"]}
    assert all(len(sha) == 64 for sha in read.values())
    cited = set()
    for rule in load_rulebase().rules:
        if "flash-attn-4" in rule.backends:
            for ref in rule.references:
                cited.update(word for word in ref.split() if word.startswith("flash_attn_4-") and word.endswith(".whl"))
    assert cited and cited <= set(read)


def test_sm100_backward_dv_for_asymmetric_head_dims_follows_the_padding_of_each_beta(explain):
    """A v head dim of 80 fails to compile before beta 30 and gives a wrong dV from it (padded to 96, half 48)."""
    args = ("--hdim", "128", "--hdim-v", "80", "--train")
    b29, b30 = (_fa4(explain, "B200", b, *args) for b in ("4.0.0b29", "4.0.0b30"))
    assert b29["status"] == "unsupported" and "ADV-FA4-SM100-BWD-HDIM-NOT-MULT32" in _rules(b29)
    assert b30["status"] == "wrong-results" and "ADV-FA4-SM100-BWD-DV-ASYMMETRIC-HDIM" in _rules(b30)
    b36 = _fa4(explain, "B200", "4.0.0b36", "--hdim", "128", "--hdim-v", "64", "--train")
    assert "ADV-FA4-SM100-BWD-DV-ASYMMETRIC-HDIM" not in _rules(b36)
