"""The FlexAttention runner on the CPU (eager: torch >= 2.5 runs flex_attention there, inference only)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch.nn.attention.flex_attention")

from attndoctor.config import make_config  # noqa: E402
from attndoctor_kernels.runners import builtin_runners  # noqa: E402
from attndoctor_kernels.runners.flex import FlexRunner  # noqa: E402
from attndoctor_kernels.worker import WorkerContext  # noqa: E402


@pytest.fixture(autouse=True)
def _eager(monkeypatch):
    monkeypatch.setenv("ATTNDOCTOR_FLEX_COMPILE", "0")


def cfg(**fields):
    base = dict(batch=2, heads=4, kv_heads=2, seqlen=48, hdim=16, dtype="fp32", train=False, layout="bshd")
    base.update(fields)
    return make_config(base).to_dict()


def run(config, seed=3):
    return FlexRunner().probe({"config": config, "seed": seed, "repeats": 1}, WorkerContext("cpu"))


def test_it_is_a_builtin_runner():
    assert isinstance(builtin_runners()["flex-attention"], FlexRunner)


@pytest.mark.parametrize("fields", [
    dict(),
    dict(mask="causal"),
    dict(mask="causal", seqlen_q=32, seqlen_kv=48),
    dict(mask="causal-bottom-right", seqlen_q=32, seqlen_kv=48),
    dict(mask="padding"),
    dict(mask="padding-causal", layout="sbhd"),
    dict(mask="arbitrary", layout="bhsd"),
    dict(window="8,0", mask="causal"),
    dict(window="6,6"),
    dict(softcap=5.0, mask="causal"),
    dict(bias="alibi", mask="causal"),
    dict(bias="post-scale", layout="bhsd"),
    dict(layout="thd", mask="padding-causal"),
    dict(layout="thd", mask="padding", bias="alibi", softcap=3.0),
    dict(layout="thd", mask="arbitrary", seqlen_q=32, seqlen_kv=48),
    dict(hdim=24, hdim_v=8),
    dict(kv_heads=1),
    dict(dtype="bf16"),
])
def test_flex_matches_the_reference(fields):
    result = run(cfg(**fields))
    assert result.outcome == "ok", result.error
    assert result.rel_error is not None and result.rel_error < result.tolerance
    assert result.details["compiled"] is False


def test_the_mask_and_score_mod_are_what_was_asked():
    result = run(cfg(mask="padding-causal", window="8,0", softcap=5.0, bias="alibi"))
    assert result.details["mask"] == "BlockMask top-left+window+padding"
    assert result.details["score_mod"] == "softcap 5+alibi"
    assert run(cfg()).details["mask"] == "none"


def test_a_wrong_mask_would_be_caught(monkeypatch):
    """The comparison sees the masks: a runner whose causal mask is off by one row is wrong-results."""
    from attndoctor_kernels.runners import flex

    real = flex._mask_mod

    def shifted(case, packed):
        mod, per_batch = real(case, packed)
        return (lambda b, h, q, kv: mod(b, h, q + 1, kv)), per_batch

    monkeypatch.setattr(flex, "_mask_mod", shifted)
    assert run(cfg(mask="causal")).outcome == "wrong-results"


def test_dropout_is_not_expressible():
    result = run(cfg(dropout=0.1))
    assert result.outcome == "rejected" and result.expressible is False and "dropout" in result.error


def test_training_on_the_cpu_is_refused_by_torch():
    result = run(cfg(train=True))
    assert result.outcome == "rejected"
    assert "backward" in result.error


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("fields", [
    dict(hdim=128, dtype="bf16", mask="causal"),
    dict(hdim=96, dtype="fp16", mask="padding", softcap=30.0),
    dict(hdim=64, dtype="bf16", layout="thd", mask="padding-causal", kv_heads=1),
])
def test_flex_compiled_on_the_gpu_trains_and_matches(fields, monkeypatch):
    monkeypatch.delenv("ATTNDOCTOR_FLEX_COMPILE", raising=False)
    result = FlexRunner().probe({"config": cfg(train=True, seqlen=256, **fields), "seed": 1, "repeats": 1},
                                WorkerContext("cuda"))
    assert result.outcome == "ok", result.error
    assert result.details["compiled"] is True and set(result.errors) == {"out", "dq", "dk", "dv"}
