"""Probes spread over several workers: results in order, each shape in one worker, large shapes alone, a probe that
ran out of memory beside others run again alone, and the same records as one worker on the CPU runner."""

from __future__ import annotations

import json
import threading
import time

import pytest

from attndoctor.runs.parallel import ProbePool, fit_jobs, probe_bytes, worker_env
from conftest import fake_probe


class FakeSup:
    """A supervisor whose probes answer from the item, note which worker ran them and how many ran at once."""

    live: list["FakeSup"]

    def __init__(self, shared: dict, name: str = "w0", info: dict | None = None) -> None:
        self.shared = shared
        self.name = name
        self.info = info or {}
        self.starts = 1
        self.closed = False
        self.active = False  # a worker with a CUDA context: from its first probe to its close
        self.loaded = False
        shared.setdefault("sups", []).append(self)

    def clone(self) -> "FakeSup":
        return FakeSup(self.shared, f"w{len(self.shared['sups'])}", self.info)

    def load(self) -> None:
        self.loaded = True

    def close(self) -> None:
        self.closed = True
        self.active = False

    def probes(self, items, before=None):
        out = []
        lock = self.shared.setdefault("lock", threading.Lock())
        self.active = True
        for i, item in enumerate(items):
            if before:
                before(i)
            with lock:
                others = [s.name for s in self.shared["sups"] if s is not self and s.active]
            time.sleep(0.02)
            config = item["config"]
            oom = config.get("oom_beside_others") and others
            no_start = config.get("no_start_beside_others") and others
            outcome = "out-of-memory" if oom else "crashed" if no_start else "ok"
            out.append({"backend": item["backend"], "outcome": outcome, "worker": self.name, "others_open": others,
                        "seed": item["seed"], "shape": config["shape"],
                        "error": "worker start failed: CUDA out of memory" if no_start else ""})
        return out


def _groups(shapes):
    return [[{"backend": b, "config": dict(c), "seed": g} for b in ("a", "b")] for g, c in enumerate(shapes)]


def test_one_job_is_one_worker_in_order():
    shared: dict = {}
    pool = ProbePool(FakeSup(shared), jobs=1)
    seen = []
    groups = _groups([{"shape": s} for s in "xyzx"])
    out = list(pool.run(groups, [c[0]["config"]["shape"] for c in groups], before=lambda g, i, n: seen.append(n)))
    assert [g for g, _ in out] == [0, 1, 2, 3] and seen == list(range(8))
    assert {r["worker"] for _, res in out for r in res} == {"w0"} and len(shared["sups"]) == 1


def test_groups_come_back_in_order_and_each_shape_stays_in_one_worker():
    shared: dict = {}
    shapes = [{"shape": s} for s in "abcabdcefa"]
    groups = _groups(shapes)
    pool = ProbePool(FakeSup(shared), jobs=3)
    seen = []
    out = list(pool.run(groups, [c["shape"] for c in shapes], before=lambda g, i, n: seen.append(n)))
    assert [g for g, _ in out] == list(range(len(groups)))
    assert [r["seed"] for _, res in out for r in res] == [g for g in range(len(groups)) for _ in "ab"]
    worker_of: dict = {}
    for _, res in out:
        for r in res:
            assert worker_of.setdefault(r["shape"], r["worker"]) == r["worker"], "a shape's probes share a worker"
    assert len(set(worker_of.values())) == 3 and sorted(seen) == list(range(2 * len(groups)))
    assert all(s.closed for s in shared["sups"][1:]) and pool.starts == 3


def test_a_large_shape_runs_alone_before_the_others_start():
    shared: dict = {}
    shapes = [{"shape": "small"}, {"shape": "huge"}, {"shape": "small2"}]
    sizes = [1 << 20, 40 << 30, 1 << 20]
    pool = ProbePool(FakeSup(shared, info={"memory_free": 80 << 30}), jobs=4)
    out = dict(pool.run(_groups(shapes), [c["shape"] for c in shapes], sizes))
    assert all(r["others_open"] == [] for r in out[1]), "the large shape had the GPU to itself"
    assert {r["worker"] for r in out[0] + out[2]} <= {"w0", "w1"}
    assert shared["sups"][1].loaded, "the second worker loaded its libraries meanwhile"


def test_a_probe_out_of_memory_beside_others_runs_again_alone():
    shared: dict = {}
    shapes = [{"shape": s} for s in "pqrs"]
    shapes[1]["oom_beside_others"] = True
    shapes[2]["no_start_beside_others"] = True
    pool = ProbePool(FakeSup(shared), jobs=4)
    out = dict(pool.run(_groups(shapes), [c["shape"] for c in shapes]))
    for g in (1, 2):
        assert [r["outcome"] for r in out[g]] == ["ok", "ok"]
        assert all(r["others_open"] == [] and r["worker"] == "w0" for r in out[g])
    assert all(r["outcome"] == "ok" for g in (0, 3) for r in out[g])


