"""Corrected rules, each pinned by a case where the corrected fact applies and one where it does not."""

from __future__ import annotations

import pytest

from attndoctor.config import make_config
from attndoctor.engine.evaluate import Evaluator
from attndoctor.engine.rules import load_rulebase
from attndoctor.environment import environment_from_flags

EV = Evaluator(load_rulebase())
BASE = dict(hdim=128, heads=16, seqlen=4096, dtype="bf16", train=True)


def verdict(config: dict, env: dict, backend: str):
    return EV.evaluate(make_config(config), environment_from_flags(env)).verdict(backend)


def applied(v) -> set[str]:
    return {f.id for f in v.findings if f.applies is True}


def te_env(te: str, gpu: str = "A100", cudnn: str = "8.9.7") -> dict:
    return {"gpu": gpu, "te": te, "cudnn": cudnn, "flash_attn": "2.3.3", "torch": "2.2.0"}


# ---------------------------------------------------------------- TE 1.0 / 1.1 / 1.2 fused-attention gates

@pytest.mark.parametrize(("te", "config", "gpu", "runs"), [
    # 1.2 takes any head dim <= 128 that is a multiple of 8, no mask, padding, GQA (cuDNN >= 8.9.7), bias on sm90
    ("1.2", dict(BASE, hdim=96, mask="none"), "A100", True),
    ("1.2", dict(BASE, mask="padding"), "A100", True),
    ("1.2", dict(BASE, heads=32, kv_heads=8, mask="causal"), "H100", True),
    ("1.2", dict(BASE, mask="causal", bias="post-scale"), "H100", True),
    ("1.2", dict(BASE, hdim=256, mask="causal"), "H100", False),
    ("1.2", dict(BASE, seqlen=1000, mask="causal"), "H100", False),
    # 1.1: the arbitrary-seqlen path only for a packed bs3hd/sb3hd buffer; padding and GQA off in Python
    ("1.1", dict(BASE, mask="causal", layout="bs3hd"), "A100", True),
    ("1.1", dict(BASE, mask="causal", layout="bshd_bshd_bshd"), "A100", False),
    ("1.1", dict(BASE, mask="padding-causal", layout="bs3hd"), "A100", False),
    # 1.0: causal, d 64/128, no bias, MHA
    ("1.0", dict(BASE, mask="causal"), "A100", True),
    ("1.0", dict(BASE, mask="none"), "A100", False),
    ("1.0", dict(BASE, heads=32, kv_heads=8, mask="causal"), "A100", False),
])
def test_te_fused_gate_by_release(te, config, gpu, runs):
    v = verdict(config, te_env(te, gpu), "te-fused")
    assert (v.supported is True) is runs, (v.status, applied(v))
    assert (v.supported is False) is (not runs), (v.status, applied(v))


# ---------------------------------------------------------------- post-releases and local labels of flash-attn 2

def fa_env(te: str, fa: str) -> dict:
    return {"gpu": "A100 80GB", "te": te, "flash_attn": fa, "flash_attn_3": "none", "flash_attn_4": "none",
            "cudnn": "9.10.2", "torch": "2.8.0"}


@pytest.mark.parametrize(("te", "fa", "accepted"), [
    ("2.5", "2.7.4.post1", True),            # max_version = PkgVersion("2.7.4.post1"), compared with <=
    ("2.1", "2.7.4.post1", True),
    ("2.5", "2.7.4.post1+cu12torch2.6", False),  # no .public before 2.15: the local label sorts above the max
    ("2.12", "2.8.3", True),
    ("2.12", "2.8.3.post2", False),          # <= 2.8.3
    ("2.12", "2.8.3+cu128", False),
    ("2.15", "2.8.3+cu128", True),           # 2.15-2.18 strip the local label
    ("2.18", "2.8.3.post1", False),
    ("2.19", "2.8.3.post2", True),           # < 2.8.4
    ("2.19", "2.8.3+cu128", True),
    ("2.19", "2.8.4", False),
])
def test_te_flash_attn_range_keeps_post_releases(te, fa, accepted):
    v = verdict(dict(BASE, mask="causal"), fa_env(te, fa), "te-flash")
    assert ("TE-FLASH-FA2-VERSION-RANGE" in applied(v)) is (not accepted), (v.status, applied(v))


@pytest.mark.parametrize(("te", "fa", "fires"), [
    ("2.12", "2.8.3.post2", True), ("2.12", "2.8.3", False), ("2.19", "2.8.3.post2", False)])
