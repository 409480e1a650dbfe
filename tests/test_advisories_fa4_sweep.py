"""flash-attn 4 advisories by beta: each names the beta that fixes it, and the verdict turns exactly at that beta."""

from __future__ import annotations

import json
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


def findings(cli, gpu, version, *config):
    code, out, err = cli("explain", "--gpu", gpu, "--flash-attn-4", version, "--backend", "flash-attn-4",
                         *config, "--format", "json")
    assert code in (0, 1), err
    verdict = next(v for v in json.loads(out)["results"][0]["verdicts"] if v["backend"] == "flash-attn-4")
    return {f["rule"] for f in verdict["findings"]}


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
def test_the_advisory_holds_up_to_the_last_affected_beta_and_not_at_the_fixing_one(cli, gpu, config, rule, last,
                                                                                    fixed):
    assert rule in findings(cli, gpu, f"4.0.0b{last}", *config)
    assert rule not in findings(cli, gpu, f"4.0.0b{fixed}", *config)


def test_the_hopper_dq_padding_advisory_names_head_dims_by_their_padding_not_by_a_list(cli):
    config = ("--heads", "8", "--seqlen", "512", "--dtype", "bf16", "--train")
    rule = "ADV-FA4-SM90-BWD-DQ-HDIM-PAD16"
    assert rule in findings(cli, "H100", "4.0.0b36", "--hdim", "72", *config)
    assert rule in findings(cli, "H100", "4.0.0b36", "--hdim", "112", *config)
    assert rule not in findings(cli, "H100", "4.0.0b36", "--hdim", "96", *config)
    assert rule not in findings(cli, "H100", "4.0.0b36", "--hdim", "128", *config)
