"""Every bad input and unusable output path ends the same way: exit 2 and one line naming what is wrong and what is
accepted, never a traceback; a terminal that cannot show UTF-8 gets the same answer in ASCII."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CASE = ["explain", "--hdim", "128", "--heads", "16", "--seqlen", "2048", "--dtype", "bf16", "--train",
        "--gpu", "H100", "--cudnn", "9.19.0", "--torch", "2.11.0"]


def one_line_error(code: int, out: str, err: str, *words: str) -> None:
    assert code == 2, (code, err)
    assert err.startswith("attndoctor: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for word in words:
        assert word in err, err


def run(*args: str, env: dict[str, str] | None = None, stdout: object = subprocess.PIPE) -> subprocess.CompletedProcess:
    """The real command line in a fresh process, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "attndoctor", *args], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, env={**os.environ, **(env or {})}, timeout=120)


# ---------------------------------------------------------------- unusable output paths


def test_output_into_a_missing_folder(cli, tmp_path):
    one_line_error(*cli(*CASE, "--output", str(tmp_path / "nope" / "report.json")), "--output", "nope")


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs procfs")
def test_output_into_a_folder_that_takes_no_files_is_not_called_missing(cli):
    code, out, err = cli(*CASE, "--output", "/proc/attndoctor-report.json")
    one_line_error(code, out, err, "--output")
    assert "no such folder" not in err and "/proc" in err


def test_output_onto_a_folder(cli, tmp_path):
    one_line_error(*cli(*CASE, "--output", str(tmp_path)), "--output", "folder")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_output_onto_a_full_disk(cli):
    one_line_error(*cli(*CASE, "--output", "/dev/full", "--format", "json"), "--output", "no space")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_stdout_onto_a_full_disk():
    with open("/dev/full", "w") as full:
        proc = run(*CASE, stdout=full)
    one_line_error(proc.returncode, "", proc.stderr, "standard output", "no space")


def test_unwritable_github_step_summary(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "missing" / "summary.md"))
    one_line_error(*cli(*CASE, "--format", "github"), "GITHUB_STEP_SUMMARY")


def test_the_report_is_not_left_half_written_when_the_gate_fails(cli, tmp_path):
    target = tmp_path / "report.json"
    code, _, _ = cli(*CASE, "--require", "sdpa-efficient", "--kv-heads", "4", "--output", str(target),
                     "--format", "json")
    assert code == 1 and json.loads(target.read_text())["gate"]["passed"] is False


# ---------------------------------------------------------------- files that are not what they should be


@pytest.mark.parametrize("option", ["--config-file", "--env-file"])
def test_deeply_nested_json(cli, tmp_path, option):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    one_line_error(*cli(*CASE, option, str(path)), str(path), "nested")


def test_a_string_where_a_number_belongs_in_a_config_file(cli, tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"hdim": "128", "heads": 16}))
    one_line_error(*cli("explain", "--config-file", str(path)), "hdim", "whole number", "text")
    path.write_text(json.dumps({"hdim": 128, "seqlen": 4096, "seqlen_q": 1024}))
    one_line_error(*cli("explain", "--config-file", str(path)), "seqlen", "contradicts")
    toml = tmp_path / "c.toml"
    toml.write_text('[[config]]\nhdim = 128\ndropout = "0.1"\n')
    one_line_error(*cli("explain", "--config-file", str(toml)), "dropout", "number")


def env_file(tmp_path: Path, **environment: object) -> str:
    path = tmp_path / "env.json"
    path.write_text(json.dumps({"schema_version": 1, "environment": {"versions": {"torch": "2.11.0"},
                                                                    **environment}}))
    return str(path)


def test_env_file_with_an_unknown_gpu(cli, tmp_path):
    one_line_error(*cli(*CASE[:-6], "--env-file", env_file(tmp_path, gpu="H1000")), "gpu", "H1000", "sm")


def test_env_file_with_a_gpu_we_do_not_know_but_its_sm(cli, tmp_path):
    code, out, err = cli(*CASE[:-6], "--env-file", env_file(tmp_path, gpu="NVIDIA Future GPU", sm=90),
                         "--format", "json")
    assert code == 0 and json.loads(out)["environment"]["sm"] == 90


def test_env_file_with_an_unknown_schema_version(cli, tmp_path):
    path = tmp_path / "env.json"
    path.write_text(json.dumps({"schema_version": 7, "environment": {"gpu": "H100"}}))
    one_line_error(*cli(*CASE[:-6], "--env-file", str(path)), "schema_version", "7", "1")


# ---------------------------------------------------------------- flags that contradict or make no sense


@pytest.mark.parametrize("args, words", [
    (["--train", "--infer"], ["--train", "--infer"]),
    (["--infer", "--train"], ["--train", "--infer"]),
    (["--causal", "--mask", "none"], ["--causal", "--mask none"]),
    (["--causal", "--mask", "padding"], ["--causal", "--mask padding"]),
    (["--seqlen", "4096", "--seqlen-q", "2048"], ["--seqlen", "--seqlen-q"]),
    (["--seqlen", "4096", "--seqlen-kv", "2048"], ["--seqlen", "--seqlen-kv"]),
    (["--softcap", "inf"], ["softcap", "finite"]),
    (["--softcap", "nan"], ["softcap"]),
    (["--dropout", "inf"], ["dropout"]),
    (["--require-any", ""], ["--require-any", "empty"]),
    (["--require-any", " , "], ["--require-any", "empty"]),
])
def test_contradictory_or_senseless_flags(cli, args, words):
    base = [a for a in CASE if a not in ("--train",)]
    one_line_error(*cli(*base, *args), *words)


def test_causal_flag_over_a_config_file_mask_is_not_a_contradiction(cli, tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"hdim": 128, "heads": 16, "seqlen": 1024, "mask": "none"}))
    code, out, err = cli("explain", "--config-file", str(path), "--causal", "--gpu", "H100", "--format", "json")
    assert err == "" and json.loads(out)["results"][0]["config"]["mask"] == "causal"


@pytest.mark.parametrize("command", ["check", "verify", "bench"])
@pytest.mark.parametrize("value", ["-1", "0", "nan"])
def test_timeout_must_be_positive(cli, command, value):
    one_line_error(*cli(command, "--timeout", value), "--timeout")


# ---------------------------------------------------------------- terminals


def test_ascii_terminal_gets_the_same_answer_in_ascii():
    proc = run(*CASE, env={"PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "sdpa-cudnn" in proc.stdout and "runs" in proc.stdout
    utf8 = run(*CASE, env={"PYTHONIOENCODING": "utf-8"})
    assert len(proc.stdout.splitlines()) == len(utf8.stdout.splitlines())


def test_ascii_terminal_error_line(tmp_path):
    proc = run(*CASE, "--output", str(tmp_path / "no" / "such" / "dir" / "r.txt"),
               env={"PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_broken_pipe_is_quiet():
    proc = subprocess.Popen([sys.executable, "-m", "attndoctor", "rules", "list"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in err and "Exception" not in err
    assert proc.returncode == 141 and err == ""