def test_post_release_note_fires_for_the_post_wheels(te, fa, fires):
    v = verdict(dict(BASE, mask="causal"), fa_env(te, fa), "te-flash")
    assert ("TE-FLASH-FA2-POST-RELEASE" in applied(v)) is fires


def test_explain_keeps_the_local_label_of_flash_attn(cli):
    args = ("explain", "--gpu", "A100", "--te", "2.12", "--flash-attn-3", "none", "--flash-attn-4", "none",
            "--hdim", "128", "--heads", "16", "--seqlen", "4096", "--dtype", "bf16", "--train", "--format", "json")
    import json
    code, out, _ = cli(*args, "--flash-attn", "2.8.3+cu128")
    report = json.loads(out)
    assert report["environment"]["versions"]["flash_attn"] == "2.8.3+cu128"
    te_flash = next(v for v in report["results"][0]["verdicts"] if v["backend"] == "te-flash")
    assert te_flash["supported"] is False and "TE-FLASH-FA2-VERSION-RANGE" in out
    _, out, _ = cli(*args, "--flash-attn", "2.8.3")
    te_flash = next(v for v in json.loads(out)["results"][0]["verdicts"] if v["backend"] == "te-flash")
    assert te_flash["supported"] is True


# ---------------------------------------------------------------- TE 2.19: flash-attn 4 below sm90 and d 512/512 on SM100/110

def fa4_env(te: str, gpu: str, fa4: str = "4.0.0b11") -> dict:
    return {"gpu": gpu, "te": te, "flash_attn": "none", "flash_attn_3": "none", "flash_attn_4": fa4,
            "cudnn": "9.19.0", "torch": "2.11.0"}


def test_te_219_drops_flash_attn_4_below_sm90():
    old = verdict(dict(BASE, mask="causal"), fa4_env("2.18", "A100 80GB"), "te-flash")
    assert "TE-FLASH-FA4-SM8X-BACKWARD" in applied(old)
    new = verdict(dict(BASE, mask="causal"), fa4_env("2.19", "A100 80GB"), "te-flash")
    assert new.supported is False and "TE-FLASH-FA4-SM8X-BACKWARD" not in applied(new)
    assert "TE-FLASH-NO-FLASH-ATTN" in applied(new), applied(new)
    assert verdict(dict(BASE, mask="causal"), fa4_env("2.19", "B200"), "te-flash").supported is True


def test_te_219_refuses_flash_attn_4_for_512_512_on_blackwell():
    cfg = dict(BASE, hdim=512, train=False, mask="causal")
    assert "TE-FLASH-FA4-ONLY-REFUSES" in applied(verdict(cfg, fa4_env("2.19", "B200"), "te-flash"))
    assert "TE-FLASH-FA4-ONLY-REFUSES" not in applied(verdict(cfg, fa4_env("2.18", "B200", "4.0.0b16"), "te-flash"))
    # TE 2.16-2.18 leave the head dims to FA4's validator, which takes 512/512 only from beta 16
    assert "TE-FLASH-FA4-ONLY-REFUSES" in applied(verdict(cfg, fa4_env("2.18", "B200"), "te-flash"))
    mla = dict(cfg, hdim=64, hdim_v=512)
    assert "TE-FLASH-FA4-ONLY-REFUSES" not in applied(verdict(mla, fa4_env("2.19", "B200"), "te-flash"))


# ---------------------------------------------------------------- flash-attn 2.7.3+ hdim > 192 with dropout on sm86/sm89

@pytest.mark.parametrize(("fa", "gpu", "status"), [
    ("2.7.2.post1", "RTX 3090", "unsupported"),   # the TORCH_CHECK is still there
    ("2.7.3", "RTX 3090", "wrong-results"),       # check gone, launcher calls nothing
    ("2.8.3.post1", "RTX 4090", "wrong-results"),
    ("2.8.3.post1", "A100", "supported"),         # 144 KB of shared memory: the A100 kernel runs
])
def test_flash_attn_hdim256_dropout_backward_on_99kb_gpus(fa, gpu, status):
    cfg = dict(hdim=256, heads=8, seqlen=2048, dtype="bf16", train=True, dropout=0.1)
    v = verdict(cfg, {"gpu": gpu, "flash_attn": fa, "torch": "2.8.0"}, "flash-attn-2")
    assert v.status == status, (v.status, applied(v))
    assert verdict(dict(cfg, dropout=0.0), {"gpu": gpu, "flash_attn": fa, "torch": "2.8.0"},
                   "flash-attn-2").supported is True


