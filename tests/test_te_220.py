"""TransformerEngine 2.20 and the FP8 recipe: inside the horizon, and the recipe decides TE's fused attention."""

from __future__ import annotations

import json

import pytest


def verdicts(cli, *args):
    code, out, _ = cli("explain", "--hdim", "128", "--heads", "16", "--seqlen", "4096", "--train", *args,
                       "--format", "json")
    assert code in (0, 1), out
    doc = json.loads(out)
    return doc["results"][0], {v["backend"]: v for v in doc["results"][0]["verdicts"]}


def rules(verdict):
    return {f["rule"] for f in verdict["findings"]}


def test_te_2_20_is_inside_the_rules(cli):
    _, v = verdicts(cli, "--gpu", "H100", "--dtype", "bf16", "--te", "2.20.2", "--cudnn", "9.21.0",
                    "--flash-attn", "2.8.3")
    for b in ("te-flash", "te-fused", "te-unfused"):
        assert v[b]["status"] != "outside-rules" and "AD-OUTSIDE-RULES" not in rules(v[b]), b


@pytest.mark.parametrize("recipe, gpu, cudnn, refused", [
    ("mxfp8", "H100", "9.21.0", True), ("mxfp8", "B200", "9.20.0", True), ("mxfp8", "B200", "9.21.0", False),
    ("current", "H100", "9.21.0", True), ("delayed", "H100", "9.21.0", False), ("nvfp4", "B200", "9.21.0", True),
])
def test_fp8_recipe_switches_te_fused(cli, recipe, gpu, cudnn, refused):
    _, v = verdicts(cli, "--gpu", gpu, "--dtype", "fp8", "--fp8-recipe", recipe, "--te", "2.20.2", "--cudnn", cudnn)
    recipe_rules = {"TE-FUSED-MXFP8", "TE-FUSED-FP8-CURRENT-SM100", "TE-FUSED-FP8-BLOCK-NVFP4"}
    assert bool(rules(v["te-fused"]) & recipe_rules) is refused


def test_softcap_from_te_2_20(cli):
    _, v = verdicts(cli, "--gpu", "A100", "--dtype", "bf16", "--softcap", "30", "--te", "2.19", "--cudnn", "9.21.0")
    assert "TE-ALL-NO-SOFTCAP" in rules(v["te-unfused"])
    _, v = verdicts(cli, "--gpu", "A100", "--dtype", "bf16", "--softcap", "30", "--te", "2.20.2", "--cudnn", "9.21.0",
                    "--flash-attn", "2.8.3")
    assert v["te-unfused"]["status"] == "supported"
    assert "TE-FUSED-SOFTCAP-220" in rules(v["te-fused"])


def test_new_config_facts_round_trip_and_bad_values(cli):
    result, _ = verdicts(cli, "--gpu", "H100", "--dtype", "fp8", "--fp8-recipe", "current", "--sdpa-flash-impl", "fa3")
    assert result["config"]["fp8_recipe"] == "current" and result["config"]["sdpa_flash_impl"] == "fa3"
    code, _, err = cli("explain", "--hdim", "64", "--fp8-recipe", "mx")
    assert code == 2 and "fp8_recipe" in err and "mxfp8" in err
    code, _, err = cli("explain", "--hdim", "64", "--sdpa-flash-impl", "fa5")
    assert code == 2 and "sdpa_flash_impl" in err
