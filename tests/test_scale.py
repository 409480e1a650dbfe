"""Many configs: streamed in and out, each distinct config evaluated once, the same answers as the collected path."""

from __future__ import annotations

import importlib.util
import io
import json
from pathlib import Path

import pytest

from attndoctor.sources.config_files import load_config_file
from attndoctor.engine.evaluate import Evaluator
from attndoctor.engine.gate import evaluate_gate
from attndoctor.engine.gate_tally import GateTally
from attndoctor.engine.rules import load_rulebase
from attndoctor.environment import environment_from_flags
from attndoctor.report.json_format import render_json
from attndoctor.console.progress import Progress
from attndoctor.report.stream import write_json
from attndoctor.services import ConfigStream, diagnose_many, diagnose_stream

ROOT = Path(__file__).resolve().parent.parent
ENVS = [{"gpu": "H100", "torch": "2.11.0", "cudnn": "9.19.0"},
        {"gpu": "A100", "torch": "2.4.0", "cudnn": "9.1.0", "te": "2.3", "flash_attn": "2.6.3"},
        {"gpu": "RTX4090"}]


def _bench():
    spec = importlib.util.spec_from_file_location("scale_bench", ROOT / "benchmarks" / "scale.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> Path:
    """Model sweeps and independent random fields, with repeats: the mixed set the two paths must agree on."""
    bench = _bench()
    folder = tmp_path_factory.mktemp("mixed")
    bench.write_configs(folder / "a.jsonl", 120, seed=3)
    bench.write_configs(folder / "b.jsonl", 60, seed=4, random_fields=True)
    path = folder / "mixed.jsonl"
    path.write_text((folder / "a.jsonl").read_text() + (folder / "b.jsonl").read_text())
    return path


@pytest.mark.parametrize("facts", ENVS)
def test_shared_verdicts_equal_fresh_ones(mixed, facts):
    """A batch shares verdicts between configs that agree on every fact a backend reads: each shared answer equals
    the one computed for that config alone."""
    env = environment_from_flags(facts)
    base = load_rulebase(None)
    shared, fresh = Evaluator(base, batch=True), Evaluator(base, batch=True)
    for config in load_config_file(mixed):
        fresh.caches.forget_machine()
        assert shared.evaluate(config, env).to_dict() == fresh.evaluate(config, env).to_dict(), config.label()


@pytest.mark.parametrize("facts", ENVS)
@pytest.mark.parametrize("gate", [{}, {"require": ["sdpa-flash"]}, {"require_any": [["sdpa-cudnn", "flash-attn-3"]]},
                                  {"fail_on": "unsupported"}])
def test_streamed_gate_and_json_equal_the_collected_report(mixed, facts, gate):
    env = environment_from_flags(facts)
    configs = load_config_file(mixed)
    report = diagnose_many(configs, env)
    expected = evaluate_gate(report, **gate)
    run = diagnose_stream(ConfigStream([str(mixed)], {}), env)
    out = io.StringIO()
    got = write_json(run, GateTally(run.environment, **gate), out)
    assert got == expected
    collected = io.StringIO()
    render_json(report, expected, collected)
    assert out.getvalue() == collected.getvalue()


def test_each_distinct_config_is_evaluated_once(tmp_path, monkeypatch):
    lines = ['{"hdim": 64, "heads": 8, "seqlen": 512, "dtype": "bf16"}',
             '{"hdim": 128, "heads": 8, "seqlen": 512, "dtype": "bf16"}',
             '{"hdim": 64, "heads": 8, "seqlen": 512, "dtype": "bf16"}',
             '{"hdim": 64, "heads": 8, "seqlen": 512, "dtype": "bf16", "name": "renamed"}']
    path = tmp_path / "dup.jsonl"
    path.write_text("\n".join(lines * 5) + "\n")
    calls = []
    real = Evaluator.evaluate
    monkeypatch.setattr(Evaluator, "evaluate", lambda self, c, *a, **k: calls.append(c) or real(self, c, *a, **k))
    results = list(diagnose_stream(ConfigStream([str(path)], {}), environment_from_flags(ENVS[0])).results)
    assert len(results) == 20 and len(calls) == 2
    assert [r.config.name for r in results[:4]] == ["", "", "", "renamed"]
    assert [r.config.source[1] for r in results[:4]] == [1, 2, 3, 4]
    assert results[3].to_dict()["verdicts"] == results[0].to_dict()["verdicts"]


def test_jsonl_output(cli, mixed):
    code, out, err = cli("explain", "--config-file", str(mixed), "--gpu", "H100", "--torch", "2.11.0",
                         "--cudnn", "9.19.0", "--require", "sdpa-flash", "--format", "jsonl")
    lines = [json.loads(line) for line in out.splitlines()]
    configs, last = lines[:-1], lines[-1]
    assert len(configs) == 180 and err == ""
    first = configs[0]
    assert set(first) == {"config", "label", "verdicts", "selected", "passed"}
    assert first["config"]["name"] and first["label"].startswith(first["config"]["name"])
    verdict = first["verdicts"][0]
    assert set(verdict) == {"backend", "status", "supported", "blocking", "depends_on", "fix"}
    assert {s["framework"] for s in first["selected"]} >= {"pytorch"}
    assert set(last) == {"schema_version", "tool", "command", "environment", "summary", "gate"}
    assert last["summary"]["configs"] == 180
    failed = [c for c in configs if not c["passed"]]
    assert code == (1 if failed else 0) and failed
    assert last["gate"]["passed"] is False
    assert {c["config"] for c in last["gate"]["failed"]} == {c["config"]["name"] for c in failed}
    assert len(last["gate"]["failed"]) >= len(failed)
    refused = next(v for c in configs for v in c["verdicts"] if v["status"] == "unsupported")
    assert refused["blocking"] and refused["supported"] is False


def test_progress_only_on_a_terminal(cli, mixed, monkeypatch):
    monkeypatch.setattr(Progress, "DELAY", 0.0)
    code, out, err = cli("explain", "--config-file", str(mixed), "--gpu", "H100", "--format", "jsonl")
    assert err == ""

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    shown = Terminal()
    progress = Progress(180, file=shown)
    assert len(list(progress.wrap(range(180)))) == 180
    assert "of 180 configs" in shown.getvalue() and shown.getvalue().endswith("\r\x1b[K")


def test_worker_processes_write_the_same_document_as_one_process(tmp_path, monkeypatch):
    """Above PARALLEL_OVER configs the work is split over forked workers; the bytes written do not change."""
    import attndoctor.console.parallel as parallel
    from attndoctor.cli import main

    monkeypatch.setattr(parallel, "PARALLEL_OVER", 10)
    monkeypatch.setattr(parallel, "CHUNK", 7)
    calls = []
    real = parallel.map_ordered
    monkeypatch.setattr(parallel, "map_ordered", lambda *a: calls.append(a[-1]) or real(*a))
    path = tmp_path / "many.jsonl"
    lines = [json.dumps({"name": f"c{i}", "hdim": 64 + 32 * (i % 5), "heads": 16, "seqlen": 512 * (1 + i % 3),
                         "dtype": "bf16", "train": bool(i % 2)}) for i in range(60)]
    path.write_text("\n".join(lines) + "\n")
    out = {}
    for workers in ("1", "2"):
        monkeypatch.setenv("ATTNDOCTOR_WORKERS", workers)
        for fmt in ("json", "jsonl"):
            target = tmp_path / f"{workers}.{fmt}"
            with pytest.raises(SystemExit):
                main(["explain", "--config-file", str(path), "--gpu", "H100", "--te", "2.3", "--cudnn", "9.1.0",
                      "--format", fmt, "--output", str(target)])
            out[workers, fmt] = target.read_text()
    assert out["1", "json"] == out["2", "json"] and out["1", "jsonl"] == out["2", "jsonl"]
    assert json.loads(out["2", "json"])["summary"]["configs"] == 60 and calls == [2, 2]
