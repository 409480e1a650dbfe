"""--quiet (the exit code alone) and --summary (one line per backend, then the gate) on explain and check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import fake_probe

CRASH = ["--hdim", "192", "--hdim-v", "128", "--heads", "128", "--seqlen", "4096", "--dtype", "bf16", "--train",
         "--causal", "--gpu", "H100", "--torch", "2.11.0", "--cuda", "13.0", "--cudnn", "9.1.0", "--te", "2.3",
         "--flash-attn", "2.7.3"]
"""The README's headline: TE 2.3 selects te-fused, which fails in the backward pass (exit 1)."""
FIXED = [("9.5.0" if a == "9.1.0" else a) for a in CRASH]


@pytest.mark.parametrize(("args", "code"), [(CRASH, 1), (FIXED, 0)])
def test_quiet_writes_nothing_and_keeps_the_exit_code(cli, args, code):
    assert cli("explain", *args)[0] == code
    assert cli("explain", *args, "--quiet") == (code, "", "")


def test_quiet_still_reports_errors_and_writes_what_output_names(cli, tmp_path: Path):
    code, out, err = cli("explain", *CRASH, "--quiet", "--dtype", "bf17")
    assert code == 2 and out == "" and "bf17" in err
    target = tmp_path / "report.json"
    code, out, err = cli("explain", *CRASH, "--quiet", "--format", "json", "--output", str(target))
    assert (code, out, err) == (1, "", "") and json.loads(target.read_text())["gate"]["passed"] is False


def test_quiet_on_a_streamed_run_and_the_step_summary(cli, tmp_path: Path, monkeypatch):
    rows = [{"name": f"c{i}", "hdim": 192, "hdim_v": 128, "heads": 16, "seqlen": 1024 + i, "dtype": "bf16",
             "train": True} for i in range(60)]  # above 50 configs json is written as results come
    configs = tmp_path / "many.jsonl"
    configs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    base = ["explain", "--config-file", str(configs), "--gpu", "H100", "--torch", "2.11.0", "--cudnn", "9.1.0",
            "--te", "2.3", "--flash-attn", "2.7.3"]
    loud = cli(*base, "--format", "json")
    assert loud[0] == 1 and len(json.loads(loud[1])["results"]) == 60
    assert cli(*base, "--format", "json", "--quiet") == (1, "", "")
    assert cli(*base, "--format", "jsonl", "--quiet") == (1, "", "")
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert cli(*base, "--format", "github", "--quiet") == (1, "", "")
    assert "te-fused" in summary.read_text()  # a file the run was asked to write is still written


def test_summary_is_one_line_per_backend_then_the_gate(cli):
    code, out, _ = cli("explain", *CRASH, "--summary")
    lines = out.splitlines()
    full = cli("explain", *CRASH, "--format", "json")[1]
    backends = [v["backend"] for v in json.loads(full)["results"][0]["verdicts"]]
    assert code == 1 and len(lines) == len(backends) + 1
    assert [line.split()[0] for line in lines[:-1]] == backends
    te_fused = next(line for line in lines if line.startswith("te-fused "))
    assert "✗ refused" in te_fused and "TE-FUSED-HD256-BWD-HOPPER-RUNTIME" in te_fused
    assert "fix: upgrade cuDNN to 9.5.0 or later" in te_fused
    assert next(line for line in lines if line.startswith("sdpa-efficient ")).split()[1:] == ["✓", "runs"]
    assert lines[-1].startswith("gate failed: ") and "te-fused" in lines[-1]
    code, out, _ = cli("explain", *FIXED, "--summary", "--backend", "te-fused", "--backend", "sdpa-cudnn")
    assert code == 0 and out.splitlines()[-1] == "gate passed"
    assert [line.split()[0] for line in out.splitlines()[:-1]] == ["te-fused", "sdpa-cudnn"]


def test_summary_counts_verdicts_over_several_configs(cli, tmp_path: Path):
    configs = tmp_path / "two.jsonl"
    configs.write_text(json.dumps({"name": "mla", "hdim": 192, "hdim_v": 128, "heads": 16, "seqlen": 4096,
                                   "dtype": "bf16", "train": True}) + "\n" +
                       json.dumps({"name": "llama", "hdim": 128, "heads": 32, "seqlen": 4096, "dtype": "bf16",
                                   "train": True}) + "\n")
    code, out, _ = cli("explain", "--config-file", str(configs), "--gpu", "H100", "--torch", "2.11.0", "--cudnn",
                       "9.1.0", "--summary", "--backend", "sdpa-flash", "--backend", "sdpa-math")
    flash, math, gate = out.splitlines()
    assert "✗ refused 1/2" in flash and "✓ runs 1/2" in flash and "SDPA-FLASH-HEAD-DIM" in flash
    assert math.split()[1:] == ["✓", "runs", "2/2"]


def test_check_takes_them_too(cli, monkeypatch):
    fake_probe(monkeypatch, gpu="H100", cudnn="9.5.0")
    code, out, _ = cli("check", "--hdim", "128", "--heads", "8", "--seqlen", "1024", "--dtype", "bf16", "--summary")
    assert code == 0 and out.splitlines()[-1] == "gate passed" and out.startswith("sdpa-flash ")
    assert cli("check", "--hdim", "128", "--quiet") == (code, "", "")


@pytest.mark.parametrize(("extra", "message"), [
    (["--quiet", "--summary"], "--quiet and --summary contradict each other"),
    (["--summary", "--format", "json"], "--summary is a text layout"),
])
def test_layouts_that_contradict_are_usage_errors(cli, extra, message):
    code, out, err = cli("explain", *CRASH, *extra)
    assert code == 2 and out == "" and message in err
