"""Advisories of the torch attention sweep (SDPA varlen, FlexAttention): each bites at the bound that was measured or
read from the wheels, and not past it or outside the releases that carry the bug."""

from __future__ import annotations

import json

import pytest


def verdict(cli, backend, gpu, torch, *args):
    code, out, _ = cli("explain", "--gpu", gpu, "--torch", torch, *args, "--backend", backend, "--format", "json")
    return next(v for v in json.loads(out)["results"][0]["verdicts"] if v["backend"] == backend)


def findings(v):
    return {f["rule"]: f for f in v["findings"]}


FLEX_DECODE = "ADV-FLEX-DECODE-GQA-PACKED-BLOCK-M-NO-CHOICES"


@pytest.mark.parametrize("torch, heads, kv_heads, seqlen_q, mask, hit", [
    ("2.11.0", 4, 2, 100, "causal-bottom-right", True),   # packed 200 > 128: no decode config (observed)
    ("2.11.0", 4, 2, 60, "causal-bottom-right", False),   # packed 120 runs (observed)
    ("2.11.0", 8, 1, 16, "causal-bottom-right", False),   # packed 128 runs: the bound is exclusive (observed)
    ("2.11.0", 8, 1, 17, "causal-bottom-right", True),    # packed 136 fails (observed)
    ("2.11.0", 6, 2, 100, "causal-bottom-right", False),  # ratio 3 is not a power of two: main kernel
    ("2.11.0", 4, 2, 128, "causal-bottom-right", False),  # seqlen_q 128 is not a decode call
    ("2.11.0", 4, 2, 100, "none", False),                 # no BlockMask: its 2^30 block takes any BLOCK_M
    ("2.10.0", 4, 2, 100, "causal-bottom-right", False),  # the divisibility filter arrived in 2.11
    ("2.15.0", 4, 2, 100, "causal-bottom-right", True),   # still uncapped in 2.15
])
def test_flex_decode_packed_block_m_bound(cli, torch, heads, kv_heads, seqlen_q, mask, hit):
    v = verdict(cli, "flex-attention", "H100", torch, "--batch", "1", "--heads", str(heads), "--kv-heads",
                str(kv_heads), "--seqlen-q", str(seqlen_q), "--seqlen-kv", "1024", "--hdim", "64", "--dtype", "bf16",
                "--mask", mask, "--infer")
    assert (FLEX_DECODE in findings(v)) is hit


@pytest.mark.parametrize("torch, train, hit", [("2.11.0", True, True), ("2.11.0", False, False),
                                               ("2.9.1", True, False), ("2.15.0", True, True)])
def test_varlen_attn_padded_tail_is_a_data_condition_of_training(cli, torch, train, hit):
    v = verdict(cli, "sdpa-flash", "H100", torch, "--batch", "3", "--heads", "16", "--seqlen", "512", "--hdim", "64",
                "--dtype", "bf16", "--layout", "thd", "--train" if train else "--infer")
    f = findings(v).get("ADV-SDPA-FLASH-VARLEN-ATTN-PADDED-TAIL-DQ-NAN")
    assert (f is not None) is hit
    if hit:
        assert [d["name"] for d in f["data"]] == ["padded-tail"]


@pytest.mark.parametrize("seqlen_kv, mask, hit", [(1000, "none", True), (1024, "none", False),
                                                  (1000, "causal-bottom-right", False)])
def test_flex_paged_kv_tail_only_off_a_page_boundary_without_a_mask(cli, seqlen_kv, mask, hit):
    v = verdict(cli, "flex-attention", "H100", "2.11.0", "--batch", "2", "--heads", "8", "--seqlen-q", "1",
                "--seqlen-kv", str(seqlen_kv), "--hdim", "64", "--dtype", "fp16", "--mask", mask, "--paged-kv",
                "--infer")
    assert ("ADV-FLEX-PAGED-KV-UNALIGNED-LEN-UNMASKED" in findings(v)) is hit


@pytest.mark.parametrize("gpu, torch, hdim, hit", [
    ("RTX4090", "2.12.0", 192, True), ("RTX4090", "2.13.0", 192, False), ("RTX4090", "2.12.0", 128, False),
    ("H100", "2.12.0", 192, False), ("A100", "2.12.0", 192, False),
])
def test_flex_hdim192_forward_shared_memory_on_sm8x_consumer_parts(cli, gpu, torch, hdim, hit):
    v = verdict(cli, "flex-attention", gpu, torch, "--batch", "1", "--heads", "8", "--seqlen", "1024", "--hdim",
                str(hdim), "--dtype", "bf16", "--infer")
    assert ("ADV-FLEX-SM8X-HDIM192-FWD-SMEM-PRE213" in findings(v)) is hit


@pytest.mark.parametrize("torch, hit", [("2.6.0", True), ("2.7.0", False)])
def test_flex_value_head_dim_output_shape_fixed_in_2_7(cli, torch, hit):
    v = verdict(cli, "flex-attention", "H100", torch, "--batch", "1", "--heads", "8", "--seqlen", "512", "--hdim",
                "128", "--hdim-v", "64", "--dtype", "bf16", "--infer")
    assert ("ADV-FLEX-DYNAMO-HDIMV-OUTPUT-SHAPE-PRE27" in findings(v)) is hit


@pytest.mark.parametrize("torch, mask, hit", [("2.9.1", "none", True), ("2.9.1", "causal", False),
                                              ("2.10.0", "none", False)])
def test_flex_nested_without_block_mask(cli, torch, mask, hit):
    v = verdict(cli, "flex-attention", "H100", torch, "--batch", "4", "--heads", "2", "--seqlen", "512", "--hdim",
                "64", "--dtype", "fp16", "--layout", "thd", "--mask", mask, "--infer")
    assert ("ADV-FLEX-NJT-NO-BLOCKMASK-CROSS-SEQUENCE" in findings(v)) is hit
