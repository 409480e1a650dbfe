"""preflight() reads real tensors: shapes, dtype, training, fused-buffer views; raises with the verdict."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import attndoctor  # noqa: E402
from attndoctor.tensors import describe, fused_views  # noqa: E402

H100_TE_OLD = {"gpu": "H100", "torch": "2.11.0", "cudnn": "9.2.1", "te": "1.11", "flash_attn": "2.6.3",
               "flash_attn_3": "none", "flash_attn_4": "none", "cudnn_frontend": "none"}


def test_describe_reads_shapes_dtype_and_training():
    q = torch.randn(2, 16, 128, 64, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(2, 4, 256, 64, dtype=torch.bfloat16)
    v = torch.randn(2, 4, 256, 32, dtype=torch.bfloat16)
    c = describe(q, k, v, layout="bhsd", causal=True)
    assert (c.batch, c.heads, c.kv_heads, c.seqlen_q, c.seqlen_kv, c.hdim, c.hdim_v) == (2, 16, 4, 128, 256, 64, 32)
    assert c.dtype == "bf16" and c.train is True and c.mask == "causal" and not c.qkv_fused
    with torch.no_grad():
        assert describe(q, k, v, layout="bhsd").train is False


def test_fused_qkv_views_are_recognised():
    qkv = torch.randn(2048, 1, 16 + 2, 64, dtype=torch.float16)
    q, k, v = qkv.split([16, 1, 1], dim=2)
    assert fused_views(q, k, v)
    c = describe(q, k, v, layout="sbhd")
    assert c.qkv_fused and (c.heads, c.kv_heads, c.seqlen_q) == (16, 1, 2048)
    assert not fused_views(q.contiguous(), k.contiguous(), v.contiguous())


def test_preflight_raises_for_the_te_layout_bug_and_passes_when_fixed():
    qkv = torch.randn(2048, 1, 18, 64, dtype=torch.float16)
    q, k, v = qkv.split([16, 1, 1], dim=2)
    with pytest.raises(attndoctor.PreflightError) as info:
        attndoctor.preflight(q, k, v, backend="te-fused", causal=True, environment=H100_TE_OLD)
    assert "wrong" in str(info.value).lower()
    assert info.value.result.verdict("te-fused").status == "wrong-results"
    report = attndoctor.preflight(q.contiguous(), k.contiguous(), v.contiguous(), backend="te-fused",
                                  causal=True, environment=H100_TE_OLD)
    assert report.results[0].verdict("te-fused").supported is True


def test_preflight_bad_rank_is_a_value_error():
    with pytest.raises(ValueError):
        describe(torch.randn(2, 3), torch.randn(2, 3), torch.randn(2, 3), layout="bhsd")
