"""flash-attn 2/3 advisories read from the Dao-AILab/flash-attention tracker reach the verdict the right way round."""

from __future__ import annotations

import json

import pytest


def verdict(cli, backend, *args):
    code, out, err = cli("explain", *args, "--backend", backend, "--format", "json")
    assert code in (0, 1), err
    return next(v for v in json.loads(out)["results"][0]["verdicts"] if v["backend"] == backend)


def finding(v, rule):
    return next((f for f in v["findings"] if f["rule"] == rule), None)


VARLEN_SHORT = ["--gpu", "A100", "--torch", "2.7.1", "--flash-attn", "2.7.3", "--heads", "1", "--seqlen", "16",
                "--hdim", "64", "--dtype", "fp16", "--layout", "thd", "--infer"]
GRID = "ADV-FLASH-ATTN-2-GRID-BATCH-HEADS-65535"


def test_flash_attention_1786_80000_sequences_do_not_launch(cli):
    v = verdict(cli, "flash-attn-2", *VARLEN_SHORT, "--batch", "80000")
    f = finding(v, GRID)
    assert v["status"] == "unsupported" and v["supported"] is False and f["applies"] is True
    assert "invalid configuration argument" in f["symptom"] and "Dao-AILab/flash-attention#1786" in f["references"][0]


@pytest.mark.parametrize("batch", ["40000", "65535"])
def test_at_most_65535_sequences_launch(cli, batch):
    v = verdict(cli, "flash-attn-2", *VARLEN_SHORT, "--batch", batch)
    assert finding(v, GRID) is None and v["status"] != "unsupported"


OFFSETS = "ADV-FLASH-ATTN-2-UINT32-TILE-OFFSET-OVERFLOW"
HUGE = ["--gpu", "A100", "--torch", "2.7.1", "--batch", "40", "--heads", "32", "--kv-heads", "8", "--seqlen-q", "1",
        "--seqlen-kv", "131072", "--hdim", "128", "--dtype", "bf16", "--infer", "--causal"]


def test_tiles_past_two_to_the_32_are_wrong_before_250_and_fine_from_250(cli):
    v = verdict(cli, "flash-attn-2", *HUGE, "--flash-attn", "2.4.2")
    f = finding(v, OFFSETS)
    assert v["status"] == "wrong-results" and f["applies"] is True and f["fixed_in"] == {"flash_attn": "2.5.0"}
    assert finding(verdict(cli, "flash-attn-2", *HUGE, "--flash-attn", "2.5.0"), OFFSETS) is None


PADDING = "ADV-FLASH-ATTN-3-VARLEN-BWD-UNINIT-PADDING-GRAD"
FA3_THD = ["--gpu", "H100", "--torch", "2.11.0", "--flash-attn-3", "3.0.0", "--batch", "8", "--heads", "16",
           "--seqlen", "4096", "--hdim", "128", "--dtype", "bf16", "--mask", "padding-causal", "--layout", "thd"]


def test_fa3_varlen_training_stays_at_risk_of_a_padded_tail(cli):
    v = verdict(cli, "flash-attn-3", *FA3_THD, "--train")
    f = finding(v, PADDING)
    assert v["status"] == "known-bug" and f["applies"] is True
    assert [d["name"] for d in f["data"]] == ["padded-tail"]
    assert not f.get("fixed_in"), "no release fixes it"


def test_fa3_varlen_inference_has_no_gradients_to_leave_uninitialised(cli):
    assert finding(verdict(cli, "flash-attn-3", *FA3_THD, "--infer"), PADDING) is None


BLACKWELL_WHEELS = "ADV-FLASH-ATTN-2-273-WHEELS-NO-BLACKWELL"
B_CALL = ["--batch", "2", "--heads", "16", "--seqlen", "1024", "--hdim", "128", "--dtype", "bf16",
          "--infer"]


@pytest.mark.parametrize("gpu", ["RTX 5090", "B200"])
def test_the_273_to_2741_wheels_carry_no_blackwell_kernels(cli, gpu):
    v = verdict(cli, "flash-attn-2", *B_CALL, "--gpu", gpu, "--torch", "2.6.0", "--flash-attn", "2.7.4.post1")
    f = finding(v, BLACKWELL_WHEELS)
    assert v["status"] == "unsupported" and f["applies"] is True and f["fixed_in"] == {"flash_attn": "2.8.0"}
    assert "no kernel image" in f["symptom"]


@pytest.mark.parametrize("gpu, torch, fa", [("RTX 5090", "2.6.0", "2.8.0"), ("RTX 5090", "2.6.0", "2.8.3"),
                                           ("H100", "2.6.0", "2.7.4.post1"), ("B200", "2.8.0", "2.7.4.post1")])
def test_the_28_wheels_source_builds_and_pre_blackwell_gpus_are_untouched(cli, gpu, torch, fa):
    """torch 2.7+ has no 2.7.x wheel: setup.py builds here, with what the local nvcc makes (#1589 ran on a B200)."""
    v = verdict(cli, "flash-attn-2", *B_CALL, "--gpu", gpu, "--torch", torch, "--flash-attn", fa)
    assert finding(v, BLACKWELL_WHEELS) is None and v["status"] != "unsupported"
