"""Inputs, the float64 reference and the runners, on the CPU with torch (skipped where torch is not installed).

flash-attn and TransformerEngine are faked in sys.modules: the fakes compute attention the way each library
defines it (flash-attn's bottom-right causal, TE's masks with True = masked out, TE's [..., h*d] output), and
record what the runner passed them.
"""

from __future__ import annotations

import math
import os
import sys
import types

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

from attndoctor.config import make_config  # noqa: E402
from attndoctor_kernels import data  # noqa: E402
from attndoctor_kernels.runners import builtin_runners  # noqa: E402
from attndoctor_kernels.runners.base import Call, KernelRunner, NotExpressible  # noqa: E402
from attndoctor_kernels.runners.flash import FlashAttnRunner  # noqa: E402
from attndoctor_kernels.runners.sdpa import SdpaRunner  # noqa: E402
from attndoctor_kernels.runners.te import TeRunner  # noqa: E402
from attndoctor_kernels.spec import case_spec  # noqa: E402
from attndoctor_kernels.worker import WorkerContext  # noqa: E402


def cfg(**fields):
    base = dict(batch=2, heads=4, kv_heads=2, seqlen=48, hdim=16, dtype="fp32", train=True, layout="bshd")
    base.update(fields)
    return make_config(base).to_dict()


def run(runner, config, seed=3):
    return runner.probe({"config": config, "seed": seed, "repeats": 1}, WorkerContext("cpu"))


# ---------------------------------------------------------------- layouts


def test_fused_qkv_views_share_one_buffer_with_its_strides():
    spec = case_spec(cfg(layout="sbhd", qkv_fused=True, heads=8, kv_heads=2))
    case = data.make_case(spec, "cpu", 1)
    layout = data.build_layout(case, requires_grad=True)
    q, k, v = layout.qkv()
    assert len(layout.leaves) == 1
    buf = layout.leaves[0]
    assert buf.shape == (48, 2, (8 + 2 * 2) * 16)  # s, b, (h + 2*hg) * d: TE's sb(h+2hg)d
    assert q.shape == (48, 2, 8, 16) and k.shape == (48, 2, 2, 16)
    assert q.stride() == (2 * 12 * 16, 12 * 16, 16, 1) and k.stride() == q.stride()
    item = buf.element_size()
    assert k.data_ptr() - q.data_ptr() == 8 * 16 * item and v.data_ptr() - k.data_ptr() == 2 * 16 * item
    torch.testing.assert_close(q.detach(), case.q.transpose(0, 1))
    torch.testing.assert_close(v.detach(), case.v.transpose(0, 1))


def test_fp8_inputs_are_built_although_fp8_has_no_masked_fill():
    """torch has no masked_fill for float8: the output gradient is zeroed in float32 and cast, so an fp8 probe reaches
    the backend instead of failing while its inputs are made."""
    spec = case_spec(cfg(dtype="fp8", train=False, mask="causal"))
    case = data.make_case(spec, "cpu", 1)
    assert case.q.dtype == torch.float8_e4m3fn and case.dout.dtype == torch.float8_e4m3fn
    assert case.dout.float()[~case.q_rows].abs().sum() == 0


def test_packed_te_layouts_interleave_as_named():
    spec = case_spec(cfg(layout="sbh3d", kv_heads=4))
    case = data.make_case(spec, "cpu", 1)
    q, k, v = data.build_layout(case, requires_grad=False).qkv()
    assert q.stride() == (2 * 4 * 3 * 16, 4 * 3 * 16, 3 * 16, 1)
    assert k.data_ptr() - q.data_ptr() == 16 * q.element_size()
    spec = case_spec(cfg(layout="bshd_bs2hd"))
    case = data.make_case(spec, "cpu", 1)
    layout = data.build_layout(case, requires_grad=False)
    q, k, v = layout.qkv()
    assert len(layout.leaves) == 2 and q.is_contiguous()
    assert k.stride() == (48 * 2 * 2 * 16, 2 * 2 * 16, 16, 1)
    torch.testing.assert_close(k, case.k)


def test_thd_packs_only_the_valid_tokens():
    spec = case_spec(cfg(layout="thd"))
    case = data.make_case(spec, "cpu", 1)
    q, _, _ = data.build_layout(case, requires_grad=False).qkv()
    assert q.shape == (sum(spec.lens_q), 4, 16)
    torch.testing.assert_close(q[spec.lens_q[0]:], case.q[1, : spec.lens_q[1]])
    back = data.canonical(case, q, "thd", "q")
    assert torch.isnan(back[1, spec.lens_q[1]:]).all()


