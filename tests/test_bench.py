"""`bench`: the FLOP count, throughput, recommendation and JSON shape without torch (a planted supervisor), the
CLI's exit 2 without a GPU, and the worker's bench path on the CPU (torch's CPU kernels, tiny shapes)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from attndoctor.runs.bench import (BenchReport, FlopCount, annotate, attention_flops, default_pick, gpu_facts,
                              mask_fraction, peak_percent, recommend, run_bench, tflops)
from conftest import fake_probe
from attndoctor.config import make_config
from attndoctor.engine.evaluate import Selection
from attndoctor.environment import environment_from_flags

TESTS = str(Path(__file__).resolve().parent)


# ---------------------------------------------------------------- FLOPs


def _flops(**fields):
    base = dict(batch=2, heads=16, seqlen=1024, hdim=128)
    base.update(fields)
    return attention_flops(make_config(base).to_dict())


def test_forward_flops_are_four_b_h_sq_skv_d_without_a_mask():
    f = _flops()
    assert f.forward == 4 * 2 * 16 * 1024 * 1024 * 128
    assert f.backward == 2.5 * f.forward and f.train == 3.5 * f.forward
    assert f.fraction == 1.0


def test_gqa_counts_query_heads_and_hdim_v_counts_separately():
    assert _flops(kv_heads=1).forward == _flops().forward
    f = _flops(hdim=192, hdim_v=128, seqlen_q=512, seqlen_kv=2048)
    assert f.forward == 2 * 2 * 16 * 512 * 2048 * (192 + 128)


def test_causal_with_equal_lengths_is_exactly_half():
    assert _flops(mask="causal").forward == _flops().forward / 2
    assert _flops(mask="causal-bottom-right").fraction == 0.5
    assert _flops(mask="padding-causal").fraction == 0.5


def test_causal_with_unequal_lengths_counts_allowed_pairs_with_its_alignment():
    assert mask_fraction(2, 4, "causal") == 3 / 8  # top-left: rows keep 1 and 2 keys
    assert mask_fraction(2, 4, "causal-bottom-right") == 7 / 8  # bottom-right: rows keep 3 and 4 keys
    assert mask_fraction(4, 2, "causal-bottom-right") == 3 / 8  # rows keep 0, 0, 1, 2 keys


def test_windows_count_the_band():
    assert mask_fraction(4, 4, "none", (1, 0)) == 7 / 16
    assert mask_fraction(4, 4, "causal", (1, -1)) == 7 / 16
    assert mask_fraction(4, 4, "none", (-1, -1)) == 1.0
    assert mask_fraction(4, 4, "padding") == 1.0 and mask_fraction(4, 4, "arbitrary") == 1.0


def test_tflops_and_percent_of_peak():
    assert tflops(1e12, 1.0) == pytest.approx(1000.0)
    assert tflops(1e12, None) is None and tflops(1e12, 0) is None
    gpu = gpu_facts("NVIDIA H100 80GB HBM3")
    assert gpu["catalogue"] == "H100 SXM" and gpu["peak_tflops"]["bf16"] == 989.5
    assert peak_percent(494.75, gpu["peak_tflops"]["bf16"]) == pytest.approx(50.0)
    assert peak_percent(100.0, None) is None
    assert gpu_facts("no such gpu")["peak_tflops"] == {}


def test_annotate_adds_throughput_to_both_metrics():
    stats = {"median_ms": 2.0, "iqr_rel": 0.01, "spread_rel": 0.02}
    out = annotate({"backend": "x", "outcome": "ok", "forward": stats, "train": {**stats, "median_ms": 7.0},
                    "details": {"traceback": "t"}}, FlopCount(forward=1e12, fraction=1.0), 1000.0)
    assert out["forward"]["tflops"] == pytest.approx(500.0) and out["forward"]["peak_pct"] == pytest.approx(50.0)
    assert out["forward_backward"]["tflops"] == pytest.approx(500.0)  # 3.5e12 in 7 ms
    assert "train" not in out and out["details"] == {}


# ---------------------------------------------------------------- recommendation


def test_recommend_picks_the_fastest_and_compares_with_the_default():
    rec = recommend({"a": 2.0, "b": 1.0, "c": 1.5}, default="a", default_framework="pytorch",
                    selects={"b": "use b"})
    assert rec.backend == "b" and rec.ms == 1.0 and rec.select == "use b"
    assert rec.default == "a" and rec.default_ms == 2.0 and rec.speedup == pytest.approx(2.0)
    assert not rec.default_within_noise and rec.tie == ()
    assert "2.00x" in rec.note


def test_recommend_calls_a_default_within_the_noise_a_tie():
    rec = recommend({"a": 1.015, "b": 1.0}, default="a")
    assert rec.backend == "b" and rec.tie == ("a",) and rec.default_within_noise
    assert "no change needed" in rec.note
    wide = recommend({"a": 1.08, "b": 1.0}, default="a", spreads={"a": 0.10})
    assert wide.default_within_noise
    assert not recommend({"a": 1.08, "b": 1.0}, default="a").default_within_noise


def test_recommend_when_the_default_is_fastest_missing_or_nothing_ran():
    assert recommend({"a": 1.0, "b": 2.0}, default="a").note.endswith("is the fastest")
    missing = recommend({"b": 2.0}, default="a")
    assert missing.backend == "b" and missing.speedup is None and "not timed" in missing.note
    empty = recommend({}, default="a")
    assert empty.backend is None and "no backend" in empty.note
    assert recommend({"y": 1.0, "x": 1.0}, order=["y", "x"]).backend == "y"  # equal times: catalogue order


def test_default_pick_prefers_pytorch_then_a_measured_framework():
    sel = [Selection("flash-attn", "selected", "flash-attn-2", ()), Selection("pytorch", "selected", "sdpa-flash", ()),
           Selection("transformer-engine", "not-installed", None, ())]
    assert default_pick(sel, ["sdpa-flash"]) == ("pytorch", "sdpa-flash")
    sel = [Selection("pytorch", "fails", "sdpa-cudnn", ()), Selection("cudnn-frontend", "selected", "cudnn-fe", ())]
    assert default_pick(sel, ["cudnn-fe"]) == ("cudnn-frontend", "cudnn-fe")
    assert default_pick([], []) == (None, None)


# ---------------------------------------------------------------- orchestration and JSON (planted supervisor)


class PlantedSupervisor:
    """Answers like the real one: installed SDPA backends, timings chosen per backend, a crash for one."""

    info = {"gpu": "NVIDIA H100 80GB HBM3", "torch": "2.11.0"}
    times = {"sdpa-cudnn": (0.5, 1.5), "sdpa-flash": (0.8, 2.5), "sdpa-efficient": (1.6, 5.0)}

    def __init__(self, crash=()):
        self.crash = set(crash)
        self.calls = []

    def inventory(self, backends):
        return {b: {"installed": b.startswith("sdpa-"), "version": "2.11.0"} for b in backends}

    def bench(self, backend, config, *, seed, options, timeout):
        self.calls.append((backend, options.get("graphs")))
        if backend in self.crash:
            return {"backend": backend, "outcome": "crashed", "error": "worker killed by SIGSEGV", "phase": "worker"}
        fwd, train = self.times.get(backend, (9.0, 30.0))
        stats = lambda ms: {"median_ms": ms, "p10_ms": ms, "p25_ms": ms, "p75_ms": ms, "p90_ms": ms,  # noqa: E731
                            "min_ms": ms, "runs": 20, "iqr_rel": 0.0, "spread_rel": 0.0}
        return {"backend": backend, "outcome": "ok", "phase": "done", "mode": "graph", "mode_note": "", "sets": 2,
                "forward": stats(fwd), "train": stats(train) if config.get("train") else None,
                "mem_peak": 3 << 20, "version": "2.11.0", "details": {}}


def _h100_env(**facts):
    env = environment_from_flags({"gpu": "H100", "torch": "2.11.0", "cuda": "13.0", "cudnn": "9.19.0", "te": "none",
                                  "flash_attn": "none", "flash_attn_3": "none", "flash_attn_4": "none",
                                  "cudnn_frontend": "none", **facts})
    return env


def _config(**fields):
    base = dict(batch=2, heads=16, kv_heads=4, seqlen=4096, hdim=128, dtype="bf16", train=True, mask="causal",
                layout="bshd")
    base.update(fields)
    return make_config(base)


def test_run_bench_times_supported_backends_and_recommends():
    sup = PlantedSupervisor()
    report = run_bench([_config()], _h100_env(), supervisor=sup, seed=1)
    assert isinstance(report, BenchReport)
    timed = [b for b, _ in sup.calls]
    assert "sdpa-math" not in timed, "math's scores are over the limit: not timed unless named"
    assert "sdpa-efficient" not in timed, "GQA: the rules say sdpa-efficient refuses"
    assert set(timed) == {"sdpa-cudnn", "sdpa-flash"}
    r = report.results[0]
    assert r.metric == "forward_backward"
    assert r.recommendation.backend == "sdpa-cudnn" and "CUDNN_ATTENTION" in r.recommendation.select
    assert r.recommendation.default_framework == "pytorch"
    reasons = {n["backend"]: n["reason"] for n in r.not_run}
    assert "sdpa-math" in reasons and "GiB" in reasons["sdpa-math"]
    assert reasons["sdpa-efficient"].startswith("the rules say it refuses this config: SDPA-EFF-GQA")
    assert report.untimed == []


def test_run_bench_json_shape():
    report = run_bench([_config(), _config(train=False, name="infer")], _h100_env(), supervisor=PlantedSupervisor(),
                       seed=1)
    doc = json.loads(json.dumps(report.to_dict(), default=str))
    assert doc["schema_version"] == 1 and doc["command"] == "bench"
    assert doc["gpu"]["catalogue"] == "H100 SXM" and doc["gpu"]["peak_tflops"]["bf16"] == 989.5
    assert "2.5*forward" in doc["flop_formula"]
    assert {"runs", "graphs", "sets"} <= set(doc["options"])
    train, infer = doc["results"]
    assert {"config", "label", "metric", "flops", "measurements", "not_run", "selected", "recommendation"} <= set(train)
    assert train["metric"] == "forward_backward" and infer["metric"] == "forward"
    m = next(x for x in train["measurements"] if x["backend"] == "sdpa-cudnn")
    assert {"outcome", "mode", "sets", "forward", "forward_backward", "mem_peak", "recommended",
            "default_for"} <= set(m)
    flop = 2 * 2 * 16 * 4096 * 4096 * 256 * 0.5
    assert m["forward"]["tflops"] == pytest.approx(flop / 0.5e-3 / 1e12)
    assert m["forward_backward"]["tflops"] == pytest.approx(3.5 * flop / 1.5e-3 / 1e12)
    assert m["forward"]["peak_pct"] == pytest.approx(100 * m["forward"]["tflops"] / 989.5)
    assert m["recommended"] is True
    assert infer["measurements"][0]["forward_backward"] is None
    rec = train["recommendation"]
    assert {"backend", "ms", "select", "default", "default_ms", "speedup_vs_default", "tie"} <= set(rec)
    assert doc["summary"]["recommended"] == {"sdpa-cudnn": 2}


def test_a_crash_is_retried_eagerly_and_never_recommended():
    sup = PlantedSupervisor(crash={"sdpa-cudnn"})
    report = run_bench([_config()], _h100_env(), supervisor=sup, seed=1)
    assert ("sdpa-cudnn", "auto") in sup.calls and ("sdpa-cudnn", "off") in sup.calls
    r = report.results[0]
    assert r.recommendation.backend == "sdpa-flash"
    crashed = next(m for m in r.measurements if m["backend"] == "sdpa-cudnn")
    assert crashed["outcome"] == "crashed" and crashed["forward"] is None


def test_text_report_shows_bars_the_selection_code_and_the_default(tmp_path):
    from attndoctor.report.formats import write

    sup = PlantedSupervisor()
    sup.times = {"sdpa-cudnn": (1.0, 3.0), "sdpa-flash": (0.5, 1.5)}
    report = run_bench([_config(), _config(hdim=64, name="small")], _h100_env(), supervisor=sup, seed=1)
    target = tmp_path / "out.txt"
    write("bench", "text", report, str(target))
    text = target.read_text()
    assert "fastest: sdpa-flash" in text and "pytorch picks sdpa-cudnn" in text
    assert "2.00x as fast" in text and "select it: with torch.nn.attention.sdpa_kernel" in text
    assert "█" * 24 in text and "summary" in text and "% = of the dense peak of the H100 SXM" in text


# ---------------------------------------------------------------- bytes, GB/s and the roofline


DECODE = dict(batch=1, heads=32, kv_heads=8, seqlen_q=1, seqlen_kv=8192, hdim=128, hdim_v=128, dtype="bf16",
              train=False, mask="none")


def test_a_decode_step_moves_its_kv_cache_and_is_memory_bound_on_an_h100():
    from attndoctor.runs.bench import attention_bytes, roofline

    moved = attention_bytes(DECODE)
    kv_cache = 2 * 8 * 8192 * 128 * 2  # K and V, 8 heads, bf16
    assert moved.forward == kv_cache + 2 * (32 * 128) * 2  # plus one query row in and one output row out
    flop = attention_flops(DECODE).forward
    assert flop == 2 * 32 * 8192 * 256
    line = roofline(flop, moved.forward, 989.5, 3350)
    assert line["intensity"] == pytest.approx(flop / moved.forward) and line["intensity"] < 4.1
    assert line["ridge"] == pytest.approx(989.5e12 / 3350e9) and line["bound"] == "memory"
    assert roofline(flop, moved.forward, None, 3350)["bound"] is None


def test_backward_reads_and_writes_are_counted_and_long_prefill_is_compute_bound():
    from attndoctor.runs.bench import attention_bytes, roofline

    c = dict(batch=2, heads=16, kv_heads=4, seqlen_q=4096, seqlen_kv=4096, hdim=128, dtype="bf16", train=True,
             mask="causal")
    q = o = 2 * 16 * 4096 * 128
    kv = 2 * 4 * 4096 * 256
    lse = 4 * 2 * 16 * 4096
    moved = attention_bytes(c)
    assert moved.forward == 2 * (q + kv + o) + lse
    assert moved.backward == 2 * (q + kv + o + o) + lse + 2 * (q + kv)
    assert moved.train == moved.forward + moved.backward
    assert attention_bytes({**c, "dtype": "fp32", "train": False}).forward == 4 * (q + kv + o)
    flops = attention_flops(c)
    assert roofline(flops.train, moved.train, 989.5, 3350)["bound"] == "compute"


def test_annotate_adds_gbs_and_percent_of_hbm():
    from attndoctor.runs.bench import attention_bytes

    moved = attention_bytes(DECODE)
    stats = {"median_ms": 0.02}
    out = annotate({"outcome": "ok", "forward": stats, "train": None}, attention_flops(DECODE), 989.5, moved, 3350)
    assert out["forward"]["gbs"] == pytest.approx(moved.forward / 2e-5 / 1e9)
    assert out["forward"]["hbm_pct"] == pytest.approx(100 * out["forward"]["gbs"] / 3350)
    assert out["forward"]["peak_pct"] < 1 < out["forward"]["hbm_pct"]
    bare = annotate({"outcome": "ok", "forward": stats}, attention_flops(DECODE), 989.5)
    assert "gbs" not in bare["forward"]


def test_bench_reports_bytes_and_bound_per_config_and_keeps_the_fastest(tmp_path):
    from attndoctor.report.formats import write

    decode = make_config({**{k: v for k, v in DECODE.items() if k not in ("seqlen_q", "seqlen_kv")},
                          "seqlen_q": 1, "seqlen_kv": 8192, "name": "decode"})
    report = run_bench([decode, _config()], _h100_env(), supervisor=PlantedSupervisor(), seed=1)
    doc = json.loads(json.dumps(report.to_dict(), default=str))
    dec, train = doc["results"]
    assert dec["bound"] == "memory" and train["bound"] == "compute"
    assert set(train["roofline"]) == {"forward", "forward_backward"} and set(dec["roofline"]) == {"forward"}
    assert "each tensor once" in doc["bytes_formula"]
    m = next(x for x in dec["measurements"] if x["backend"] == "sdpa-cudnn")
    assert m["forward"]["gbs"] == pytest.approx(dec["bytes"]["forward"] / 0.5e-3 / 1e9)
    assert dec["recommendation"]["backend"] == "sdpa-cudnn", "the fastest is still the least time"
    target = tmp_path / "out.txt"
    write("bench", "text", report, str(target))
    text = " ".join(target.read_text().split())
    assert "memory-bound (judge by % of HBM)" in text and "compute-bound (judge by % of peak TFLOP/s)" in text
    assert "GB/s (fwd+bwd)" in text and "3350 GB/s" in text


# ---------------------------------------------------------------- CLI


def test_bench_without_gpu_is_one_line_exit_2(cli, monkeypatch):
    monkeypatch.delenv("ATTNDOCTOR_VERIFY_DEVICE", raising=False)
    env = fake_probe(monkeypatch)
    env.no_gpu = True
    monkeypatch.setattr("attndoctor.runs.verification.torch_installed", lambda: True)
    code, out, err = cli("bench", "--seqlen", "64")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "bench runs the real kernels and needs an NVIDIA GPU" in err


def test_bench_without_torch_is_one_line_exit_2(cli, monkeypatch):
    monkeypatch.delenv("ATTNDOCTOR_VERIFY_DEVICE", raising=False)
    fake_probe(monkeypatch)
    monkeypatch.setattr("attndoctor.runs.verification.torch_installed", lambda: False)
    code, out, err = cli("bench")
    assert code == 2 and out == "" and err.count("\n") == 1 and "needs PyTorch" in err


def test_bench_rejects_bad_options(cli, monkeypatch):
    fake_probe(monkeypatch)
    for args, word in ((("--runs", "0"), "--runs"), (("--format", "sarif"), "--format"),
                       (("--timeout", "0"), "--timeout")):
        code, _, err = cli("bench", *args)
        assert code == 2 and word in err


# ---------------------------------------------------------------- the worker's bench path on the CPU


def test_worker_bench_path_on_the_cpu():
    pytest.importorskip("torch")
    from attndoctor_kernels.supervisor import Supervisor

    config = _config(batch=2, heads=4, kv_heads=2, seqlen=32, hdim=16, dtype="fp32").to_dict()
    with Supervisor(device="cpu", timeout=60, startup_timeout=60, prepare=False) as sup:
        r = sup.bench("sdpa-math", config, seed=3, options={"runs": 5, "max_runs": 8, "sets": 3})
        assert r["outcome"] == "ok", r.get("error")
        assert r["mode"] == "eager" and r["sets"] == 3
        for key in ("forward", "train"):
            stats = r[key]
            assert 5 <= stats["runs"] <= 8
            assert 0 < stats["min_ms"] <= stats["median_ms"] <= stats["p90_ms"]
            assert stats["spread_rel"] >= 0
        infer = sup.bench("sdpa-math", {**config, "train": False}, seed=3, options={"runs": 3})
        assert infer["outcome"] == "ok" and infer["train"] is None and infer["forward"]["runs"] >= 3
        refused = sup.bench("cudnn-fe", config, seed=3)
        assert refused["outcome"] in ("skipped", "not-installed")
        assert sup.starts == 1


def test_a_crashing_kernel_does_not_take_bench_down():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (TESTS, env.get("PYTHONPATH", "")) if p)
    from attndoctor_kernels.supervisor import Supervisor

    with Supervisor(device="cpu", timeout=20, startup_timeout=60, runner_modules=["fake_runners"], env=env,
                    prepare=False) as sup:
        crashed = sup.bench("fake-abort", {})
        assert crashed["outcome"] == "crashed" and "SIGABRT" in crashed["error"]
        ok = sup.bench("fake-ok", {})
        assert ok["outcome"] == "ok" and ok["forward"]["median_ms"] == 1.0
        hung = sup.bench("fake-hang", {}, timeout=1.5)
        assert hung["outcome"] == "crashed" and hung["phase"] == "timeout"
        assert sup.bench("fake-ok", {})["outcome"] == "ok"


def test_bench_on_the_cpu_end_to_end(cli, monkeypatch):
    pytest.importorskip("torch")
    fake_probe(monkeypatch, gpu="H100")
    monkeypatch.setenv("ATTNDOCTOR_VERIFY_DEVICE", "cpu")
    args = ["bench", "--heads", "4", "--kv-heads", "2", "--seqlen", "32", "--hdim", "16", "--dtype", "fp32",
            "--train", "--causal", "--backend", "sdpa-math", "--runs", "3", "--seed", "5"]
    code, out, err = cli(*args, "--format", "json")
    assert code == 0, out + err
    doc = json.loads(out)
    r = doc["results"][0]
    assert r["recommendation"]["backend"] == "sdpa-math" and r["measurements"][0]["outcome"] == "ok"
    assert r["measurements"][0]["forward_backward"]["median_ms"] > 0 and r["defaults"] == ["batch", "layout"]
    assert "bench" in err
    code, out, _ = cli(*args)
    assert code == 0 and "fastest: sdpa-math" in out and "fwd+bwd ms" in out


# ---------------------------------------------------------------- timing statistics (no torch)


def test_summarize_and_the_sizing_rules():
    from attndoctor_kernels.timing import input_sets_needed, percentile, runs_for, summarize

    s = summarize([5.0, 1.0, 2.0, 3.0, 4.0])
    assert s["median_ms"] == 3.0 and s["min_ms"] == 1.0 and s["runs"] == 5
    assert s["p25_ms"] == 2.0 and s["p75_ms"] == 4.0 and s["iqr_rel"] == pytest.approx(2 / 3)
    assert s["p10_ms"] == pytest.approx(1.4) and s["spread_rel"] == pytest.approx((4.6 - 1.4) / 3)
    assert percentile([1.0, 2.0], 50) == 1.5
    mib = 1 << 20
    assert input_sets_needed(1 * mib, 50 * mib) == 8  # small sets: as many as allowed
    assert input_sets_needed(60 * mib, 50 * mib) == 3  # 3 x L2 needs three sets
    assert input_sets_needed(10 ** 10, 50 * mib) == 2  # never fewer than two
    assert runs_for(0.01, min_runs=20, max_runs=100, budget_ms=100) == 100
    assert runs_for(50.0, min_runs=20, max_runs=100, budget_ms=100) == 20
    assert runs_for(2.0, min_runs=20, max_runs=100, budget_ms=100) == 50


def test_time_calls_rotates_sets_and_extends_a_noisy_measurement():
    import time as _time

    from attndoctor_kernels.timing import time_calls

    seen = []

    def steady(i):
        return lambda: seen.append(i)

    samples = time_calls([steady(0), steady(1), steady(2)], "cpu", min_runs=6, max_runs=50, budget_ms=0)
    assert len(samples) == 6, "no budget for more: the least runs"
    assert set(seen) == {0, 1, 2}, "runs rotate among the input sets"
    state = {"n": 0}

    def noisy():
        state["n"] += 1
        if state["n"] % 2:
            _time.sleep(0.002)

    samples = time_calls([noisy], "cpu", min_runs=6, max_runs=20, budget_ms=1000)
    assert len(samples) == 20, "a noisy median gets a second batch, up to max_runs"


def test_a_worker_that_cannot_start_is_one_line_for_bench_and_verify(tmp_path):
    from attndoctor.errors import UsageError
    from attndoctor.runs.verification import run_verify
    from attndoctor_kernels.supervisor import WorkerError

    class Unstartable(PlantedSupervisor):
        closed = False

        def inventory(self, backends):
            raise WorkerError("CUDA driver initialisation failed")

        def close(self):
            self.closed = True

    sup = Unstartable()
    with pytest.raises(UsageError, match="^bench could not start its worker on cuda: CUDA driver initialisation"):
        run_bench([_config()], _h100_env(), supervisor=sup, seed=1)
    record = tmp_path / "obs.jsonl"
    with pytest.raises(UsageError, match="^verify could not start its worker on cuda: CUDA driver initialisation"):
        run_verify([_config()], _h100_env(), supervisor=sup, seed=1, record=str(record))
    assert not sup.closed  # a worker passed in stays the caller's
    assert record.exists() and record.read_text() == ""