# ---------------------------------------------------------------- SDPA math on jagged (thd) inputs with is_causal

@pytest.mark.parametrize(("torch", "mask", "refused"), [
    ("2.6.0", "padding-causal", True),   # the jagged math check predates 2.11, where it was first observed
    ("2.4.1", "causal", True),
    ("2.6.0", "padding", False),         # the offsets are the padding: no mask tensor, math runs
])
def test_sdpa_math_refuses_jagged_causal_before_211(torch, mask, refused):
    cfg = dict(hdim=128, heads=8, seqlen=512, dtype="bf16", mask=mask, layout="thd", train=False)
    v = verdict(cfg, {"gpu": "H100", "torch": torch}, "sdpa-math")
    assert ("SDPA-MATH-THD-CAUSAL" in applied(v)) is refused, applied(v)


def test_explain_says_what_a_jagged_padding_causal_batch_should_pass(cli):
    code, out, _ = cli("explain", "--gpu", "H100", "--torch", "2.6.0", "--hdim", "128", "--heads", "8",
                       "--seqlen", "512", "--dtype", "bf16", "--infer", "--layout", "thd", "--mask", "padding-causal",
                       "--require", "sdpa-math")
    assert code == 1
    flat = " ".join(out.split())
    assert "offsets" in flat and "attn_mask" in flat, out


# ---------------------------------------------------------------- rules resting on wheel strings alone say so

def test_a_rule_read_only_from_wheel_strings_is_marked_inferred():
    import re
    loose = []
    for rule in load_rulebase().rules:
        refs = list(rule.references)
        if not any("wheel strings" in r for r in refs):
            continue
        sourced = [r for r in refs if "wheel strings" not in r and re.search(r"@[0-9a-fv]|observed", r)]
        if not sourced and rule.evidence != "inferred":
            loose.append(rule.id)
    assert not loose, loose


@pytest.mark.parametrize(("te", "gpu", "runs"), [("1.2", "A100", False), ("1.7", "A100", True), ("1.2", "H100", True)])
def test_te_12_to_16_post_scale_bias_only_on_sm90_even_with_cudnn9(te, gpu, runs):
    v = verdict(dict(BASE, mask="causal", bias="post-scale"), te_env(te, gpu, cudnn="9.0.0"), "te-fused")
    assert (v.supported is True) is runs, (v.status, applied(v))


# ---------------------------------------------------------------- TE FP8 fused attention: Hopper training split from 2.8

@pytest.mark.parametrize(("te", "hdim", "refused", "advisory"), [
    ("2.5", 64, False, True),     # the gate admits it; the FP8 backward fails at run time
    ("2.7", 256, False, True),
    ("2.8", 64, True, False),     # is_training reaches the FP8 clause: d = 128 only
    ("2.9", 256, True, False),
    ("2.8", 128, False, False),
])
def test_te_fp8_hopper_training_head_dim_refused_from_28(te, hdim, refused, advisory):
    cfg = dict(hdim=hdim, heads=16, seqlen=4096, dtype="fp8", train=True, mask="causal", layout="bshd")
    v = verdict(cfg, {"gpu": "H100", "te": te, "cudnn": "9.8.0"}, "te-fused")
    assert ("TE-FUSED-FP8-SHAPE" in applied(v)) is refused, applied(v)
    assert ("ADV-TE-FUSED-FP8-HOPPER-BWD-HDIM-NOT-128" in applied(v)) is advisory, applied(v)
    inference = verdict(dict(cfg, train=False), {"gpu": "H100", "te": te, "cudnn": "9.8.0"}, "te-fused")
    assert "TE-FUSED-FP8-SHAPE" not in applied(inference)


# ---------------------------------------------------------------- cudnn-frontend Hopper backward head-dim pairs per release

