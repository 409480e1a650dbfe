"""The five seed incidents (shared/seeds/00x_*.txt) replayed through the engine API.

000 TE fused attention, cuDNN 9.1, H100, MLA head dims 192/128 in training ("No execution plans support the graph").
001 TE context parallelism with cuDNN 8.9.7 on A100, seqlen 16534, NVTE_FLASH_ATTN=0 (TE issue #1051).
002 TE q/k/v split from one fused GQA/MQA buffer: cuDNN reads the wrong strides (TE issue #1195, fixed in 1.12).
003 TE 1.11 context parallelism with flash-attn 2.6.3: missing `softcap` argument (TE issue #1414).
004 TE context parallelism with seqlen 1 / a total length not divisible by 2 * cp (TE issue #1070).
"""

from __future__ import annotations

import pytest
from packaging.version import Version

from attndoctor.config import make_config
from attndoctor.engine import expr
from attndoctor.engine.evaluate import Evaluator, build_facts
from attndoctor.engine.rules import load_rulebase
from attndoctor.environment import environment_from_flags

BASE = load_rulebase()
EV = Evaluator(BASE)
TE_BACKENDS = ("te-flash", "te-fused", "te-unfused")


def fa_for(te: str) -> str:
    """A flash-attn 2 version inside the range the given TE accepts (so FA-version rules stay quiet)."""
    v = Version(te)
    if v < Version("1.7"):
        return "2.4.2"
    if v < Version("1.11"):
        return "2.5.8"
    if v < Version("2.0"):
        return "2.6.3"
    return "2.7.3"


def evaluate(config: dict, env: dict):
    return EV.evaluate(make_config(config), environment_from_flags(env))


def te_selection(result):
    return next(s for s in result.selected if s.framework == "transformer-engine")


def applied(verdict) -> set[str]:
    return {f.id for f in verdict.findings if f.applies is True}


def plans(verdict):
    return ([verdict.fix] if verdict.fix else []) + list(verdict.alternatives)


def fix_value(rule_id: str, target: str, config: dict, env: dict):
    """The value a rule's `change` or `pad` fix computes for this config (e.g. the padded sequence length)."""
    rule = BASE.rule(rule_id)
    fix = next(f for f in rule.fixes if f.kind in ("change", "pad") and f.target == target)
    facts = build_facts(make_config(config), environment_from_flags(env))
    return expr.compile_node(fix.value_node)(facts)


# ---------------------------------------------------------------- 000: MLA 192/128 training on H100 with cuDNN 9.1

MLA_TRAIN = dict(hdim=192, hdim_v=128, heads=16, seqlen=4096, dtype="bf16", train=True, mask="causal")


def env_000(te: str, **extra) -> dict:
    env = dict(gpu="H100", cudnn="9.1.0", te=te, flash_attn=fa_for(te), flash_attn_3="none", flash_attn_4="none")
    env.update(extra)
    return env


@pytest.mark.parametrize("te", ["2.5", "2.8", "2.16"])
def test_000_te_fused_refuses_training_and_the_fix_is_cudnn_95(te):
    r = evaluate(MLA_TRAIN, env_000(te))
    v = r.verdict("te-fused")
    assert v.status == "unsupported"
    assert "TE-FUSED-HD256-BWD-HOPPER" in applied(v)
    assert v.fix is not None and [(f.kind, f.target, f.to) for f in v.fix.fixes] == [("upgrade", "cudnn", "9.5.0")]
    assert evaluate(MLA_TRAIN, env_000(te, cudnn="9.5.0")).verdict("te-fused").status == "supported"


@pytest.mark.parametrize("te", ["1.10", "2.3", "2.5", "2.8"])
def test_000_inference_is_fine(te):
    r = evaluate(dict(MLA_TRAIN, train=False), env_000(te))
    assert r.verdict("te-fused").status == "supported"
    assert te_selection(r).status == "selected" and te_selection(r).backend == "te-fused"