def test_grads_are_read_through_the_same_views():
    spec = case_spec(cfg(layout="sbhd", qkv_fused=True))
    case = data.make_case(spec, "cpu", 1)
    layout = data.build_layout(case, requires_grad=True)
    q, k, v = layout.qkv()
    (q.sum() * 1 + k.sum() * 2 + v.sum() * 3).backward()
    dq, dk, dv = layout.grads()
    assert float(dq.min()) == 1 and float(dk.max()) == 2 and float(dv.mean()) == 3


# ---------------------------------------------------------------- reference


def _sdpa64(case, spec):
    """torch's math SDPA in float64 with autograd: an independent check of compute_reference."""
    q, k, v = (x.to(torch.float64).transpose(1, 2).requires_grad_(True) for x in (case.q, case.k, case.v))
    mask = data.dense_mask(case, per_batch=True)
    bias = data.additive_bias(case)
    attn = torch.zeros(mask.shape, dtype=torch.float64).masked_fill(~mask, float("-inf"))
    if bias is not None:
        attn = attn + bias.double()
    kk = k.repeat_interleave(spec.group, dim=1)
    vv = v.repeat_interleave(spec.group, dim=1)
    s = q @ kk.transpose(-1, -2) * spec.scale
    if spec.softcap:
        s = torch.tanh(s / spec.softcap) * spec.softcap
    p = torch.softmax(s + attn, dim=-1).nan_to_num(0.0)
    out = p @ vv
    out.backward(case.dout.to(torch.float64).transpose(1, 2))
    return out.transpose(1, 2), q.grad.transpose(1, 2), k.grad.transpose(1, 2), v.grad.transpose(1, 2)


@pytest.mark.parametrize("fields", [
    dict(mask="causal"),
    dict(mask="causal-bottom-right", seqlen_q=32, seqlen_kv=48),
    dict(mask="padding-causal", seqlen_q=40, seqlen_kv=48),
    dict(mask="arbitrary"),
    dict(window="8,0", mask="causal"),
    dict(window="5,3"),
    dict(softcap=2.0, mask="causal"),
    dict(bias="alibi", mask="causal"),
    dict(bias="post-scale"),
    dict(hdim_v=8, kv_heads=1),
])
def test_reference_matches_an_independent_float64_attention(fields):
    spec = case_spec(cfg(**fields))
    case = data.make_case(spec, "cpu", 7)
    ref = data.compute_reference(case, train=True)
    out, dq, dk, dv = _sdpa64(case, spec)
    rows_q, rows_kv = case.q_rows, case.kv_rows
    for mine, theirs, rows in ((ref["out"], out, rows_q), (ref["dq"], dq, rows_q), (ref["dk"], dk, rows_kv),
                               (ref["dv"], dv, rows_kv)):
        assert data.relative_error(mine, theirs.detach(), rows) < 1e-10


def test_reference_is_computed_in_chunks(monkeypatch):
    spec = case_spec(cfg(mask="causal", seqlen=64))
    whole = data.compute_reference(data.make_case(spec, "cpu", 1), train=True)
    monkeypatch.setattr(data, "REFERENCE_BUDGET_BYTES", 4 * 64 * 8 * 5)  # 5 rows per chunk
    chunked = data.compute_reference(data.make_case(spec, "cpu", 1), train=True)
    for key in ("out", "dq", "dk", "dv"):
        torch.testing.assert_close(whole[key], chunked[key])


def test_relative_error_flags_nan_and_ignores_uncompared_rows():
    ref = torch.ones(1, 4, 2, 3, dtype=torch.float64)
    rows = torch.tensor([[True, True, False, False]])
    x = ref.clone()
    x[0, 3] = float("nan")
    assert data.relative_error(x, ref, rows) == 0.0
    x[0, 1, 0, 0] = float("nan")
    assert data.relative_error(x, ref, rows) == float("inf")
    assert data.relative_error(None, ref, rows) == float("inf")


# ---------------------------------------------------------------- SDPA runner on the CPU


