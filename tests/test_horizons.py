"""Honest horizons: a version older or newer than the releases the rules were read at is never 'runs'."""

from __future__ import annotations

import json

import pytest

from attndoctor.engine.rules import build_rulebase
from attndoctor.errors import RuleError


def verdicts(cli, *args):
    code, out, _ = cli("explain", "--gpu", "H100", "--hdim", "128", "--heads", "16", "--seqlen", "2048",
                       "--dtype", "bf16", "--train", *args, "--format", "json")
    return code, {v["backend"]: v for v in json.loads(out)["results"][0]["verdicts"]}


def test_torch_before_2_0_has_no_sdpa(cli):
    _, v = verdicts(cli, "--torch", "1.13.1")
    for b in ("sdpa-flash", "sdpa-efficient", "sdpa-cudnn", "sdpa-math"):
        assert v[b]["status"] in ("api-mismatch", "unsupported") and v[b]["supported"] is False
        assert any(f["rule"] == "SDPA-ALL-TORCH-BEFORE-20" for f in v[b]["findings"])


@pytest.mark.parametrize("torch", ["2.0.1", "2.1.2", "2.16.0", "3.0.0"])
def test_torch_outside_the_modelled_releases_is_outside_the_rules(cli, torch):
    _, v = verdicts(cli, "--torch", torch, "--cudnn", "9.19.0")
    # 2.0's FlashAttention 1 runs on sm75 and sm8x only; its memory-efficient kernel refuses head dim > 64 from sm86
    refused = {"sdpa-flash": "SDPA-FLASH-ARCH-PRE27", "sdpa-efficient": "SDPA-EFF-HDIM-SM86-PRE21"} if (
        torch == "2.0.1") else {}
    for b in ("sdpa-flash", "sdpa-efficient", "sdpa-math"):
        if b in refused:
            assert v[b]["status"] == "unsupported" and any(f["rule"] == refused[b] for f in v[b]["findings"])
        else:
            assert v[b]["status"] == "outside-rules" and v[b]["supported"] is None, (b, v[b]["status"])


@pytest.mark.parametrize("torch", ["2.2.0", "2.11.0", "2.14.1"])
def test_torch_inside_runs(cli, torch):
    _, v = verdicts(cli, "--torch", torch, "--cudnn", "9.19.0")
    assert v["sdpa-math"]["status"] == "supported"


def test_newer_te_and_post_releases(cli):
    _, v = verdicts(cli, "--te", "2.21", "--cudnn", "9.19.0", "--flash-attn", "2.8.3")
    assert {v[b]["status"] for b in ("te-flash", "te-fused", "te-unfused")} == {"outside-rules"}
    _, v = verdicts(cli, "--flash-attn", "2.8.3.post2", "--torch", "2.11.0")
    assert v["flash-attn-2"]["status"] == "supported"
    _, v = verdicts(cli, "--flash-attn", "2.9.0", "--torch", "2.11.0")
    assert v["flash-attn-2"]["status"] == "outside-rules"


def test_outside_the_rules_does_not_fail_the_default_gate_but_require_does(cli):
    code, _ = verdicts(cli, "--torch", "2.16.0", "--cudnn", "9.19.0")
    assert code == 0
    code, _ = verdicts(cli, "--torch", "2.16.0", "--cudnn", "9.19.0", "--require", "sdpa-math")
    assert code == 1


def test_a_horizon_must_name_known_packages_and_sources(tmp_path):
    path = tmp_path / "h.toml"
    path.write_text('[[horizon]]\npackage = "pytorch"\nbackends = []\noldest = "2.0"\nnewest = "2.1"\n'
                    'references = ["x"]\n')
    with pytest.raises(RuleError, match="package"):
        build_rulebase([path])
    path.write_text('[[horizon]]\npackage = "torch"\nbackends = []\noldest = "2.4"\nnewest = "2.1"\n'
                    'references = ["x"]\n')
    with pytest.raises(RuleError, match="oldest is newer"):
        build_rulebase([path])


@pytest.mark.parametrize("gpu, backend, args", [
    ("T4", "flash-attn-2", []),
    ("T4", "flash-attn-3", []),
    ("A100", "flash-attn-3", ["--dtype", "fp8", "--infer"]),
])
def test_refused_not_depends_when_no_release_runs_it(cli, gpu, backend, args):
    code, out, _ = cli("explain", "--gpu", gpu, "--hdim", "128", "--heads", "16", "--seqlen", "2048",
                       *(args or ["--dtype", "bf16", "--train"]), "--backend", backend, "--format", "json")
    v = json.loads(out)["results"][0]["verdicts"][0]
    assert v["status"] == "unsupported" and v["supported"] is False
    assert v["findings"][0]["rule"] == "AD-NO-RELEASE-RUNS" and gpu in v["findings"][0]["message"]


def test_depends_stays_where_releases_differ(cli):
    code, out, _ = cli("explain", "--gpu", "H100", "--hdim", "192", "--hdim-v", "128", "--heads", "16", "--seqlen",
                       "2048", "--dtype", "bf16", "--train", "--backend", "te-fused", "--format", "json")
    v = json.loads(out)["results"][0]["verdicts"][0]
    assert v["status"] == "depends" and v["runs_where"]