@pytest.mark.parametrize("te", ["1.8", "1.9", "1.10", "1.13", "2.0", "2.3", "2.4"])
def test_000_te_18_to_24_selects_fused_and_fails_in_backward(te):
    r = evaluate(MLA_TRAIN, env_000(te))
    v = r.verdict("te-fused")
    assert "TE-FUSED-HD256-BWD-HOPPER-RUNTIME" in applied(v)
    sel = te_selection(r)
    assert (sel.status, sel.backend) == ("fails", "te-fused")
    assert "No execution plans support the graph" in sel.reason
    assert any(f.kind == "upgrade" and f.target == "cudnn" and f.to == "9.5.0" for p in plans(v) for f in p.fixes)


def test_000_padding_v_enables_flash_attention_not_fused():
    # TE 1.10-2.16 refuses flash-attn for d_qk != d_v: padding V to 192 is the fix *there*.
    r = evaluate(MLA_TRAIN, env_000("2.5"))
    flash = r.verdict("te-flash")
    assert flash.status == "unsupported" and "TE-FLASH-MLA" in applied(flash)
    offered = [[(f.kind, f.target, f.to) for f in p.fixes] for p in plans(flash)]
    assert [("pad", "hdim_v", 192)] in offered and [("upgrade", "te", "2.17.0")] in offered
    assert offered[0] == [("upgrade", "te", "2.17.0")]  # upgrades rank before config workarounds
    # ... and it is not offered for te-fused, which still needs cuDNN 9.5 for head dim 192 backward.
    assert not any(f.target == "hdim_v" for p in plans(r.verdict("te-fused")) for f in p.fixes)
    padded = evaluate(dict(MLA_TRAIN, hdim_v=192), env_000("2.5"))
    assert padded.verdict("te-flash").status == "supported"
    assert padded.verdict("te-fused").status == "unsupported"
    assert (te_selection(padded).status, te_selection(padded).backend) == ("selected", "te-flash")


def test_000_padding_v_needs_flash_attn_installed():
    r = evaluate(MLA_TRAIN, env_000("2.5", flash_attn="none"))
    flash = r.verdict("te-flash")
    assert flash.status == "unsupported"
    assert not any(f.target == "hdim_v" for p in plans(flash) for f in p.fixes)
    assert evaluate(dict(MLA_TRAIN, hdim_v=192), env_000("2.5", flash_attn="none")).verdict("te-flash").status \
        == "unsupported"


def test_000_padding_v_on_te_18_to_24_still_runs_fused_unless_it_is_switched_off():
    # TE <= 2.4 passes head dim 192 to cuDNN 9.1 for training on sm90 and prefers fused there: padding V alone
    # leaves TE on the failing fused backward.
    padded = dict(MLA_TRAIN, hdim_v=192)
    sel = te_selection(evaluate(padded, env_000("2.3")))
    assert (sel.status, sel.backend) == ("fails", "te-fused")
    sel = te_selection(evaluate(padded, env_000("2.3", env_vars={"NVTE_FUSED_ATTN": "0"})))
    assert (sel.status, sel.backend) == ("selected", "te-flash")


def test_000_te_217_pads_v_for_flash_attention_itself():
    r = evaluate(MLA_TRAIN, env_000("2.17"))
    assert r.verdict("te-flash").status == "supported"
    assert "TE-FLASH-MLA" not in applied(r.verdict("te-flash"))


def test_000_cudnn_frontend_directly():
    r = evaluate(MLA_TRAIN, dict(gpu="H100", cudnn="9.1.0", cudnn_frontend="1.8.0"))
    v = r.verdict("cudnn-fe")
    assert v.status == "unsupported" and "CUDNN-FE-HDIM-BWD-HOPPER" in applied(v)
    assert [(f.kind, f.target) for f in v.fix.fixes] == [("upgrade", "cudnn")]
    assert evaluate(MLA_TRAIN, dict(gpu="H100", cudnn="9.19.0", cudnn_frontend="1.32.0")).verdict("cudnn-fe").status \
        == "supported"


