"""flash-attn 4 by beta: each advisory names the beta that fixes it, and each verdict (advisories, and the checks
read from the wheels) turns exactly at the beta that changes it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

RULES = Path(__file__).resolve().parent.parent / "rules" / "advisories_fa4_sweep.toml"
BETA = re.compile(r"^4\.0\.0b(\d+)$")


def advisories():
    return tomllib.loads(RULES.read_text())["rule"]


def beta(version):
    match = BETA.match(version or "")
    return int(match.group(1)) if match else None


def fa4_verdict(explain, gpu, version, *config):
    doc = explain("--gpu", gpu, "--flash-attn-4", version, "--backend", "flash-attn-4", *config)
    return next(v for v in doc["results"][0]["verdicts"] if v["backend"] == "flash-attn-4")


def findings(explain, gpu, version, *config):
    return {f["rule"] for f in fa4_verdict(explain, gpu, version, *config)["findings"]}


@pytest.mark.parametrize("rule", advisories(), ids=lambda r: r["id"])
def test_the_fixing_beta_is_an_example_that_does_not_apply(rule):
    fixed = rule.get("fixed_in", {}).get("flash_attn_4")
    if fixed is None:
        assert "no released beta" in (rule["workaround"] + rule["notes"]).lower() or "not fixed" in rule["notes"].lower()
        return
    examples = [(beta(e["env"].get("flash_attn_4")), e["applies"]) for e in rule["examples"]]
    assert (beta(fixed), False) in examples
    assert any(applies and b is not None and b < beta(fixed) for b, applies in examples)


@pytest.mark.parametrize("rule", advisories(), ids=lambda r: r["id"])
def test_every_advisory_cites_an_upstream_thread_and_bounds_the_series(rule):
    assert any(re.search(r"#\d+", ref) for ref in rule["references"])
    assert "flash_attn_4 >= '4.0'" in rule["condition"] and "flash_attn_4 < '4.1'" in rule["condition"]
    assert "flash_attn_4" not in rule.get("when", {})


@pytest.mark.parametrize("gpu, config, rule, last, fixed", [
    ("RTX 5090", ("--hdim", "64", "--heads", "8", "--seqlen", "128", "--dtype", "bf16"),
     "ADV-FA4-SM120-FWD-TMA-EPILOGUE-CRASH", 20, 21),
    ("GB200", ("--hdim", "128", "--heads", "16", "--seqlen", "4096", "--dtype", "bf16", "--train"),
     "ADV-FA4-BWD-PREPROCESS-PDL-RACE", 9, 10),
    ("B200", ("--hdim", "128", "--heads", "16", "--seqlen", "4096", "--dtype", "fp8"),
     "ADV-FA4-SM100-FP8-FWD-MMAF8F6F4", 17, 18),
    ("H100", ("--hdim", "160", "--hdim-v", "128", "--heads", "16", "--seqlen", "2048", "--dtype", "bf16", "--train"),
     "ADV-FA4-SM90-BWD-HDIM-136-176-PARTITION", 29, 30),
])
def test_the_advisory_holds_up_to_the_last_affected_beta_and_not_at_the_fixing_one(explain, gpu, config, rule, last,
                                                                                    fixed):
    assert rule in findings(explain, gpu, f"4.0.0b{last}", *config)
    assert rule not in findings(explain, gpu, f"4.0.0b{fixed}", *config)


def test_the_hopper_dq_padding_advisory_names_head_dims_by_their_padding_not_by_a_list(explain):
    config = ("--heads", "8", "--seqlen", "512", "--dtype", "bf16", "--train")
    rule = "ADV-FA4-SM90-BWD-DQ-HDIM-PAD16"
    assert rule in findings(explain, "H100", "4.0.0b36", "--hdim", "72", *config)
    assert rule in findings(explain, "H100", "4.0.0b36", "--hdim", "112", *config)
    assert rule not in findings(explain, "H100", "4.0.0b36", "--hdim", "96", *config)
    assert rule not in findings(explain, "H100", "4.0.0b36", "--hdim", "128", *config)


SHAPE = ("--heads", "16", "--seqlen", "2048", "--dtype", "bf16")


def _fa4(explain, gpu: str, beta: str, *config: str) -> dict:
    return fa4_verdict(explain, gpu, beta, *SHAPE, *config)


def _rules(verdict: dict) -> set[str]:
    return {f["rule"] for f in verdict["findings"] if f["applies"] is not False}


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


def test_sm100_backward_dv_for_asymmetric_head_dims_follows_the_padding_of_each_beta(explain):
    """A v head dim of 80 fails to compile before beta 30 and gives a wrong dV from it (padded to 96, half 48)."""
    args = ("--hdim", "128", "--hdim-v", "80", "--train")
    b29, b30 = (_fa4(explain, "B200", b, *args) for b in ("4.0.0b29", "4.0.0b30"))
    assert b29["status"] == "unsupported" and "ADV-FA4-SM100-BWD-HDIM-NOT-MULT32" in _rules(b29)
    assert b30["status"] == "wrong-results" and "ADV-FA4-SM100-BWD-DV-ASYMMETRIC-HDIM" in _rules(b30)
    b36 = _fa4(explain, "B200", "4.0.0b36", "--hdim", "128", "--hdim-v", "64", "--train")
    assert "ADV-FA4-SM100-BWD-DV-ASYMMETRIC-HDIM" not in _rules(b36)
