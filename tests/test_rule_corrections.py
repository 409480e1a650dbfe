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
