"""Advisories read from cuDNN's release notes reach the verdicts of the backends that run cuDNN's SDPA."""

from __future__ import annotations

import json

import pytest

HANG = "ADV-CUDNN-BLACKWELL-CAUSAL-FWD-LONG-KV-HANG"
DROPOUT = "ADV-CUDNN-BLACKWELL-DROPOUT-FWD-PLAN-CRASH"
DECODE = "ADV-CUDNN-DECODE-CAUSAL-GQA-KNOWN-ISSUE"


def verdict(cli, *args, backend="sdpa-cudnn"):
    _, out, _ = cli("explain", "--torch", "2.12.0", "--dtype", "bf16", "--hdim", "128", *args, "--backend", backend,
                    "--format", "json")
    doc = json.loads(out)
    return next(v for v in doc["results"][0]["verdicts"] if v["backend"] == backend)


def rules(v):
    return {f["rule"]: f for f in v["findings"]}


LONG_CAUSAL = ["--heads", "16", "--kv-heads", "8", "--seqlen-q", "8192", "--seqlen-kv", "131072", "--mask", "causal",
               "--infer"]


def test_the_long_causal_forward_fails_on_blackwell_with_cudnn_9210_and_the_fix_is_9211(cli):
    v = verdict(cli, "--gpu", "B200", "--cudnn", "9.21.0", *LONG_CAUSAL)
    finding = rules(v)[HANG]
    assert v["status"] != "runs" and finding["applies"] is True and finding["fixed_in"] == {"cudnn": "9.21.1"}
    assert "NVIDIA/TransformerEngine#3285" in " ".join(finding["references"])


@pytest.mark.parametrize("gpu, cudnn", [("B200", "9.21.1"), ("H100", "9.21.0"), ("B200", "9.20.0")])
def test_not_once_fixed_nor_off_blackwell_nor_before_the_affected_release(cli, gpu, cudnn):
    assert HANG not in rules(verdict(cli, "--gpu", gpu, "--cudnn", cudnn, *LONG_CAUSAL))


def test_dropout_plan_crash_needs_dropout_and_blackwell(cli):
    base = ["--heads", "16", "--seqlen", "2048", "--mask", "causal", "--train", "--cudnn", "9.21.0"]
    assert DROPOUT in rules(verdict(cli, "--gpu", "B200", "--dropout", "0.1", *base))
    assert DROPOUT not in rules(verdict(cli, "--gpu", "B200", *base))
    assert DROPOUT not in rules(verdict(cli, "--gpu", "H100", "--dropout", "0.1", *base))


def test_decode_known_issue_is_causal_gqa_single_query_only_and_names_no_fix(cli):
    decode = ["--gpu", "B200", "--cudnn", "9.22.0", "--heads", "32", "--seqlen-q", "1", "--seqlen-kv", "4096", "--infer"]
    finding = rules(verdict(cli, *decode, "--kv-heads", "8", "--mask", "causal"))[DECODE]
    assert finding["applies"] is True and "fixed_in" not in finding
    assert DECODE not in rules(verdict(cli, *decode, "--kv-heads", "8", "--mask", "none"))
    assert DECODE not in rules(verdict(cli, *decode, "--kv-heads", "32", "--mask", "causal"))