@pytest.mark.parametrize("fields", [
    dict(mask="causal"),
    dict(mask="causal-bottom-right", seqlen_q=32, seqlen_kv=48),
    dict(mask="padding"),
    dict(mask="arbitrary", layout="sbhd", qkv_fused=True),
    dict(window="8,0", mask="causal", layout="sbhd_sb2hd"),
    dict(bias="post-scale", layout="bhsd"),
    dict(dropout=0.2),
    dict(dtype="bf16", train=False),
])
def test_sdpa_math_runs_and_matches(fields):
    result = run(SdpaRunner("sdpa-math"), cfg(**fields))
    assert result.outcome == "ok", result.error
    assert result.ms is not None and result.ms_forward is not None
    if not fields.get("dropout"):
        assert result.rel_error is not None and result.rel_error < result.tolerance
        if fields.get("train", True):
            assert set(result.errors) == {"out", "dq", "dk", "dv"}


def test_sdpa_refusal_and_inexpressible():
    refused = run(SdpaRunner("sdpa-efficient"), cfg())  # no efficient kernel on the CPU
    assert refused.outcome == "rejected" and refused.expressible and refused.phase == "forward"
    softcap = run(SdpaRunner("sdpa-math"), cfg(softcap=30.0))
    assert softcap.outcome == "rejected" and softcap.expressible is False and "softcap" in softcap.error


def test_nested_bottom_right_causal_is_is_causal_for_flash_only():
    """On jagged tensors is_causal is the only mask; flash aligns it to the bottom right, the others to the top left."""
    config = cfg(layout="thd", kv_heads=4, mask="causal-bottom-right", seqlen_q=40, seqlen_kv=48)
    spec = case_spec(config)
    for backend in ("sdpa-efficient", "sdpa-cudnn", "sdpa-math"):
        with pytest.raises(NotExpressible, match="top-left outside the flash kernel"):
            SdpaRunner(backend).check(spec, "cpu")
    SdpaRunner("sdpa-flash").check(spec, "cpu")
    with pytest.raises(NotExpressible, match="no attn_mask"):
        SdpaRunner("sdpa-flash").check(case_spec(cfg(layout="thd", kv_heads=4, mask="arbitrary")), "cpu")


def test_skipped_for_what_the_runners_do_not_build():
    assert run(SdpaRunner("sdpa-math"), cfg(cp=2)).outcome == "skipped"


class _Broken(SdpaRunner):
    """An SDPA runner that lies: mode 'roll' mixes up heads, 'unwritten' returns an output never written."""

    def __init__(self, mode):
        super().__init__("sdpa-math")
        self.mode = mode

    def prepare(self, case, layout):
        call = super().prepare(case, layout)
        inner = call.forward

        def forward():
            out = inner()
            if self.mode == "roll":
                return out.roll(1, dims=2)
            return torch.full_like(out, float("nan")).requires_grad_(True)

        return Call(forward=forward, out_format=call.out_format, dout=call.dout, grads_fn=call.grads_fn,
                    reset_fn=call.reset_fn)


def test_wrong_results_are_caught():
    rolled = run(_Broken("roll"), cfg(train=False))
    assert rolled.outcome == "wrong-results" and "error over tolerance" in rolled.error
    unwritten = run(_Broken("unwritten"), cfg(train=False))
    assert unwritten.outcome == "wrong-results" and "unwritten or non-finite" in unwritten.error


# ---------------------------------------------------------------- faked flash-attn