# ---------------------------------------------------------------- 001: CP with cuDNN 8.9.7, seqlen 16534, NVTE_FLASH_ATTN=0

ISSUE_1051 = dict(batch=48, seqlen=16534, heads=18, hdim=128, dtype="bf16", train=True, layout="bshd")


def env_001(te: str, cudnn: str = "8.9.7", **extra) -> dict:
    env = dict(gpu="A100", cudnn=cudnn, te=te, flash_attn=fa_for(te), env_vars={"NVTE_FLASH_ATTN": "0"})
    env.update(extra)
    return env


@pytest.mark.parametrize("te", ["1.8", "1.9", "2.0", "2.5"])
def test_001_fused_refused_for_seqlen_not_multiple_of_64(te):
    r = evaluate(ISSUE_1051, env_001(te))
    v = r.verdict("te-fused")
    assert v.status == "unsupported" and "TE-FUSED-SEQ64-CUDNN8" in applied(v)
    assert [(f.kind, f.target, f.to) for f in v.fix.fixes] == [("upgrade", "cudnn", "9.0.0")]
    # the padding fix of the rule pads to the next multiple of 64
    assert fix_value("TE-FUSED-SEQ64-CUDNN8", "seqlen_q", ISSUE_1051, env_001(te)) == 16576
    # it runs (an advisory about CUDA-graph replay stays at risk: known-bug is a running verdict)
    assert evaluate(dict(ISSUE_1051, seqlen=16576), env_001(te)).verdict("te-fused").supported is True
    assert evaluate(ISSUE_1051, env_001(te, cudnn="9.0.0")).verdict("te-fused").supported is True
    # without CP TE quietly falls back to the unfused backend
    assert (te_selection(r).status, te_selection(r).backend) == ("selected", "te-unfused")


def test_001_te_before_18_needs_64_multiples_with_any_cudnn():
    r = evaluate(ISSUE_1051, env_001("1.7", cudnn="9.1.0"))
    assert "TE-FUSED-SEQ64-PRE18" in applied(r.verdict("te-fused"))


# The issue's tensors [48, 16534, 18, 128] are one CP rank's share: with cp = 2 the total sequence is 33068.
CP_1051 = dict(ISSUE_1051, seqlen=33068, cp=2)


@pytest.mark.parametrize("te", ["1.5", "1.7", "1.8"])
def test_001_cp_falls_back_to_unfused_and_hits_the_assertion(te):
    r = evaluate(CP_1051, env_001(te))
    assert r.verdict("te-flash").status == "unsupported" and "TE-FLASH-ENV-OFF" in applied(r.verdict("te-flash"))
    fused = r.verdict("te-fused")
    assert fused.status == "unsupported"
    assert applied(fused) & {"TE-FUSED-SEQ64-CUDNN8", "TE-FUSED-SEQ64-PRE18"}
    unfused = r.verdict("te-unfused")
    assert "TE-CP-UNFUSED-ASSERT-TE13-18" in applied(unfused)
    sel = te_selection(r)
    assert (sel.status, sel.backend) == ("fails", "te-unfused")
    assert "Context parallelism is only implemented with Flash Attention and Fused Attention!" in sel.reason


def test_001_cp_fixes_on_te_18():
    r = evaluate(CP_1051, env_001("1.8"))
    assert [(f.kind, f.target, f.to) for f in r.verdict("te-fused").fix.fixes] == [("upgrade", "cudnn", "9.0.0")]
    fixed = evaluate(CP_1051, env_001("1.8", cudnn="9.0.0"))
    assert (te_selection(fixed).status, te_selection(fixed).backend) == ("selected", "te-fused")
    # before TE 1.10 the gate sees the per-rank length: pad each rank to 16576 (total 33152)
    assert fix_value("TE-FUSED-SEQ64-CUDNN8", "seqlen_q", CP_1051, env_001("1.8")) == 33152
    padded = evaluate(dict(CP_1051, seqlen=33152), env_001("1.8"))
    assert padded.verdict("te-fused").status == "supported"
    assert padded.verdict("te-unfused").status == "unsupported"  # the assert is still there, but fused runs first
    assert (te_selection(padded).status, te_selection(padded).backend) == ("selected", "te-fused")


