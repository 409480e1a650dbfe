"""The worker's isolation: a probe that aborts, hangs, exits or hits a CUDA error never takes verify down, and the
next probe runs in a fresh worker. Planted runners (tests/fake_runners.py) need no torch and no GPU."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from attndoctor_kernels.supervisor import Supervisor

TESTS = str(Path(__file__).resolve().parent)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (TESTS, env.get("PYTHONPATH", "")) if p)
    return env


@pytest.fixture
def sup():
    s = Supervisor(device="cpu", timeout=20, startup_timeout=60, runner_modules=["fake_runners"], env=_env(),
                   prepare=False)
    yield s
    s.close()


def _pid(result):
    return result["details"]["pid"]


def test_ok_probe_reports_and_reuses_one_worker(sup):
    first = sup.probe("fake-ok", {"batch": 1}, seed=5)
    second = sup.probe("fake-ok", {"batch": 1}, seed=6)
    assert first["outcome"] == second["outcome"] == "ok"
    assert _pid(first) == _pid(second), "many probes share one worker"
    assert second["details"]["seed"] == 6
    assert sup.starts == 1 and sup.restarts == 0
    assert first["round_trip_ms"] >= 0


def test_abort_is_crashed_and_the_next_probe_runs_in_a_fresh_worker(sup):
    before = _pid(sup.probe("fake-ok", {}))
    crashed = sup.probe("fake-abort", {})
    assert crashed["outcome"] == "crashed"
    assert "SIGABRT" in crashed["error"]
    after = sup.probe("fake-ok", {})
    assert after["outcome"] == "ok" and _pid(after) != before
    assert sup.restarts == 1


def test_hang_times_out_kills_and_restarts(sup):
    before = _pid(sup.probe("fake-ok", {}))
    hung = sup.probe("fake-hang", {}, timeout=1.5)
    assert hung["outcome"] == "crashed" and hung["phase"] == "timeout"
    assert "timed out after 1.5 s" in hung["error"]
    assert hung["round_trip_ms"] < 10_000
    with pytest.raises(ProcessLookupError):
        os.kill(before, 0)
    after = sup.probe("fake-ok", {})
    assert after["outcome"] == "ok" and _pid(after) != before


def test_cuda_error_restarts_the_worker(sup):
    before = _pid(sup.probe("fake-ok", {}))
    bad = sup.probe("fake-cuda-error", {})
    assert bad["outcome"] == "crashed" and bad["restart"] is True
    assert "illegal memory access" in bad["error"] and "restarted" in bad["error"]
    after = sup.probe("fake-ok", {})
    assert after["outcome"] == "ok" and _pid(after) != before


def test_refusals_and_signature_errors_keep_the_worker(sup):
    before = _pid(sup.probe("fake-ok", {}))
    refused = sup.probe("fake-refuse", {})
    mismatch = sup.probe("fake-signature", {})
    assert refused["outcome"] == "rejected" and "Ampere" in refused["error"]
    assert mismatch["outcome"] == "api-mismatch"
    assert _pid(sup.probe("fake-ok", {})) == before


def test_exit_and_runner_bug_are_crashes_not_exceptions(sup):
    gone = sup.probe("fake-exit", {})
    assert gone["outcome"] == "crashed" and "status 7" in gone["error"]
    bug = sup.probe("fake-bug", {})
    assert bug["outcome"] == "crashed" and "KeyError" in bug["error"]
    assert sup.probe("fake-ok", {})["outcome"] == "ok"


def test_library_output_on_stdout_does_not_break_the_protocol(sup):
    result = sup.probe("fake-print", {})
    assert result["outcome"] == "ok"
    deadline = time.monotonic() + 5  # the stderr reader thread may lag the reply under load
    while not any("library chatter" in line for line in sup.stderr_tail(50)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert any("library chatter" in line for line in sup.stderr_tail(50))
    assert sup.probe("fake-ok", {})["outcome"] == "ok"


def test_inventory_and_unknown_backend(sup):
    inv = sup.inventory(["fake-ok", "no-such"])
    assert inv["fake-ok"]["installed"] is True and inv["fake-ok"]["version"] == "0.0-fake"
    assert inv["no-such"]["installed"] is False
    assert sup.probe("no-such", {})["outcome"] == "skipped"


def test_a_worker_that_cannot_start_is_reported():
    s = Supervisor(device="cpu", python="/nonexistent/python", prepare=False)
    try:
        result = s.probe("fake-ok", {})
        assert result["outcome"] == "crashed" and "cannot start the worker" in result["error"]
    finally:
        s.close()


def test_a_batch_is_one_request_and_each_failure_costs_only_its_own_probe(sup):
    items = [{"backend": b, "config": {"batch": 1}, "seed": i}
             for i, b in enumerate(["fake-ok", "fake-refuse", "fake-abort", "fake-ok", "fake-hang", "fake-ok",
                                    "fake-cuda-error", "fake-bug", "fake-ok", "no-such", "fake-ok"])]
    started = []
    results = sup.probes(items, timeout=1.5, before=started.append)
    assert started == list(range(len(items))), "progress sees every probe start, in order"
    assert [r["outcome"] for r in results] == ["ok", "rejected", "crashed", "ok", "crashed", "ok", "crashed",
                                               "crashed", "ok", "skipped", "ok"]
    assert "SIGABRT" in results[2]["error"] and results[4]["phase"] == "timeout"
    assert "restarted" in results[6]["error"] and "KeyError" in results[7]["error"]
    assert [r["details"]["seed"] for r in results if r["outcome"] == "ok"] == [0, 3, 5, 8, 10]
    pids = [_pid(results[i]) for i in (0, 3, 5, 8, 10)]
    assert pids[0] != pids[1] != pids[2] != pids[3], "a fresh worker after each crash, hang, CUDA error, bug"
    assert pids[3] == pids[4], "the worker keeps serving after a skip"
    assert sup.starts == 5 and all(r["round_trip_ms"] >= 0 for r in results)


def test_a_batch_reuses_the_running_worker(sup):
    before = _pid(sup.probe("fake-ok", {}))
    results = sup.probes([{"backend": "fake-ok", "config": {}, "seed": s} for s in range(4)])
    assert {_pid(r) for r in results} == {before} and sup.starts == 1


def test_train_and_infer_share_the_data_and_reference_but_each_probe_runs_as_its_own_spec():
    pytest.importorskip("torch")
    from attndoctor.config import make_config
    from attndoctor_kernels.spec import case_spec
    from attndoctor_kernels.worker import WorkerContext

    values = {"batch": 1, "heads": 2, "seqlen": 64, "hdim": 32, "dtype": "fp32", "mask": "causal"}
    context = WorkerContext("cpu")
    train = context.case(case_spec(make_config({**values, "train": True}).to_dict()), 7)
    infer = context.case(case_spec(make_config({**values, "train": False}).to_dict()), 7)
    assert train.spec.train is True and infer.spec.train is False
    assert infer.q is train.q and infer.reference is train.reference


def test_a_loaded_worker_is_the_one_that_starts_later(sup):
    sup.load()
    pid = sup.pid
    assert pid is not None and sup.starts == 1 and not sup.prepared
    assert _pid(sup.probe("fake-ok", {})) == pid and sup.starts == 1