@pytest.mark.parametrize(("fe", "cudnn", "hdim", "hdim_v", "refused"), [
    ("1.14.1", "9.11.0", 160, 96, True),
    ("1.14.1", "9.12.0", 160, 96, True),
    ("1.14.1", "9.13.0", 160, 96, False),   # 1.14.1 bounds the check to cuDNN below 9.13
    ("1.14.0", "9.13.0", 160, 96, True),    # 1.14.0 has no upper bound
    ("1.14.1", "9.11.0", 192, 96, False),   # Q/K 192 passes the (d_v != 128) && (d_qk != 192) test
    ("1.14.0", "9.11.0", 192, 96, False),
    ("1.14.1", "9.11.0", 160, 128, False),
    ("1.14.1", "9.11.0", 192, 128, False),
    ("1.14.0", "9.11.0", 192, 128, False),
    ("1.13.0", "9.10.2", 192, 96, True),    # 1.13.0: unequal pairs above 128 only as 192/128, any cuDNN
    ("1.13.0", "9.10.2", 256, 128, True),
    ("1.13.0", "9.10.2", 192, 128, False),
    ("1.13.0", "9.10.2", 256, 256, False),
    ("1.12.1", "9.11.0", 160, 96, False),   # no pair check before 1.13.0
])
def test_cudnn_fe_hopper_backward_pairs_per_frontend(fe, cudnn, hdim, hdim_v, refused):
    cfg = dict(hdim=hdim, hdim_v=hdim_v, heads=16, seqlen=4096, dtype="bf16", train=True)
    v = verdict(cfg, {"gpu": "H100", "cudnn": cudnn, "cudnn_frontend": fe}, "cudnn-fe")
    assert ("CUDNN-FE-HDIM-BWD-HOPPER-PAIRS" in applied(v)) is refused, (v.status, applied(v))
    assert (v.status == "unsupported") is refused, (v.status, applied(v))


def test_cudnn_fe_hopper_pairs_stay_on_the_backend_whose_frontend_is_known():
    rule = next(r for r in load_rulebase().rules if r.id == "CUDNN-FE-HDIM-BWD-HOPPER-PAIRS")
    assert tuple(rule.backends) == ("cudnn-fe",)


FE_133 = ["--gpu", "H100", "--cudnn", "9.26.0", "--cudnn-frontend", "1.33.0", "--flash-attn", "2.8.3.post2",
          "--flash-attn-4", "4.0.0b27", "--heads", "16", "--dtype", "bf16"]


@pytest.mark.parametrize("case", [
    ["--infer", "--paged-kv", "--hdim", "256", "--seqlen-q", "1", "--seqlen-kv", "8192"],
    ["--train", "--causal", "--hdim", "256", "--seqlen", "4096"],
    ["--train", "--causal", "--hdim", "128", "--seqlen", "4096", "--deterministic"],
    ["--train", "--mask", "causal-bottom-right", "--hdim", "128", "--seqlen-q", "1024", "--seqlen-kv", "4096"],
])
def test_cudnn_fe_133_takes_the_hopper_paths(explain, case):
    doc = explain(*FE_133, *case, exit=0)
    verdict = next(v for v in doc["results"][0]["verdicts"] if v["backend"] == "cudnn-fe")
    assert verdict["status"] == "supported", {f["rule"] for f in verdict["findings"]}


# ---------------------------------------------------------------- facts of later releases, through the command line

TE_220 = ["--hdim", "128", "--heads", "16", "--seqlen", "4096", "--train", "--te", "2.20.2"]
FP8_RECIPE_RULES = {"TE-FUSED-MXFP8", "TE-FUSED-FP8-CURRENT-SM100", "TE-FUSED-FP8-BLOCK-NVFP4"}
SDPA_D256 = ["--gpu", "H100", "--hdim", "256", "--heads", "8", "--seqlen", "2048", "--dtype", "bf16"]
SDPA_KV64 = ["--gpu", "H100", "--cudnn", "9.19.0", "--hdim", "64", "--heads", "1", "--seqlen", "704", "--dtype",
             "bf16", "--train", "--mask", "arbitrary"]