@pytest.mark.parametrize("te", ["1.9", "1.10", "2.0", "2.5"])
def test_001_cp_from_te_19_has_no_backend(te):
    r = evaluate(CP_1051, env_001(te))
    assert "TE-CP-UNFUSED" in applied(r.verdict("te-unfused"))
    assert "TE-CP-UNFUSED-ASSERT-TE13-18" not in applied(r.verdict("te-unfused"))
    assert r.verdict("te-fused").status == "unsupported"
    assert te_selection(r).status == "none"
    assert (te_selection(evaluate(CP_1051, env_001(te, cudnn="9.0.0"))).backend) == "te-fused"


# ---------------------------------------------------------------- 002: fused QKV buffer with MQA, layout misdetection

ISSUE_1195 = dict(heads=16, kv_heads=1, hdim=64, seqlen=2048, dtype="fp16", train=False, qkv_fused=True, layout="sbhd")


def env_002(te: str) -> dict:
    return dict(gpu="H100", cudnn="9.2.1", te=te, flash_attn=fa_for(te))


@pytest.mark.parametrize("te", ["1.5", "1.10", "1.11"])
@pytest.mark.parametrize("train", [False, True])
def test_002_fused_qkv_mqa_is_silently_wrong_before_te_112(te, train):
    r = evaluate(dict(ISSUE_1195, train=train), env_002(te))
    v = r.verdict("te-fused")
    assert v.status == "wrong-results"
    finding = next(f for f in v.findings if f.id == "TE-FUSED-QKV-LAYOUT-MISDETECT")
    assert finding.applies is True and finding.surfaces == "silent"
    fixes = {(f.kind, f.target, str(f.to)) for p in plans(v) for f in p.fixes}
    assert ("upgrade", "te", "1.12.0") in fixes
    assert ("change", "qkv_fused", "False") in fixes or ("change", "qkv_fused", "false") in fixes
    sel = te_selection(r)
    assert (sel.status, sel.backend) == ("wrong-results", "te-fused")
    assert r.verdict("te-flash").status == "supported"
    # q, k, v made contiguous (no longer views of one buffer): fine
    assert evaluate(dict(ISSUE_1195, train=train, qkv_fused=False), env_002(te)).verdict("te-fused").status == "supported"


@pytest.mark.parametrize("te", ["1.12", "1.13", "2.0", "2.8"])
def test_002_fine_from_te_112(te):
    r = evaluate(ISSUE_1195, env_002(te))
    assert r.verdict("te-fused").status == "supported"
    assert (te_selection(r).status, te_selection(r).backend) == ("selected", "te-fused")


def test_002_mha_fused_buffer_is_detected_correctly():
    r = evaluate(dict(ISSUE_1195, kv_heads=16), env_002("1.11"))
    assert r.verdict("te-fused").status == "supported"


# ---------------------------------------------------------------- 003: TE 1.11 + flash-attn 2.6.3 under CP (softcap)

LLAMA_CP = dict(heads=32, hdim=128, seqlen=4096, dtype="bf16", train=True, mask="causal", cp=2, layout="sbhd")


def test_003_softcap_api_mismatch():
    r = evaluate(LLAMA_CP, dict(gpu="A100", cudnn="9.1.0", te="1.11", flash_attn="2.6.3"))
    v = r.verdict("te-flash")
    assert v.status == "api-mismatch" and "TE-FLASH-CP-FA26-SOFTCAP" in applied(v)
    ok = False
    for plan in plans(v):
        for f in plan.fixes:
            if f.kind == "upgrade" and f.target == "te" and Version(f.to) <= Version("2.0"):
                ok = True
            if f.kind == "downgrade" and f.target == "flash_attn" and Version(f.to) < Version("2.6"):
                ok = True
    assert ok, [p.describe() for p in plans(v)]
    sel = te_selection(r)
    assert (sel.status, sel.backend) == ("fails", "te-flash") and "softcap" in sel.reason


