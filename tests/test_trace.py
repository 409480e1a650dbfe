"""`attndoctor trace`: real programs under the recorder on the CPU, the record it writes, the report it makes."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from test_json_schema import check  # noqa: E402

PROGRAMS = Path(__file__).parent / "trace_programs"
ROOT = Path(__file__).resolve().parent.parent


def line_of(program: str, marker: str) -> int:
    lines = (PROGRAMS / program).read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if f"# {marker}" in text)


def trace(*args: str, cwd: Path = PROGRAMS) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "attndoctor", "trace", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def calls_at(doc: dict, site: str, phase: str = "forward") -> list[dict]:
    return [c for c in doc["calls"] if c["site"] == site and c["phase"] == phase]


def test_acceptance_two_sites_configs_counts_what_ran_output_and_exit_code(tmp_path):
    report = tmp_path / "trace.json"
    done = trace("--format", "json", "--output", str(report), "--", sys.executable, "two_sites.py")
    assert done.returncode == 3
    assert "program output (2, 8, 64, 32)" in done.stdout
    assert "program stderr" in done.stderr
    doc = json.loads(report.read_text())
    check(doc)
    assert doc["command"] == "trace" and doc["trace"]["exit_code"] == 3
    gqa_site, mask_site = (f"two_sites.py:{line_of('two_sites.py', m)}" for m in ("GQA-SITE", "MASK-SITE"))
    assert {c["site"] for c in doc["calls"]} == {gqa_site, mask_site}
    [gqa] = calls_at(doc, gqa_site)
    assert gqa["count"] == 3
    assert gqa["config"] == {**gqa["config"], "batch": 2, "heads": 8, "kv_heads": 2, "seqlen_q": 64, "seqlen_kv": 64,
                             "hdim": 32, "dtype": "fp32", "train": True, "mask": "causal", "layout": "bhsd"}
    assert gqa["details"]["gqa"] and gqa["details"]["enable_gqa"]
    assert gqa["op"] == "aten._scaled_dot_product_flash_attention_for_cpu.default"
    assert gqa["ran"] == "sdpa-cpu-flash" and "CPU" in gqa["not_modelled"]
    [backward] = calls_at(doc, gqa_site, "backward")
    assert backward["count"] == 3 and backward["op"].endswith("_for_cpu_backward")
    [masked] = calls_at(doc, mask_site)
    assert masked["count"] == 1 and masked["config"]["mask"] == "arbitrary" and masked["config"]["train"] is False
    assert masked["details"]["mask_kind"] == "bool" and masked["details"]["fully_masked_rows"] is False
    assert not calls_at(doc, mask_site, "backward")
    # each call's config is diagnosed in explain's form
    assert doc["results"][gqa["result"]]["config"]["kv_heads"] == 2
    assert {v["backend"] for v in doc["results"][0]["verdicts"]} >= {"sdpa-flash", "sdpa-math"}


def test_text_report_goes_to_stderr_and_names_sites_and_kernel():
    done = trace("--", sys.executable, "two_sites.py")
    assert done.returncode == 3
    assert done.stdout.strip() == "program output (2, 8, 64, 32)"
    gqa_site = f"two_sites.py:{line_of('two_sites.py', 'GQA-SITE')}"
    assert gqa_site in done.stderr and "sdpa-cpu-flash" in done.stderr
    assert "diagnosis of the configs seen" in done.stderr


def test_record_file_is_accepted_by_explain_config_file(tmp_path, cli):
    record = tmp_path / "calls.jsonl"
    done = trace("--record", str(record), "--output", str(tmp_path / "r.txt"), "--", "two_sites.py")
    assert done.returncode == 3
    rows = [json.loads(line) for line in record.read_text().splitlines()]
    assert len(rows) == 2 and {r["mask"] for r in rows} == {"causal", "arbitrary"}
    code, out, err = cli("explain", "--config-file", str(record), "--gpu", "H100", "--torch", "2.11.0",
                         "--format", "json")
    assert code in (0, 1), err
    assert [r["config"]["kv_heads"] for r in json.loads(out)["results"]] == [2, 8]


@pytest.mark.parametrize("args, words", [
    ([], "no program to trace"),
    (["--", "missing_program.py"], "no such Python file"),
    (["--", "no-such-program-anywhere"], "no such program"),
    (["--format", "sarif", "--", "two_sites.py"], "--format"),
    (["--output", "/no/such/folder/r.txt", "--", "two_sites.py"], "--output"),
])
def test_bad_input_is_exit_2_with_one_line_before_the_program_runs(args, words):
    done = trace(*args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and words in done.stderr


def test_numerics_names_the_site_and_step_of_a_planted_nan(tmp_path):
    report = tmp_path / "trace.json"
    done = trace("--numerics", "--format", "json", "--output", str(report), "--", sys.executable, "planted_nan.py")
    assert done.returncode == 0, done.stderr
    doc = json.loads(report.read_text())
    check(doc)
    first = doc["trace"]["first_nonfinite"]
    assert first["site"] == f"planted_nan.py:{line_of('planted_nan.py', 'NAN-SITE')}"
    assert first["step"] == 1 and first["tensor"] == "output" and first["phase"] == "forward"
    clean = calls_at(doc, f"planted_nan.py:{line_of('planted_nan.py', 'CLEAN-SITE')}")[0]
    assert clean["numerics"]["nonfinite_calls"] == 0
    assert len(clean["numerics"]["lse_min_per_head"]) == 4


def test_context_manager_records_module_paths_and_restores_sdpa():
    import runpy

    import torch.nn.functional as F

    import attndoctor

    before = F.scaled_dot_product_attention
    with attndoctor.trace() as t:
        assert F.scaled_dot_product_attention is not before
        runpy.run_path(str(PROGRAMS / "gqa_module.py"))
    assert F.scaled_dot_product_attention is before
    assert sorted(c["module"] for c in t.calls) == ["layers.0.self_attn", "layers.1.self_attn"]
    assert {c["site"].endswith(f"gqa_module.py:{line_of('gqa_module.py', 'SDPA-SITE')}") for c in t.calls} == {True}
    report = t.report()
    assert report.report.command == "trace" and len(report.report.results) == 1
    assert all(c["count"] == 1 and c["config"]["mask"] == "causal" for c in t.calls)


def test_flex_attention_on_cpu_is_recorded_as_flex_attention():
    import torch.nn.attention.flex_attention as flex

    import attndoctor

    def causal(b, h, q_idx, kv_idx):
        return q_idx >= kv_idx

    # Three tensors: one passed as q, k and v trips Dynamo's aliasing guard once flex_attention has been compiled in
    # this process for distinct tensors (its recompile-reason code fails: torch 2.13), which is not what this tests.
    q, k, v = (torch.randn(1, 4, 128, 16) for _ in range(3))
    block_mask = flex.create_block_mask(causal, None, None, 128, 128, device="cpu")
    with attndoctor.trace() as t:
        flex.flex_attention(q, k, v, block_mask=block_mask)
    [call] = t.calls
    assert call["ran"] == "flex-attention" and call["config"]["mask"] == "causal"
    assert call["details"]["mask_kind"] == "block_mask" and call["details"]["mask_mod"] == "causal"
    assert not t.report().notes  # flex_attention's own internal compile is not the user's torch.compile


def test_torch_compile_calls_are_read_from_the_graph_under_the_cli(tmp_path):
    report = tmp_path / "trace.json"
    done = trace("--format", "json", "--output", str(report), "--", sys.executable, "compiled_sdpa.py")
    assert done.returncode == 0, done.stderr
    doc = json.loads(report.read_text())
    check(doc)
    [call] = doc["calls"]
    assert call["site"] == f"compiled_sdpa.py:{line_of('compiled_sdpa.py', 'COMPILED-SITE')}"
    assert call["count"] == 3 and call["ran"] == "sdpa-cpu-flash" and call["details"]["compiled"] is True
    assert any("inside them were read from the graphs" in n for n in doc["trace"]["notes"])


def test_torchrun_writes_one_record_per_rank_merged_by_the_reader(tmp_path):
    if not any((Path(p) / "torchrun").exists() for p in os.environ.get("PATH", "").split(os.pathsep)) and \
            not (Path(sys.executable).parent / "torchrun").exists():
        pytest.skip("no torchrun on PATH")
    report = tmp_path / "trace.json"
    torchrun = str(Path(sys.executable).parent / "torchrun")
    done = trace("--format", "json", "--output", str(report), "--", torchrun, "--nproc_per_node", "2",
                 "two_sites.py")
    assert done.stdout.count("program output") == 2
    doc = json.loads(report.read_text())
    [gqa] = calls_at(doc, f"two_sites.py:{line_of('two_sites.py', 'GQA-SITE')}")
    assert gqa["count"] == 6 and sorted(gqa["ranks"]) == ["0", "1"]


def test_bench_names_a_faster_backend_than_what_ran():
    import torch.nn.functional as F

    import attndoctor
    from attndoctor.runs.bench import run_bench
    from attndoctor.trace.reader import attach_bench
    from test_bench import PlantedSupervisor, _h100_env

    q, k, v = (torch.randn(2, 16, 256, 128, dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    with attndoctor.trace() as t:
        F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
    env = _h100_env()
    report = t.report(env)
    forward = next(c for c in report.calls if c["phase"] == "forward")
    forward["ran"] = "sdpa-flash"  # as on an H100 where the flash kernel ran
    bench = run_bench([r.config for r in report.report.results], env, supervisor=PlantedSupervisor(), seed=1)
    attach_bench(report, bench)
    faster = forward["faster"]
    assert faster["backend"] == "sdpa-cudnn" and faster["metric"] == "forward_backward"
    assert faster["ms"] == 1.5 and faster["ran_ms"] == 2.5 and faster["speedup"] == round(2.5 / 1.5, 2)
    assert "CUDNN_ATTENTION" in faster["select"]
    assert all("faster" not in c for c in report.calls if c["phase"] == "backward")
    assert any("--bench timed 1 distinct config(s)" in n and "faster backend is named beside the other 1" in n
               for n in report.notes)
    from attndoctor.report.trace_text import render_trace_text, trace_document

    check(trace_document(report))
    buffer = io.StringIO()
    render_trace_text(report, buffer)
    assert "sdpa-cudnn is 1.67x faster than sdpa-flash" in buffer.getvalue()


def test_bench_without_a_gpu_says_nothing_was_timed(tmp_path):
    report = tmp_path / "trace.json"
    done = trace("--bench", "--format", "json", "--output", str(report), "--", sys.executable, "two_sites.py")
    assert done.returncode == 3
    doc = json.loads(report.read_text())
    assert any("--bench needs a CUDA GPU" in n for n in doc["trace"]["notes"])
    assert all("faster" not in c for c in doc["calls"])


def test_backward_is_counted_per_run_and_absent_where_backward_never_ran():
    import torch.nn.functional as F

    import attndoctor

    q = torch.randn(1, 2, 16, 8, requires_grad=True)
    with attndoctor.trace() as t:
        for _ in range(4):
            F.scaled_dot_product_attention(q, q, q, is_causal=True).sum().backward()  # TRAINED
        F.scaled_dot_product_attention(q, q, q)  # NEVER-BACKWARD
        for _ in range(7):  # past the calls that settle it: later ones count their backward through the fast path
            F.scaled_dot_product_attention(q, q, q, attn_mask=torch.ones(16, 16).tril().bool(),
                                           dropout_p=0.1).sum().backward()
    by_phase = {(c["phase"], c["config"]["mask"]): c for c in t.calls}
    assert by_phase["forward", "causal"]["count"] == 4 and by_phase["backward", "causal"]["count"] == 4
    arbitrary = [c for c in t.calls if c["config"]["mask"] == "arbitrary"]
    assert sorted((c["phase"], c["count"]) for c in arbitrary) == [("backward", 7), ("forward", 7)]
    assert by_phase["forward", "none"]["count"] == 1 and ("backward", "none") not in by_phase


def test_a_call_from_library_frames_only_is_placed_at_the_innermost_library_line(tmp_path):
    import threading

    import torch.nn.functional as F

    import attndoctor

    source = "def attend(F, q):\n    for _ in range(6):\n        F.scaled_dot_product_attention(q, q, q)\n"
    namespace: dict = {}
    exec(compile(source, str(tmp_path / "site-packages" / "fakelib" / "mod.py"), "exec"), namespace)
    q = torch.randn(1, 2, 16, 8)
    with attndoctor.trace() as t:
        worker = threading.Thread(target=namespace["attend"], args=(F, q))  # threading's frames are the stdlib's
        worker.start()
        worker.join()
        user = sys._getframe().f_lineno + 1
        F.scaled_dot_product_attention(q, q, q)
    sites = {c["site"].rsplit(os.sep, 1)[-1] if "test_trace" in c["site"] else c["site"]: c["count"] for c in t.calls}
    assert sites == {"fakelib/mod.py:3": 6, f"test_trace.py:{user}": 1}