@pytest.mark.parametrize(("args", "backend", "rules", "found"), [
    # TransformerEngine 2.20: the FP8 recipe decides its fused attention
    ([*TE_220, "--gpu", "H100", "--dtype", "fp8", "--fp8-recipe", "mxfp8", "--cudnn", "9.21.0"], "te-fused",
     FP8_RECIPE_RULES, True),
    ([*TE_220, "--gpu", "B200", "--dtype", "fp8", "--fp8-recipe", "mxfp8", "--cudnn", "9.20.0"], "te-fused",
     FP8_RECIPE_RULES, True),
    ([*TE_220, "--gpu", "B200", "--dtype", "fp8", "--fp8-recipe", "mxfp8", "--cudnn", "9.21.0"], "te-fused",
     FP8_RECIPE_RULES, False),
    ([*TE_220, "--gpu", "H100", "--dtype", "fp8", "--fp8-recipe", "current", "--cudnn", "9.21.0"], "te-fused",
     FP8_RECIPE_RULES, True),
    ([*TE_220, "--gpu", "H100", "--dtype", "fp8", "--fp8-recipe", "delayed", "--cudnn", "9.21.0"], "te-fused",
     FP8_RECIPE_RULES, False),
    ([*TE_220, "--gpu", "B200", "--dtype", "fp8", "--fp8-recipe", "nvfp4", "--cudnn", "9.21.0"], "te-fused",
     FP8_RECIPE_RULES, True),
    # softcap: refused by every TE backend before 2.20, taken by the unfused one from 2.20
    (["--hdim", "128", "--heads", "16", "--seqlen", "4096", "--train", "--gpu", "A100", "--dtype", "bf16",
      "--softcap", "30", "--te", "2.19", "--cudnn", "9.21.0"], "te-unfused", {"TE-ALL-NO-SOFTCAP"}, True),
    ([*TE_220, "--gpu", "A100", "--dtype", "bf16", "--softcap", "30", "--cudnn", "9.21.0", "--flash-attn", "2.8.3"],
     "te-fused", {"TE-FUSED-SOFTCAP-220"}, True),
    # torch 2.15: the FA4 route of SDPA's flash backend checks FlashAttention 4's head dims, not FA2's
    (["--gpu", "B200", "--torch", "2.15.0", "--hdim", "192", "--hdim-v", "128", "--heads", "16", "--seqlen", "4096",
      "--dtype", "bf16", "--train", "--sdpa-flash-impl", "fa4"], "sdpa-flash",
     {"SDPA-FLASH-HEAD-DIM", "SDPA-FLASH-FA4-HDIM-215"}, False),
    (["--gpu", "B200", "--torch", "2.15.0", "--hdim", "160", "--heads", "16", "--seqlen", "4096", "--dtype", "bf16",
      "--train", "--sdpa-flash-impl", "fa4"], "sdpa-flash", {"SDPA-FLASH-FA4-HDIM-215"}, True),
    # torch 2.15: SDPA's cuDNN head dim 256 follows the d256 gate of cuDNN
    ([*SDPA_D256, "--torch", "2.15.0", "--cudnn", "9.19.0"], "sdpa-cudnn", {"SDPA-CUDNN-HEAD-DIM-214"}, True),
    ([*SDPA_D256, "--torch", "2.15.0", "--cudnn", "9.23.0"], "sdpa-cudnn", {"SDPA-CUDNN-HEAD-DIM-214"}, False),
    # torch 2.15's guard refuses where the advisory warned before
    (["--torch", "2.15.0", *SDPA_KV64], "sdpa-cudnn", {"SDPA-CUDNN-SM90-BWD-KV64-GUARD-215"}, True),
    (["--torch", "2.14.1", *SDPA_KV64], "sdpa-cudnn", {"SDPA-CUDNN-SM90-BWD-KV64-GUARD-215"}, False),
])
def test_a_release_fact_applies_where_its_source_says(explain, args, backend, rules, found):
    doc = explain(*args, exit=0)
    verdict = next(v for v in doc["results"][0]["verdicts"] if v["backend"] == backend)
    assert bool({f["rule"] for f in verdict["findings"]} & rules) is found, verdict["status"]
    if found and "SDPA-CUDNN-SM90-BWD-KV64-GUARD-215" in rules:
        assert verdict["supported"] is False


def test_float8_block_scaling_refuses_fp8_attention_in_every_te_backend(explain):
    doc = explain(*TE_220, "--gpu", "H100", "--dtype", "fp8", "--fp8-recipe", "block", "--cudnn", "9.21.0")
    verdicts = {v["backend"]: v for v in doc["results"][0]["verdicts"]}
    for backend in ("te-flash", "te-fused", "te-unfused"):
        assert "TE-ALL-FP8-BLOCK-DPA-ASSERT" in {f["rule"] for f in verdicts[backend]["findings"]}, backend
        assert verdicts[backend]["supported"] is False
    assert not {f["rule"] for f in verdicts["te-fused"]["findings"]} & FP8_RECIPE_RULES


def test_te_unfused_takes_softcap_from_2_20(explain):
    doc = explain(*TE_220, "--gpu", "A100", "--dtype", "bf16", "--softcap", "30", "--cudnn", "9.21.0",
                  "--flash-attn", "2.8.3", exit=0)
    assert next(v for v in doc["results"][0]["verdicts"] if v["backend"] == "te-unfused")["status"] == "supported"