def test_memory_estimates_and_worker_settings(monkeypatch, tmp_path):
    small = probe_bytes({"batch": 1, "heads": 4, "seqlen_q": 1024, "seqlen_kv": 1024, "hdim": 128, "dtype": "bf16"})
    big = probe_bytes({"batch": 1, "heads": 32, "seqlen_q": 8192, "seqlen_kv": 8192, "hdim": 128, "dtype": "bf16",
                       "train": True})
    assert small < (1 << 30) < (16 << 30) < big
    assert fit_jobs(8, {"memory_free": 80 << 30}) == 8 and fit_jobs(8, {"memory_free": 9 << 30}) == 2
    assert fit_jobs(8, {}) == 8
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    monkeypatch.setenv("TRITON_CACHE_DIR", "/elsewhere")
    env = worker_env(2)
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "attndoctor" / "inductor")
    assert env["TRITON_CACHE_DIR"] == "/elsewhere" and int(env["TORCHINDUCTOR_COMPILE_THREADS"]) >= 1


_TIMING = {"ms", "ms_forward", "ms_backward", "ms_first", "ms_setup", "round_trip_ms", "details"}


def _records(path, drop=()):
    out = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        details = {k: v for k, v in record.get("details", {}).items() if not k.startswith(("ms", "pid"))}
        out.append({**{k: v for k, v in record.items() if k not in _TIMING and k not in drop}, "details": details})
    return out


def test_two_jobs_give_the_records_of_one_on_the_cpu_runner(cli, monkeypatch, tmp_path):
    pytest.importorskip("torch")
    fake_probe(monkeypatch, gpu="H100")
    monkeypatch.setenv("ATTNDOCTOR_VERIFY_DEVICE", "cpu")
    shapes = tmp_path / "shapes.jsonl"
    rows = [{"name": "a", "heads": 4, "kv_heads": 2, "seqlen": 32, "hdim": 16, "dtype": "fp32", "train": True,
             "mask": "causal"},
            {"name": "b", "heads": 2, "seqlen": 48, "hdim": 32, "dtype": "bf16", "train": False},
            {"name": "a infer", "heads": 4, "kv_heads": 2, "seqlen": 32, "hdim": 16, "dtype": "fp32", "train": False,
             "mask": "causal"},
            {"name": "c", "heads": 2, "seqlen": 40, "hdim": 24, "dtype": "fp32", "train": True, "mask": "arbitrary"}]
    shapes.write_text("".join(json.dumps(r) + "\n" for r in rows))
    base = ["verify", "--config-file", str(shapes), "--backend", "sdpa-math", "--backend", "sdpa-flash",
            "--repeats", "0", "--seed", "5", "--format", "json"]
    docs = {}
    for jobs in ("1", "2"):
        code, out, err = cli(*base, "--jobs", jobs, "--record", str(tmp_path / f"v{jobs}.jsonl"))
        assert code in (0, 1), err
        docs[jobs] = json.loads(out)
    one, two = _records(tmp_path / "v1.jsonl"), _records(tmp_path / "v2.jsonl")
    assert len(one) == 8 and one == two
    assert {r["outcome"] for r in one} >= {"ok"}
    assert docs["2"]["summary"]["worker_starts"] == 2 and docs["1"]["summary"]["worker_starts"] == 1
    few = tmp_path / "few.jsonl"
    few.write_text("".join(json.dumps(r) + "\n" for r in (rows[0], rows[3])))
    stress = ["verify", "--stress", "--config-file", str(few), "--backend", "sdpa-math", "--backend", "sdpa-flash",
              "--seed", "5", "--format", "json"]
    for jobs in ("1", "2"):
        code, out, err = cli(*stress, "--jobs", jobs, "--record", str(tmp_path / f"s{jobs}.jsonl"))
        assert code in (0, 1), err
        docs["s" + jobs] = json.loads(out)
    one, two = _records(tmp_path / "s1.jsonl"), _records(tmp_path / "s2.jsonl")
    assert len(one) > 20 and one == two
    assert docs["s1"]["findings"] == docs["s2"]["findings"] and docs["s1"]["probes"] == docs["s2"]["probes"]


def test_jobs_must_be_positive(cli, monkeypatch):
    fake_probe(monkeypatch)
    code, _, err = cli("verify", "--jobs", "0")
    assert code == 2 and "--jobs" in err
