"""Verdicts shared across lengths and batch sizes: read only through the comparisons that test them, exactly."""

from __future__ import annotations

import random

import pytest

from attndoctor.config import make_config
from attndoctor.engine.evaluate import Evaluator
from attndoctor.engine.rules import load_rulebase
from attndoctor.environment import environment_from_flags

ENVS = [{"gpu": "H100", "torch": "2.11.0", "cudnn": "9.19.0"},
        {"gpu": "A100", "torch": "2.4.0", "cudnn": "9.1.0", "te": "2.3", "flash_attn": "2.6.3"},
        {"gpu": "H100", "te": "1.5", "cudnn": "8.9.5", "flash_attn": "2.0.5"},  # rules that pad a length apply here
        {"gpu": "H100", "te": "1.11", "cudnn": "9.5.0", "cudnn_frontend": "1.10.0"},
        {"torch": "2.11.0", "cudnn": "9.19.0"}]


def _configs(count: int, seed: int) -> list:
    """Lengths near the multiples rules test (64, 128, 2 x cp), context parallelism, jagged batches, masks."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        heads = rng.choice([8, 16, 32])
        out.append(make_config({
            "batch": rng.choice([1, 2, 3, 64]), "heads": heads, "kv_heads": rng.choice([1, heads]),
            "hdim": rng.choice([64, 96, 128, 192, 256]), "seqlen_q": rng.choice([1, 64, 127, 128, 192, 1000, 4096]),
            "seqlen_kv": rng.choice([1, 64, 127, 128, 192, 1000, 4096]), "train": rng.random() < 0.5,
            "dtype": rng.choice(["bf16", "fp16", "fp8"]), "cp": rng.choice([1, 1, 2, 4]),
            "mask": rng.choice(["none", "causal", "padding-causal", "causal-bottom-right"]),
            "layout": rng.choice([None, "thd", "sbhd"]), "dropout": rng.choice([0.0, 0.1]),
            "deterministic": rng.random() < 0.2}))
    return out


@pytest.mark.parametrize("facts", ENVS)
def test_verdicts_shared_across_lengths_equal_fresh_ones(facts):
    env = environment_from_flags(facts)
    base = load_rulebase(None)
    shared, fresh = Evaluator(base, batch=True), Evaluator(base, batch=True)
    for config in _configs(150, seed=len(str(facts))):
        fresh.caches.forget_machine()
        assert shared.evaluate(config, env).to_dict() == fresh.evaluate(config, env).to_dict(), config.label()


def test_lengths_that_meet_the_same_comparisons_share_a_verdict():
    """On a machine where no rule pads a length, 1000 and 1001 meet every comparison the same way: one verdict."""
    env = environment_from_flags(ENVS[0])
    evaluator = Evaluator(load_rulebase(None), batch=True)
    a, b = (evaluator.evaluate(make_config({"batch": 4, "heads": 16, "hdim": 128, "seqlen": n, "dtype": "bf16"}), env)
            for n in (1000, 1001))
    assert a.verdict("sdpa-flash") is b.verdict("sdpa-flash")
    assert a.verdict("flash-attn-3") is b.verdict("flash-attn-3")
    assert a.verdict("flex-attention") is not b.verdict("flex-attention")  # its message shows the lengths