def _fa_attend(q, k, v, scale, causal, window, softcap, dropout=0.0):
    """flash-attn's definition: causal and windows aligned to the bottom right, GQA by head groups."""
    b, sq, h, d = q.shape
    sk, hk = k.shape[1], k.shape[2]
    k = k.repeat_interleave(h // hk, dim=2)
    v = v.repeat_interleave(h // hk, dim=2)
    s = torch.einsum("bqhd,bkhd->bhqk", q.double(), k.double()) * (scale or 1 / math.sqrt(d))
    if softcap:
        s = torch.tanh(s / softcap) * softcap
    i = torch.arange(sq)[:, None] + sk - sq
    j = torch.arange(sk)[None, :]
    ok = torch.ones(sq, sk, dtype=torch.bool)
    left, right = window
    if causal:
        right = 0
    if right is not None and right >= 0:
        ok &= j <= i + right
    if left is not None and left >= 0:
        ok &= j >= i - left
    p = torch.softmax(s.masked_fill(~ok, float("-inf")), -1).nan_to_num(0.0)
    if dropout:
        p = F.dropout(p, dropout)
    return torch.einsum("bhqk,bkhd->bqhd", p, v.double()).to(q.dtype)


def _fake_flash(calls, *, softcap_param=True, raise_text=None):
    mod = types.ModuleType("flash_attn")

    def check():
        if raise_text:
            raise RuntimeError(raise_text)

    def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                        softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False):
        check()
        calls.append(("func", dict(causal=causal, window_size=window_size, softcap=softcap, shape=tuple(q.shape))))
        return _fa_attend(q, k, v, softmax_scale, causal, window_size, softcap, dropout_p)

    def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                               softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                               alibi_slopes=None, deterministic=False, return_attn_probs=False):
        check()
        calls.append(("varlen", dict(causal=causal, max_seqlen_q=max_seqlen_q, shape=tuple(q.shape))))
        outs = []
        for i in range(len(cu_seqlens_q) - 1):
            a, b_ = int(cu_seqlens_q[i]), int(cu_seqlens_q[i + 1])
            c, d = int(cu_seqlens_k[i]), int(cu_seqlens_k[i + 1])
            outs.append(_fa_attend(q[None, a:b_], k[None, c:d], v[None, c:d], softmax_scale, causal, window_size,
                                   softcap)[0])
        return torch.cat(outs)

    if not softcap_param:
        def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False,  # noqa: F811
                            window_size=(-1, -1), alibi_slopes=None, deterministic=False, return_attn_probs=False):
            calls.append(("func-2.5", {}))
            return _fa_attend(q, k, v, softmax_scale, causal, window_size, 0.0)

    mod.flash_attn_func = flash_attn_func
    mod.flash_attn_varlen_func = flash_attn_varlen_func
    mod.__version__ = "2.8.3"
    return mod


@pytest.fixture
def fake_flash(monkeypatch):
    def install(**kw):
        calls = []
        monkeypatch.setitem(sys.modules, "flash_attn", _fake_flash(calls, **kw))
        return calls
    return install


def test_flash_attn_2_runs_through_its_public_function(fake_flash):
    calls = fake_flash()
    result = run(FlashAttnRunner("flash-attn-2"), cfg(mask="causal", layout="sbhd", qkv_fused=True))
    assert result.outcome == "ok", result.error
    assert calls[0][0] == "func" and calls[0][1]["causal"] is True
    assert calls[0][1]["shape"] == (2, 48, 4, 16), "flash-attn gets (B, S, H, D) views of the sbhd buffer"
    assert result.rel_error < 1e-4


def test_flash_attn_padding_goes_through_varlen(fake_flash):
    calls = fake_flash()
    result = run(FlashAttnRunner("flash-attn-2"), cfg(mask="padding-causal"))
    assert result.outcome == "ok", result.error
    assert calls[0][0] == "varlen"


def test_flash_attn_window_and_softcap_are_passed_only_when_used(fake_flash):
    calls = fake_flash()
    assert run(FlashAttnRunner("flash-attn-2"), cfg(window="8,0", mask="causal", softcap=5.0)).outcome == "ok"
    assert calls[0][1]["window_size"] == (8, 0) and calls[0][1]["softcap"] == 5.0


def test_flash_attn_old_signature_is_an_api_mismatch(fake_flash):
    fake_flash(softcap_param=False)
    assert run(FlashAttnRunner("flash-attn-2"), cfg()).outcome == "ok", "no softcap asked, none passed"
    result = run(FlashAttnRunner("flash-attn-2"), cfg(softcap=30.0))
    assert result.outcome == "api-mismatch" and "softcap" in result.error


def test_flash_attn_refusal_is_rejected_with_its_words(fake_flash):
    fake_flash(raise_text="FlashAttention only supports Ampere GPUs or newer.")
    result = run(FlashAttnRunner("flash-attn-2"), cfg())
    assert result.outcome == "rejected" and "Ampere" in result.error


def test_flash_attn_cannot_express_masks(fake_flash, monkeypatch):
    fake_flash()
    monkeypatch.setitem(sys.modules, "flash_attn_interface", _fake_flash([]))
    arb = run(FlashAttnRunner("flash-attn-2"), cfg(mask="arbitrary"))
    assert arb.outcome == "rejected" and arb.expressible is False
    assert run(FlashAttnRunner("flash-attn-3"), cfg(dropout=0.1)).expressible is False


