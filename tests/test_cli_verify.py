"""`attndoctor verify` as a user meets it: one line and exit 2 without torch or a GPU; on the CPU (for tests) the
whole flow: worker, comparison with the rules, text, JSON and the recorded observations."""

from __future__ import annotations

import json

import pytest

from conftest import fake_probe


def test_verify_without_torch_is_one_line_exit_2(cli, monkeypatch):
    fake_probe(monkeypatch)
    monkeypatch.setattr("attndoctor.runs.verification.torch_installed", lambda: False)
    code, out, err = cli("verify")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "needs PyTorch" in err


def test_verify_without_gpu_is_one_line_exit_2(cli, monkeypatch):
    env = fake_probe(monkeypatch)
    env.no_gpu = True
    monkeypatch.setattr("attndoctor.runs.verification.torch_installed", lambda: True)
    code, out, err = cli("verify", "--seqlen", "64")
    assert code == 2 and err.count("\n") == 1 and "needs an NVIDIA GPU" in err


def test_verify_rejects_bad_options(cli, monkeypatch):
    fake_probe(monkeypatch)
    code, _, err = cli("verify", "--timeout", "0")
    assert code == 2 and "--timeout" in err
    code, _, err = cli("verify", "--format", "sarif")
    assert code == 2 and "--format" in err


def test_verify_on_the_cpu_end_to_end(cli, monkeypatch, tmp_path):
    pytest.importorskip("torch")
    fake_probe(monkeypatch, gpu="H100")
    monkeypatch.setenv("ATTNDOCTOR_VERIFY_DEVICE", "cpu")
    record = tmp_path / "obs.jsonl"
    args = ["verify", "--heads", "4", "--kv-heads", "2", "--seqlen", "32", "--hdim", "16", "--dtype", "fp32",
            "--train", "--causal", "--backend", "sdpa-math", "--repeats", "1", "--seed", "11"]
    code, out, err = cli(*args, "--record", str(record))
    assert code == 0, out + err
    assert "sdpa-math" in out and "confirmed" in out and "unknown fields ran with small defaults: batch=2" in out
    lines = [json.loads(x) for x in record.read_text().splitlines()]
    assert len(lines) == 1
    obs = lines[0]
    assert {"environment", "config", "backend", "outcome", "predicted", "error", "rel_error", "ms"} <= set(obs)
    assert obs["outcome"] == "ok" and obs["predicted"] == "supported" and obs["agreement"] == "confirmed"
    assert obs["config"]["batch"] == 2 and obs["defaults"] == ["batch", "layout"] and obs["seed"] == 11
    assert obs["rel_error"] < 1e-4 and obs["ms"] > 0
    code, out, _ = cli(*args, "--format", "json")
    doc = json.loads(out)
    assert doc["command"] == "verify" and doc["summary"]["agreement"] == {"confirmed": 1}
    assert doc["observations"][0]["backend"] == "sdpa-math"