@pytest.mark.parametrize("te,fa", [("1.11", "2.5.8"), ("2.0", "2.6.3")])
def test_003_fine_with_flash_attn_258_or_te_20(te, fa):
    r = evaluate(LLAMA_CP, dict(gpu="A100", cudnn="9.1.0", te=te, flash_attn=fa))
    assert r.verdict("te-flash").status == "supported"
    assert (te_selection(r).status, te_selection(r).backend) == ("selected", "te-flash")


def test_003_inference_is_not_affected():
    r = evaluate(dict(LLAMA_CP, train=False), dict(gpu="A100", cudnn="9.1.0", te="1.11", flash_attn="2.6.3"))
    assert "TE-FLASH-CP-FA26-SOFTCAP" not in applied(r.verdict("te-flash"))


# ---------------------------------------------------------------- 004: CP with seqlen 1 / not divisible by 2 * cp

def env_004(te: str) -> dict:
    return dict(gpu="H100", cudnn="9.5.0", te=te, flash_attn=fa_for(te))


@pytest.mark.parametrize("te", ["1.10", "1.13", "2.5", "2.18"])
@pytest.mark.parametrize("seqlen,cp", [(1, 2), (4094, 2), (4100, 4), (8, 8)])
def test_004_cp_seqlen_not_divisible_is_refused_on_every_te_backend(te, seqlen, cp):
    r = evaluate(dict(heads=16, hdim=128, seqlen=seqlen, dtype="bf16", train=False, cp=cp), env_004(te))
    for backend in TE_BACKENDS:
        v = r.verdict(backend)
        assert v.status == "unsupported", backend
        finding = next(f for f in v.findings if f.id == "TE-CP-SEQ-DIV")
        assert finding.applies is True
        assert "Sequence length per GPU needs to be divisible by 2!" in finding.symptom
    sel = te_selection(r)
    assert sel.status == "fails" and "TE-CP-SEQ-DIV" in sel.reason


@pytest.mark.parametrize("te", ["1.5", "1.9"])
def test_004_before_te_110_it_breaks_without_a_check(te):
    """TE 1.3 to 1.9 split each rank's chunk in two only for a causal mask (attention.py@v1.6:532-534, @v1.9:1229-1235),
    the mask of the causal LLMs context parallelism served then; a call without a mask or bias is not split."""
    r = evaluate(dict(heads=16, hdim=128, seqlen=1, dtype="bf16", train=False, cp=2, mask="causal"), env_004(te))
    for backend in ("te-flash", "te-fused"):
        assert "TE-CP-SEQ-DIV-PRE110" in applied(r.verdict(backend)), backend
    plain = evaluate(dict(heads=16, hdim=128, seqlen=1, dtype="bf16", train=False, cp=2), env_004(te))
    assert not any("TE-CP-SEQ-DIV-PRE110" in applied(plain.verdict(b)) for b in TE_BACKENDS)


@pytest.mark.parametrize("te", ["1.10", "2.5"])
def test_004_divisible_or_no_cp_is_fine(te):
    ok = evaluate(dict(heads=16, hdim=128, seqlen=4096, dtype="bf16", train=False, cp=2), env_004(te))
    assert not any("TE-CP-SEQ-DIV" in applied(ok.verdict(b)) for b in TE_BACKENDS)
    assert ok.verdict("te-fused").status == "supported"
    single = evaluate(dict(heads=16, hdim=128, seqlen=1, dtype="bf16", train=False), env_004(te))
    assert not any("TE-CP-SEQ-DIV" in applied(single.verdict(b)) for b in TE_BACKENDS)
