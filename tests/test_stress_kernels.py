"""Stress regimes on the CPU: each regime really puts the inputs where it says, and a probe on them runs through the
same runner, reference and comparison (skipped where torch is not installed)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attndoctor.config import make_config  # noqa: E402
from attndoctor_kernels import data, stress  # noqa: E402
from attndoctor_kernels.runners.sdpa import SdpaRunner  # noqa: E402
from attndoctor_kernels.spec import case_spec  # noqa: E402
from attndoctor_kernels.worker import WorkerContext  # noqa: E402


def spec_of(**fields):
    base = dict(batch=1, heads=2, seqlen=96, hdim=32, dtype="fp32", train=True, layout="bshd", mask="arbitrary")
    base.update(fields)
    return case_spec(make_config(base).to_dict())


def row_lse(case) -> torch.Tensor:
    """(B, H, Sq) float64 logsumexp of each query row over the keys it may see."""
    s = torch.einsum("bqhd,bkhd->bhqk", case.q.double(), case.k.double()) * case.spec.scale
    allowed = torch.stack([data.allowed_block(case, b, 0, case.spec.seqlen_q) for b in range(case.spec.batch)])
    s = s.masked_fill(~allowed[:, None], float("-inf"))
    return torch.logsumexp(s, -1)


def test_low_lse_puts_every_row_far_below_the_fp32_exp_floor():
    case = data.make_case(spec_of(), "cpu", 1, "low-lse")
    plain = data.make_case(spec_of(), "cpu", 1)
    assert float(row_lse(case).max()) < -88.7
    assert float(row_lse(plain).min()) > -20


def test_dominant_key_takes_almost_all_the_weight():
    case = data.make_case(spec_of(mask="none"), "cpu", 2, "dominant-key")
    s = torch.einsum("bqhd,bkhd->bhqk", case.q.double(), case.k.double()) * case.spec.scale
    weight = torch.softmax(s, -1)[..., 0]
    assert float(weight.min()) > 0.99


def test_masked_rows_hide_every_key_of_some_rows_and_leave_them_out_of_the_comparison():
    case = data.make_case(spec_of(), "cpu", 3, "masked-rows")
    assert case.empty_rows is not None and int(case.empty_rows.sum()) == len(range(3, 96, 7))
    assert not bool((case.empty_rows & case.q_rows).any())
    plain = data.make_case(spec_of(), "cpu", 3)
    assert plain.empty_rows is None and bool(plain.q_rows.all())


def test_fp16_large_values_stay_in_range_near_its_top():
    case = data.make_case(spec_of(dtype="fp16", mask="none"), "cpu", 4, "fp16-large")
    top = float(case.v.float().abs().max())
    assert 3.0e4 < top <= 6.0e4 and bool(torch.isfinite(case.v).all())


def test_odd_strides_keep_values_and_change_the_layout():
    x = torch.randn(2, 5, 3, 4)
    y = stress.odd_strides(x)
    assert torch.equal(x, y) and not y.is_contiguous() and y.stride()[-1] != 1


@pytest.mark.parametrize("regime, fields, backend, why", [
    ("masked-rows", {"mask": "none"}, "sdpa-math", "mask = arbitrary"),
    ("fp16-large", {"dtype": "bf16"}, "sdpa-math", "fp16 only"),
    ("grad-out-strides", {"train": False}, "sdpa-math", "training only"),
    ("grad-out-strides", {}, "cudnn-fe", "dO"),
    ("low-lse", {"softcap": 30.0}, "sdpa-math", "softcap"),
    ("nope", {}, "sdpa-math", "unknown regime"),
    ("low-lse", {}, "sdpa-math", ""),
])
def test_applicable(regime, fields, backend, why):
    reason = stress.applicable(regime, spec_of(**fields), backend)
    assert (why in reason) if why else reason == ""


@pytest.mark.parametrize("regime", sorted(stress.REGIMES))
def test_math_backend_probe_runs_each_regime_and_compares(regime):
    fields = {"dtype": "fp16"} if regime == "fp16-large" else {}
    config = make_config({**dict(batch=1, heads=2, seqlen=64, hdim=32, dtype="fp32", train=True, layout="bshd",
                                 mask="arbitrary"), **fields}).to_dict()
    result = SdpaRunner("sdpa-math").probe({"config": config, "seed": 5, "regime": regime}, WorkerContext("cpu"))
    assert result.outcome == "ok", result.error
    assert set(result.errors) == {"out", "dq", "dk", "dv"}
    if regime == "masked-rows":
        assert result.details["masked_rows"] in ("zero", "nan", "mean-v", "other", "non-finite")


def test_probe_skips_a_regime_that_does_not_apply():
    config = make_config(dict(batch=1, heads=2, seqlen=64, hdim=32, dtype="fp32", train=True)).to_dict()
    result = SdpaRunner("sdpa-math").probe({"config": config, "seed": 5, "regime": "masked-rows"},
                                           WorkerContext("cpu"))
    assert result.outcome == "skipped" and "mask = arbitrary" in result.error
