"""On a real GPU: the isolation survives a real CUDA error, and each installed backend runs small configs for real.
Skipped where torch or CUDA is missing (CI has no GPU; run these on a GPU machine)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from attndoctor.config import make_config  # noqa: E402
from attndoctor_kernels.supervisor import Supervisor  # noqa: E402

TESTS = str(Path(__file__).resolve().parent)


@pytest.fixture(scope="module")
def sup():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (TESTS, env.get("PYTHONPATH", "")) if p)
    s = Supervisor(device="cuda", timeout=60, runner_modules=["fake_runners", "gpu_runners"], env=env)
    yield s
    s.close()


def cfg(**fields):
    base = dict(batch=2, heads=8, kv_heads=2, seqlen=256, hdim=64, dtype="bf16", train=True, mask="causal",
                layout="bshd")
    base.update(fields)
    return make_config(base).to_dict()


def test_planted_crashes_on_the_gpu(sup):
    ok = sup.probe("sdpa-math", cfg())
    assert ok["outcome"] == "ok", ok["error"]
    pid = sup.pid
    for planted in ("fake-abort", "fake-cuda-error", "gpu-device-assert"):
        bad = sup.probe(planted, cfg())
        assert bad["outcome"] == "crashed", (planted, bad)
        after = sup.probe("sdpa-math", cfg())
        assert after["outcome"] == "ok", (planted, after["error"])
        assert sup.pid != pid, f"{planted}: the next probe must run in a fresh worker"
        pid = sup.pid
    hung = sup.probe("fake-hang", cfg(), timeout=3)
    assert hung["outcome"] == "crashed" and hung["phase"] == "timeout"
    assert sup.probe("sdpa-math", cfg())["outcome"] == "ok"


def test_real_device_assert_is_classified_as_a_cuda_error(sup):
    bad = sup.probe("gpu-device-assert", cfg())
    assert bad["outcome"] == "crashed" and bad["restart"] is True, bad
    assert "device-side assert" in bad["error"] or "CUDA error" in bad["error"]


@pytest.mark.parametrize("backend", ["sdpa-flash", "sdpa-efficient", "sdpa-cudnn", "sdpa-math", "cudnn-fe"])
@pytest.mark.parametrize("fields", [dict(), dict(layout="sbhd", qkv_fused=True), dict(mask="padding", kv_heads=8),
                                    dict(train=False, dtype="fp16", mask="none", layout="thd")])
def test_small_configs_run_or_refuse_cleanly(sup, backend, fields):
    result = sup.probe(backend, cfg(**fields))
    if result["outcome"] == "not-installed":
        pytest.skip(result["error"])
    assert result["outcome"] in ("ok", "rejected", "skipped"), result
    if result["outcome"] == "ok":
        assert result["rel_error"] is not None and result["rel_error"] < result["tolerance"]