def test_flash_attn_top_left_cross_causal_runs_as_users_call_it_and_differs(fake_flash):
    """A top-left causal mask with seqlen_q != seqlen_kv is what `causal=True` is taken for: the call runs, aligned to
    the bottom right, and its output is judged against the top-left reference (a silent difference, not a refusal)."""
    calls = fake_flash()
    tl = run(FlashAttnRunner("flash-attn-2"), cfg(mask="causal", seqlen_q=32, seqlen_kv=48))
    assert tl.outcome == "wrong-results" and tl.expressible is not False, tl.error
    assert calls[0][1]["causal"] is True
    bottom_right = run(FlashAttnRunner("flash-attn-2"), cfg(mask="causal-bottom-right", seqlen_q=32, seqlen_kv=48))
    assert bottom_right.outcome == "ok", bottom_right.error
    windowed = run(FlashAttnRunner("flash-attn-2"), cfg(mask="causal", window="8,0", seqlen_q=32, seqlen_kv=48))
    assert windowed.outcome == "wrong-results", windowed.error


def test_flash_attn_missing_is_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "flash_attn_interface", None)
    assert run(FlashAttnRunner("flash-attn-3"), cfg()).outcome == "not-installed"


# ---------------------------------------------------------------- faked TransformerEngine


def _fake_te(calls, *, raise_text=None):
    te = types.ModuleType("transformer_engine")
    pt = types.ModuleType("transformer_engine.pytorch")
    dpa_mod = types.ModuleType("transformer_engine.pytorch.attention.dot_product_attention.dot_product_attention")
    cache = {"attention_params": "stale", "use_flash_attention": None, "use_fused_attention": None,
             "use_unfused_attention": None, "fused_attention_backend": None,
             "backend_selection_requires_update": False}
    dpa_mod._attention_backends = cache

    class DotProductAttention:
        def __init__(self, num_attention_heads, kv_channels, num_gqa_groups=None, attention_dropout=0.0,
                     qkv_format="sbhd", attn_mask_type="causal", window_size=None, attention_type="self",
                     softmax_scale=None):
            self.h, self.fmt, self.mask_type, self.window = num_attention_heads, qkv_format, attn_mask_type, window_size
            self.scale = softmax_scale

        def __call__(self, q, k, v, attention_mask=None, cu_seqlens_q=None, cu_seqlens_kv=None, max_seqlen_q=None,
                     max_seqlen_kv=None, core_attention_bias_type="no_bias", core_attention_bias=None,
                     alibi_slopes=None):
            if raise_text:
                raise ValueError(raise_text)
            switches = {k_: os.environ.get(k_) for k_ in ("NVTE_FLASH_ATTN", "NVTE_FUSED_ATTN", "NVTE_UNFUSED_ATTN")}
            calls.append(dict(fmt=self.fmt, mask_type=self.mask_type, switches=switches,
                              cache_was=cache["attention_params"], mask=attention_mask, q_stride=q.stride()))
            cache["attention_params"] = "params"
            cache["use_flash_attention"] = switches["NVTE_FLASH_ATTN"] == "1"
            cache["use_fused_attention"] = switches["NVTE_FUSED_ATTN"] == "1"
            cache["use_unfused_attention"] = switches["NVTE_UNFUSED_ATTN"] == "1"
            causal = "causal" in self.mask_type
            if self.fmt == "thd":
                outs = []
                for i in range(len(cu_seqlens_q) - 1):
                    a, b_ = int(cu_seqlens_q[i]), int(cu_seqlens_q[i + 1])
                    outs.append(_fa_attend(q[None, a:b_], k[None, a:b_], v[None, a:b_], self.scale, causal,
                                           (-1, -1), 0.0)[0])
                out = torch.cat(outs)
                return out.reshape(out.shape[0], -1)
            tb = (lambda x: x.transpose(0, 1)) if self.fmt == "sbhd" else (lambda x: x)
            qb, kb, vb = tb(q), tb(k), tb(v)
            if attention_mask is not None:  # padding, self-attention: True = masked out
                keep = ~attention_mask[:, 0, 0, :]
                kb = kb * keep[:, :, None, None]
                vb = vb * keep[:, :, None, None]
                big = (~keep).double()[:, None, None, :] * -1e9
                hk = kb.shape[2]
                kk = kb.repeat_interleave(qb.shape[2] // hk, 2)
                vv = vb.repeat_interleave(qb.shape[2] // hk, 2)
                s = torch.einsum("bqhd,bkhd->bhqk", qb.double(), kk.double()) * self.scale + big
                out = torch.einsum("bhqk,bkhd->bqhd", torch.softmax(s, -1), vv.double()).to(q.dtype)
            else:
                out = _fa_attend(qb, kb, vb, self.scale, causal, (-1, -1), 0.0)
            out = tb(out)
            return out.reshape(*out.shape[:2], -1)

    pt.DotProductAttention = DotProductAttention
    te.pytorch = pt
    return {"transformer_engine": te, "transformer_engine.pytorch": pt, dpa_mod.__name__: dpa_mod}, cache


@pytest.fixture
def fake_te(monkeypatch):
    def install(**kw):
        calls = []
        mods, cache = _fake_te(calls, **kw)
        for name, mod in mods.items():
            monkeypatch.setitem(sys.modules, name, mod)
        return calls, cache
    return install


def test_te_fused_gets_the_fused_buffer_and_its_switches(fake_te, monkeypatch):
    monkeypatch.setenv("NVTE_FUSED_ATTN", "0")
    calls, cache = fake_te()
    result = run(TeRunner("te-fused"), cfg(mask="causal", layout="sbhd", qkv_fused=True))
    assert result.outcome == "ok", result.error
    call = calls[0]
    assert call["fmt"] == "sbhd" and call["mask_type"] == "causal"
    assert call["switches"] == {"NVTE_FLASH_ATTN": "0", "NVTE_FUSED_ATTN": "1", "NVTE_UNFUSED_ATTN": "0"}
    assert call["cache_was"] is None, "TE's cached backend choice is cleared before each probe"
    assert call["q_stride"] == (2 * (4 + 2 * 2) * 16, (4 + 2 * 2) * 16, 16, 1), "q is a view of sb(h+2hg)d"
    assert result.details["te_selected"] == "FusedAttention"
    assert os.environ["NVTE_FUSED_ATTN"] == "0", "the switches are restored after the probe"


def test_te_padding_mask_is_true_where_masked(fake_te):
    calls, _ = fake_te()
    result = run(TeRunner("te-flash"), cfg(mask="padding", layout="bshd"))
    assert result.outcome == "ok", result.error
    mask = calls[0]["mask"]
    spec = case_spec(cfg(mask="padding"))
    assert mask.shape == (2, 1, 1, 48) and int(mask[1].sum()) == 48 - spec.lens_kv[1]


def test_te_thd_uses_cu_seqlens_and_a_padding_mask_type(fake_te):
    calls, _ = fake_te()
    result = run(TeRunner("te-unfused"), cfg(mask="causal", layout="thd", kv_heads=4))
    assert result.outcome == "ok", result.error
    assert calls[0]["mask_type"] == "padding_causal"


def test_te_refusal_is_rejected(fake_te):
    fake_te(raise_text="No dot product attention backend is available for the provided inputs.")
    result = run(TeRunner("te-flash"), cfg())
    assert result.outcome == "rejected" and "No dot product attention backend" in result.error


def test_every_backend_id_has_a_runner():
    from attndoctor.engine.rules import load_rulebase

    assert set(builtin_runners()) == set(load_rulebase().backend_ids)


def test_kernel_runner_is_the_shared_flow():
    assert all(isinstance(r, KernelRunner) for r in builtin_runners().values())


def test_a_zero_gradient_reference_does_not_inflate_the_error():
    torch = pytest.importorskip("torch")
    from attndoctor_kernels import data

    rows = torch.ones(1, 4, dtype=torch.bool)
    ref = torch.zeros(1, 4, 2, 8, dtype=torch.float64)
    noise = torch.full((1, 4, 2, 8), 1e-7)
    assert data.relative_error(noise, ref, rows) > 1e20
    assert data.relative_error(noise, ref, rows, floor=1e-2) < 1e-4
    assert data.gradient_floor({"dq": ref, "dk": ref, "dv": torch.ones(1, 4, 2, 8, dtype=torch.float64)}) == 1e-2


def test_cudnn_fe_asks_for_stats_the_way_the_installed_frontend_takes_it():
    """pygraph.sdpa took is_inference (required) before cudnn-frontend 1.13 and generate_stats from 1.13
    (python/pygraph/sdpa.cpp@v1.12.0 and @v1.13.0)."""
    from attndoctor_kernels.runners.cudnn_fe import stats_argument

    assert stats_argument("1.10.0", train=True) == {"is_inference": False}
    assert stats_argument("1.12.0", train=False) == {"is_inference": True}
    assert stats_argument("1.13.0", train=True) == {"generate_stats": True}
    assert stats_argument("1.32.0", train=False) == {"generate_stats": False}
    assert stats_argument("unknown", train=True) == {"generate_stats": True}
