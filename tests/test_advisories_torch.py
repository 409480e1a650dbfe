"""Advisories of PyTorch's own attention paths: the launch and index limits measured on the H100 bite exactly at
their bounds, and are gone where the fixing release is modelled."""

from __future__ import annotations

import json

import pytest


def verdict(cli, backend, *args):
    code, out, _ = cli("explain", "--gpu", "H100", *args, "--backend", backend, "--format", "json")
    return next(v for v in json.loads(out)["results"][0]["verdicts"] if v["backend"] == backend)


def rules(v):
    return {f["rule"] for f in v["findings"]}


@pytest.mark.parametrize("batch, hit", [(8193, True), (8192, False)])
def test_sdpa_flash_backward_overflows_past_the_last_batch_offset(cli, batch, hit):
    v = verdict(cli, "sdpa-flash", "--torch", "2.11.0", "--batch", str(batch), "--heads", "16", "--seqlen", "1",
                "--hdim", "128", "--dtype", "bf16", "--train")
    assert ("ADV-SDPA-FLASH-BWD-DQACCUM-BATCH-OFFSET-OVERFLOW" in rules(v)) is hit
    assert (v["status"] == "unsupported") is hit


@pytest.mark.parametrize("torch, batch, heads, rule", [
    ("2.11.0", 65536, 1, "ADV-FLEX-GRID-BATCH-HEADS-65535"),
    ("2.11.0", 1, 65536, "ADV-FLEX-GRID-BATCH-HEADS-65535"),
    ("2.8.0", 40000, 2, "ADV-FLEX-GRID-BATCH-X-HEADS-65535-PRE29"),
])
def test_flex_grid_limits_follow_the_grid_of_each_release(cli, torch, batch, heads, rule):
    v = verdict(cli, "flex-attention", "--torch", torch, "--batch", str(batch), "--heads", str(heads),
                "--seqlen", "128", "--hdim", "16", "--dtype", "bf16")
    assert rule in rules(v) and v["supported"] is False


def test_flex_product_of_batch_and_heads_is_fine_from_2_9(cli):
    v = verdict(cli, "flex-attention", "--torch", "2.11.0", "--batch", "40000", "--heads", "2", "--seqlen", "128",
                "--hdim", "16", "--dtype", "bf16", "--train")
    assert not {r for r in rules(v) if r.startswith("ADV-FLEX-GRID")}


@pytest.mark.parametrize("layout, hit", [("bshd", True), ("bhsd", False)])
def test_flex_row_offset_overflow_depends_on_the_row_stride(cli, layout, hit):
    v = verdict(cli, "flex-attention", "--torch", "2.11.0", "--batch", "1", "--heads", "8", "--seqlen-q", "256",
                "--seqlen-kv", str((1 << 21) + 4096), "--hdim", "128", "--dtype", "bf16", "--layout", layout)
    assert ("ADV-FLEX-QKV-ROW-OFFSET-INT32-OVERFLOW" in rules(v)) is hit
