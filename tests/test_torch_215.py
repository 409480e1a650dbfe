"""torch 2.12-2.15 for SDPA: the releases answer inside the rules, and their facts rest on pull requests, not wheel text."""

from __future__ import annotations

import json
import pytest

from packaging.version import Version

from attndoctor.engine.rules import load_rulebase

SDPA = ("sdpa-flash", "sdpa-efficient", "sdpa-cudnn", "sdpa-math")
SHAPE = ["--hdim", "128", "--heads", "16", "--seqlen", "2048", "--dtype", "bf16"]


def verdicts(cli, *args: str) -> dict[str, dict]:
    code, out, err = cli("explain", *args, "--format", "json")
    assert code in (0, 1), err
    return {v["backend"]: v for v in json.loads(out)["results"][0]["verdicts"]}


def rules(verdict: dict) -> set[str]:
    return {f["rule"] for f in verdict["findings"]}


@pytest.mark.parametrize("torch", ["2.12.0", "2.13.0", "2.14.1", "2.15.0"])
@pytest.mark.parametrize("train", [[], ["--train"]])
def test_sdpa_answers_inside_the_rules_up_to_2_15(cli, torch, train):
    v = verdicts(cli, "--torch", torch, "--gpu", "H100", "--cudnn", "9.19.0", *SHAPE, *train)
    for backend in SDPA:
        assert v[backend]["status"] != "outside-rules" and "AD-OUTSIDE-RULES" not in rules(v[backend]), backend
    assert v["sdpa-math"]["status"] == "supported"


def test_flex_attention_stays_at_the_release_read(cli):
    v = verdicts(cli, "--torch", "2.16.0", "--gpu", "H100", "--cudnn", "9.19.0", *SHAPE, "--train")
    assert v["flex-attention"]["status"] == "outside-rules"
    v = verdicts(cli, "--torch", "2.15.0", "--gpu", "H100", "--cudnn", "9.19.0", *SHAPE, "--train")
    assert v["flex-attention"]["status"] != "outside-rules"


def test_cudnn_head_dim_256_on_2_15_follows_the_d256_gate(cli):
    args = ["--torch", "2.15.0", "--gpu", "H100", "--hdim", "256", "--heads", "8", "--seqlen", "2048", "--dtype", "bf16"]
    assert "SDPA-CUDNN-HEAD-DIM-214" in rules(verdicts(cli, *args, "--cudnn", "9.19.0")["sdpa-cudnn"])
    assert "SDPA-CUDNN-HEAD-DIM-214" not in rules(verdicts(cli, *args, "--cudnn", "9.23.0")["sdpa-cudnn"])


def test_the_2_15_cudnn_guard_refuses_where_the_advisory_warned(cli):
    args = ["--gpu", "H100", "--cudnn", "9.19.0", "--hdim", "64", "--heads", "1", "--seqlen", "704",
            "--dtype", "bf16", "--train", "--mask", "arbitrary"]
    on_215 = verdicts(cli, "--torch", "2.15.0", *args)["sdpa-cudnn"]
    assert "SDPA-CUDNN-SM90-BWD-KV64-GUARD-215" in rules(on_215) and on_215["supported"] is False
    on_214 = verdicts(cli, "--torch", "2.14.1", *args)["sdpa-cudnn"]
    assert "SDPA-CUDNN-SM90-BWD-KV64-GUARD-215" not in rules(on_214)


def test_rules_of_torch_2_12_and_later_rest_on_more_than_wheel_strings():
    late = [r for r in load_rulebase().rules if any(b.startswith("sdpa-") for b in r.backends)
            and "torch" in r.when and not r.when["torch"].contains(Version("2.11.0"))
            and any(r.when["torch"].contains(Version(v)) for v in ("2.12.0", "2.13.0", "2.14.0", "2.15.0"))]
    assert late, "no SDPA rule starts at torch 2.12 or later"
    for rule in late:
        assert not any("wheel strings" in ref for ref in rule.references), rule.id
        assert any("#" in ref or "@" in ref for ref in rule.references), rule.id
