"""FlexAttention sweep advisories bite exactly at their shape bounds and only in the releases read from the wheels."""

from __future__ import annotations

import json

import pytest


def verdict(cli, *args):
    code, out, _ = cli("explain", "--gpu", "H100", *args, "--backend", "flex-attention", "--format", "json")
    return next(v for v in json.loads(out)["results"][0]["verdicts"] if v["backend"] == "flex-attention")


def rules(v):
    return {f["rule"] for f in v["findings"]}


DECODE = "ADV-FLEX-DECODE-NONPOW2-HDIMV-COMPILE"


@pytest.mark.parametrize("torch, seqlen_q, hdim, hit", [
    ("2.7.0", 1, 96, True),
    ("2.10.0", 127, 96, True),
    ("2.10.0", 128, 96, False),
    ("2.10.0", 1, 128, False),
    ("2.11.0", 1, 96, False),
    ("2.6.0", 1, 96, False),
])
def test_decode_with_non_power_of_two_v_head_dim_fails_from_2_7_to_2_10(cli, torch, seqlen_q, hdim, hit):
    v = verdict(cli, "--torch", torch, "--batch", "1", "--heads", "8", "--seqlen-q", str(seqlen_q),
                "--seqlen-kv", "4096", "--hdim", str(hdim), "--dtype", "bf16")
    assert (DECODE in rules(v)) is hit
    if hit:
        assert v["supported"] is False


def test_decode_advisory_follows_the_v_head_dim_not_the_qk_head_dim(cli):
    v = verdict(cli, "--torch", "2.9.1", "--batch", "1", "--heads", "8", "--seqlen-q", "1", "--seqlen-kv", "4096",
                "--hdim", "128", "--hdim-v", "96", "--dtype", "bf16")
    assert DECODE in rules(v)


SMALL = "ADV-FLEX-COMPILED-HDIM-LT16-NYI"


@pytest.mark.parametrize("torch, hdim, hit", [
    ("2.7.0", 8, True),
    ("2.15.0", 15, True),
    ("2.11.0", 16, False),
    ("2.6.0", 8, False),
])
def test_head_dims_below_16_are_refused_from_2_7(cli, torch, hdim, hit):
    v = verdict(cli, "--torch", torch, "--batch", "2", "--heads", "4", "--seqlen", "256", "--hdim", str(hdim),
                "--dtype", "bf16")
    assert (SMALL in rules(v)) is hit
    if hit:
        assert v["supported"] is False


SM12X = "ADV-FLEX-SM12X-BWD-H100-TILE-PRE29"


@pytest.mark.parametrize("gpu, torch, hdim, train, hit", [
    ("RTX 5090", "2.8.0", 128, True, True),
    ("RTX 5090", "2.7.0", 128, True, True),
    ("RTX 5090", "2.9.0", 128, True, False),
    ("RTX 5090", "2.8.0", 64, True, False),
    ("RTX 5090", "2.8.0", 128, False, False),
    ("H100", "2.8.0", 128, True, False),
])
def test_sm12x_backward_takes_the_h100_tile_before_2_9(cli, gpu, torch, hdim, train, hit):
    args = ["explain", "--gpu", gpu, "--torch", torch, "--batch", "1", "--heads", "16", "--seqlen", "2048",
            "--hdim", str(hdim), "--dtype", "bf16", "--backend", "flex-attention", "--format", "json"]
    args.insert(-4, "--train" if train else "--infer")
    code, out, _ = cli(*args)
    v = next(v for v in json.loads(out)["results"][0]["verdicts"] if v["backend"] == "flex-attention")
    assert (SM12X in rules(v)) is hit
