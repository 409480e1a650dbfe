"""`verify --stress`: the judgement across backends, the variants, the repro script, and the whole flow on the CPU."""

from __future__ import annotations

import json

import pytest

from attndoctor.config import make_config
from attndoctor.runs.stress import judge, repro_script, stress_variants
from conftest import fake_probe

INF = float("inf")


def probe(outcome="ok", tolerance=2e-2, **errors):
    return {"outcome": outcome, "tolerance": tolerance, "errors": errors}


def test_non_finite_where_the_reference_is_finite_is_always_wrong():
    found, shared = judge({"sdpa-cudnn": probe("wrong-results", out=1e-3, dq=INF, dk=1e-3, dv=1e-3),
                           "sdpa-efficient": probe(out=1e-3, dq=2e-3, dk=1e-3, dv=1e-3)})
    assert found == [("sdpa-cudnn", "non-finite", "non-finite dq where the float64 reference is finite")]
    assert not shared


def test_an_error_that_stands_apart_is_wrong_and_a_shared_one_is_not():
    found, _ = judge({"a": probe("wrong-results", out=0.5), "b": probe(out=1e-3), "c": probe(out=2e-3)})
    assert [f[:2] for f in found] == [("a", "apart")]
    found, shared = judge({"a": probe("wrong-results", out=0.5), "b": probe("wrong-results", out=0.4)})
    assert found == [] and shared
    found, shared = judge({"a": probe("wrong-results", out=0.05), "b": probe(out=0.015)})
    assert found == [] and not shared, "over tolerance but within the others' error is no finding"


def test_crashes_are_findings_and_refusals_are_not():
    found, _ = judge({"a": {"outcome": "crashed", "error": "CUDA error: an illegal memory access"},
                      "b": {"outcome": "rejected", "error": "No available kernel"}, "c": probe(out=1e-3)})
    assert [f[:2] for f in found] == [("a", "crashed")]


def test_variants_shrink_and_land_inside_a_tile():
    config = make_config(dict(batch=8, heads=32, kv_heads=8, seqlen=4096, hdim=128, dtype="bf16", train=True,
                              name="Llama"))
    variants = stress_variants(config)
    assert [(v.batch, v.heads, v.kv_heads) for v in variants] == [(1, 4, 1)] * 3
    assert [v.seqlen_kv for v in variants] == [1024, 960, 1025] and 960 % 128 == 64


def test_repro_script_forces_the_backend_and_builds_the_regime():
    config = make_config(dict(batch=1, heads=1, seqlen=704, hdim=64, dtype="bf16", train=True, mask="arbitrary"))
    script = repro_script(config, "low-lse", "sdpa-cudnn")
    assert "SDPBackend.CUDNN_ATTENTION" in script and "a = (100.0 * D ** 0.5) ** 0.5" in script
    assert "out.backward(g)" in script and "Lq, Lk, D, Dv = 1, 1, 1, 704, 704, 64, 64" in script
    compile(script, "repro", "exec")
    assert repro_script(config, "low-lse", "flash-attn-2").startswith("attndoctor verify --stress --backend")


def test_verify_stress_on_the_cpu_end_to_end(cli, monkeypatch, tmp_path):
    pytest.importorskip("torch")
    fake_probe(monkeypatch, gpu="H100")
    monkeypatch.setenv("ATTNDOCTOR_VERIFY_DEVICE", "cpu")
    record = tmp_path / "stress.jsonl"
    args = ["verify", "--stress", "--heads", "2", "--seqlen", "64", "--hdim", "16", "--dtype", "fp32", "--train",
            "--mask", "arbitrary", "--backend", "sdpa-math", "--seed", "3"]
    code, out, err = cli(*args, "--record", str(record), "--format", "json")
    assert code == 0, out + err
    doc = json.loads(out)
    assert doc["command"] == "verify --stress" and doc["findings"] == [] and doc["probes"] >= 8
    lines = [json.loads(x) for x in record.read_text().splitlines()]
    assert {x["regime"] for x in lines} >= {"low-lse", "dominant-key", "masked-rows", "grad-out-strides"}
    assert all(x["outcome"] == "ok" for x in lines)
    assert all(v.get("sdpa-math") for v in doc["conventions"].values())
    code, out, _ = cli(*args)
    assert code == 0 and "verify --stress:" in out and "no backend went wrong" in out


def test_the_math_backend_is_no_peer_for_the_fused_kernels():
    # on ill-conditioned inputs every fused kernel trails the higher-precision math backend alike
    found, _ = judge({"cudnn-fe": probe("wrong-results", dq=0.08), "sdpa-math": probe(dq=0.001)})
    assert found == []
    found, _ = judge({"cudnn-fe": probe("wrong-results", dq=0.5), "sdpa-flash": probe(dq=0.01),
                      "sdpa-math": probe(dq=0.001)})
    assert [f[:2] for f in found] == [("cudnn-fe", "apart")]


def test_the_stress_plan_runs_each_case_once_and_puts_train_and_infer_of_a_shape_side_by_side():
    from attndoctor.runs.stress import REGIMES, plan_cases

    train = make_config({"heads": 4, "seqlen": 1024, "hdim": 128, "train": True, "name": "m train"})
    infer = train._replace(train=False, name="m infer")
    variants = stress_variants(train) + stress_variants(infer)
    plan = plan_cases(variants)
    assert sorted(plan) == sorted((i, r) for i in range(len(variants)) for r in REGIMES)
    n = len(variants) // 2
    for i in range(n):  # variant i (train) and i + n (infer) have the same shape: adjacent in every regime
        for regime in REGIMES:
            at = plan.index((i, regime))
            assert plan[at + 1] == (i + n, regime)