def test_a_package_without_modelled_releases_never_reads_as_no_release_runs_it(cli):
    code, out, _ = cli("explain", "--backend", "cudnn-fe", "--hdim", "192", "--hdim-v", "128", "--cudnn", "9.5.0",
                       "--gpu", "H100", "--train", "--dtype", "bf16")
    assert "no cudnn_frontend release runs it" not in out and "depends" in out


SDPA = ("sdpa-flash", "sdpa-efficient", "sdpa-cudnn", "sdpa-math")
READ_SHAPE = ["--hdim", "128", "--heads", "16", "--dtype", "bf16"]
NEWEST_READ = ["--cudnn", "9.26.0", "--cudnn-frontend", "1.33.0", "--flash-attn", "2.8.3.post2",
               "--flash-attn-4", "4.0.0b27"]
"""The newest cuDNN, cudnn-frontend and flash-attn 2 releases of 2026 the horizons claim, with a flash-attn 4 beta."""
FA4_ALONE = ["--backend", "flash-attn-4", "--seqlen", "2048"]


@pytest.mark.parametrize(("args", "inside", "supported"), [
    # TransformerEngine 2.20 was read (rules/te_220.toml)
    (["--gpu", "H100", "--seqlen", "4096", "--train", "--te", "2.20.2", "--cudnn", "9.21.0", "--flash-attn", "2.8.3"],
     ("te-flash", "te-fused", "te-unfused"), ()),
    # torch 2.12 to 2.15 were read for SDPA, inference and training
    *[(["--torch", torch, "--gpu", "H100", "--cudnn", "9.19.0", "--seqlen", "2048", *train], SDPA, ("sdpa-math",))
      for torch in ("2.12.0", "2.13.0", "2.14.1", "2.15.0") for train in ([], ["--train"])],
    # FlexAttention was read up to torch 2.15
    (["--torch", "2.15.0", "--gpu", "H100", "--cudnn", "9.19.0", "--seqlen", "2048", "--train"], ("flex-attention",),
     ()),
    # the newest cuDNN, cudnn-frontend and flash-attn releases read, on Hopper, Blackwell and consumer Blackwell
    *[(["--gpu", gpu, *NEWEST_READ, "--seqlen", "4096", "--train", "--causal"],
       ("cudnn-fe", "flash-attn-2", "flash-attn-4"), ()) for gpu in ("H100", "B200", "RTX5090")],
    # the newest flash-attn 4 beta read
    (["--gpu", "B200", "--flash-attn-4", "4.0.0b36", *FA4_ALONE, "--infer"], ("flash-attn-4",), ("flash-attn-4",)),
])
def test_a_release_read_answers_inside_the_rules(explain, args, inside, supported):
    doc = explain(*READ_SHAPE, *args, exit=0)
    v = {x["backend"]: x for x in doc["results"][0]["verdicts"]}
    for backend in inside:
        rules = {f["rule"] for f in v[backend]["findings"]}
        assert v[backend]["status"] != "outside-rules" and "AD-OUTSIDE-RULES" not in rules, backend
        assert "FA4-BETA-NEWER-THAN-READ" not in rules, backend
    for backend in supported:
        assert v[backend]["status"] == "supported", backend


def test_flex_attention_past_the_release_read_is_outside(explain):
    doc = explain(*READ_SHAPE, "--torch", "2.16.0", "--gpu", "H100", "--cudnn", "9.19.0", "--seqlen", "2048",
                  "--train", exit=0)
    v = {x["backend"]: x for x in doc["results"][0]["verdicts"]}
    assert v["flex-attention"]["status"] == "outside-rules"


def test_releases_past_the_notes_read_stay_outside(explain):
    doc = explain(*READ_SHAPE, "--gpu", "H100", "--cudnn", "9.27.0", "--cudnn-frontend", "1.34.0", "--flash-attn-4",
                  "4.0.0b37", "--seqlen", "4096", "--train", "--causal", exit=0)
    v = {x["backend"]: x for x in doc["results"][0]["verdicts"]}
    assert "AD-OUTSIDE-RULES" in {f["rule"] for f in v["cudnn-fe"]["findings"]}
    assert "FA4-BETA-NEWER-THAN-READ" in {f["rule"] for f in v["flash-attn-4"]["findings"]}
    assert v["flash-attn-4"]["status"] == "outside-rules"


def _fa4(explain, beta: str, *config: str) -> dict:
    doc = explain("--gpu", "B200", "--flash-attn-4", beta, *FA4_ALONE, "--heads", "16", "--dtype", "bf16", *config)
    return next(v for v in doc["results"][0]["verdicts"] if v["backend"] == "flash-attn-4")


@pytest.mark.parametrize("beta", ["4.0.0b37", "4.0.0b2"])
def test_flash_attn_4_betas_outside_the_ones_read_are_outside_the_rules(explain, beta):
    assert _fa4(explain, beta, "--hdim", "128", "--infer")["status"] == "outside-rules"


def test_without_a_beta_number_the_flash_attn_4_beta_checks_stay_open(explain):
    verdict = _fa4(explain, "4.0.0", "--hdim", "256", "--softcap", "50", "--infer")
    assert verdict["status"] == "depends"
