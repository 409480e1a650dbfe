"""`attndoctor fleet` across real processes: two ranks meet through torch.distributed (env:// on a free localhost
port, a gloo group, no GPU), each evaluates as an H100 node with TransformerEngine (ATTNDOCTOR_FLEET_ENV_FILE), and
rank 0 reports. Skipped where torch (with torch.distributed) cannot be imported."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.distributed.is_available(), reason="torch without torch.distributed")

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).parent / "fixtures" / "fleet" / "h100_te.json"
TE_ARGS = ["--hdim", "128", "--heads", "32", "--seqlen", "8192", "--dtype", "bf16", "--train", "--causal"]
LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in LAUNCH_VARS and not k.startswith(("SLURM_", "TORCHELASTIC_", "NVTE_", "CUDNN_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["PYTHONWARNINGS"] = "ignore"
    env.update(extra)
    return env


def start_ranks(args: list[str], rank_env: list[dict[str, str]], *, world: int | None = None,
                instead: dict[int, str] | None = None) -> list:
    """One process per entry of rank_env; `instead` maps a rank to Python source it runs instead of fleet."""
    world = world or len(rank_env)
    port = str(free_port())
    procs = []
    for rank, extra in enumerate(rank_env):
        env = clean_env(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                        MASTER_PORT=port, **extra)
        command = ["-c", instead[rank]] if instead and rank in instead else ["-m", "attndoctor", "fleet", *args]
        procs.append(subprocess.Popen([sys.executable, *command], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    return procs


def finish(procs: list, timeout: float = 120) -> list[tuple[int, str, str]]:
    out = []
    try:
        for p in procs:
            stdout, stderr = p.communicate(timeout=timeout)
            out.append((p.returncode, stdout, stderr))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    return out


def run_ranks(args: list[str], rank_env: list[dict[str, str]]) -> list[tuple[int, str, str]]:
    return finish(start_ranks(args, rank_env))


def as_h100(**variables: str) -> dict[str, str]:
    return {"ATTNDOCTOR_FLEET_ENV_FILE": str(FIXTURE), **variables}


def test_identical_ranks_pass_on_every_rank():
    results = run_ranks([*TE_ARGS, "--cp", "2", "--format", "json"], [as_h100(), as_h100()])
    assert [code for code, _, _ in results] == [0, 0], results
    assert results[1][1] == ""  # only rank 0 reports
    doc = json.loads(results[0][1])
    assert [r["rank"] for r in doc["ranks"]] == [0, 1] and all(r["answered"] for r in doc["ranks"])
    assert [g["ranks"] for g in doc["groups"]] == [[0, 1]] and doc["differences"] == []
    assert doc["mismatches"]["selected"] == [] and doc["context_parallel"][0]["fits"] is True
    assert doc["world"]["launcher"] == "env" and doc["world"]["size"] == 2 and "gloo" in doc["world"]["transport"]


def test_nvte_fused_attn_on_one_rank_is_a_mismatch_and_exit_1_on_every_rank():
    results = run_ranks([*TE_ARGS, "--format", "json"], [as_h100(), as_h100(NVTE_FUSED_ATTN="0")])
    assert [code for code, _, _ in results] == [1, 1], results
    doc = json.loads(results[0][1])
    assert [g["ranks"] for g in doc["groups"]] == [[0], [1]]
    assert doc["differences"] == [{"field": "env.NVTE_FUSED_ATTN", "label": "NVTE_FUSED_ATTN",
                                   "values": {"A": None, "B": "0"}}]
    (mismatch,) = doc["mismatches"]["selected"]
    assert mismatch["framework"] == "transformer-engine"
    assert [(v["backend"], v["ranks"]) for v in mismatch["values"]] == [("te-fused", [0]), ("te-flash", [1])]
    assert doc["gate"]["exit_code"] == 1


def test_text_report_names_the_variable_and_the_backends():
    results = run_ranks(TE_ARGS, [as_h100(), as_h100(NVTE_FUSED_ATTN="0")])
    code, text, _ = results[0]
    assert code == 1 and "NVTE_FUSED_ATTN" in text and "te-flash on ranks 1 (B)" in text and "FAIL (exit 1)" in text


def test_context_parallel_config_that_does_not_fit_the_world_fails_on_every_rank():
    results = run_ranks([*TE_ARGS, "--cp", "4", "--format", "json"], [as_h100(), as_h100()])
    assert [code for code, _, _ in results] == [1, 1], results
    fit = json.loads(results[0][1])["context_parallel"][0]
    assert fit["fits"] is False and fit["problems"] == ["cp=4 does not divide the world size 2"]


STUCK_RANK = """
import os, time
from attndoctor.fleet.ranks import launch_from_env
from attndoctor.fleet.dist import gather_answers
gather_answers(launch_from_env(os.environ), lambda: time.sleep(600), None, rank_timeout=60, code_timeout=600)
"""


def test_a_rank_that_does_not_answer_is_reported_not_waited_for():
    # rank 1 meets the others and joins the gloo group through fleet's own code, then hangs where it would probe
    procs = start_ranks([*TE_ARGS, "--rank-timeout", "4", "--format", "json"], [as_h100(), as_h100()],
                        instead={1: STUCK_RANK})
    try:
        code, stdout, stderr = finish(procs[:1], timeout=90)[0]
    finally:
        procs[1].kill()
        procs[1].communicate()
    assert code == 1, stderr
    doc = json.loads(stdout)
    assert doc["world"]["missing"] == [1] and doc["ranks"][1] == {"rank": 1, "answered": False}
    assert doc["ranks"][0]["answered"] and doc["world"]["answered"] == 1
    assert any("did not answer in time: 1" in r for r in doc["gate"]["reasons"])


def test_a_rank_with_a_bad_env_file_is_reported_by_rank_0_and_exit_2_everywhere(tmp_path):
    results = run_ranks([*TE_ARGS, "--format", "json"],
                        [as_h100(), {"ATTNDOCTOR_FLEET_ENV_FILE": str(tmp_path / "missing.json")}])
    assert [code for code, _, _ in results] == [2, 2], results
    doc = json.loads(results[0][1])
    assert "no such env file" in doc["ranks"][1]["error"] and doc["gate"]["exit_code"] == 2


def test_ranks_that_never_meet_fail_in_bounded_time_with_one_line():
    procs = start_ranks([*TE_ARGS, "--rank-timeout", "2"], [as_h100()], world=2)
    ((code, stdout, stderr),) = finish(procs, timeout=60)
    assert code == 1 and stdout == ""
    lines = [line for line in stderr.splitlines() if line.startswith("attndoctor")]
    assert len(lines) == 1 and "did not meet" in lines[0], stderr


def torchrun_path() -> str | None:
    beside = Path(sys.executable).parent / "torchrun"
    return str(beside) if beside.exists() else shutil.which("torchrun")


@pytest.mark.skipif(torchrun_path() is None, reason="torchrun not installed")
def test_torchrun_two_processes_on_cpu_lists_two_ranks():
    env = clean_env(PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    proc = subprocess.run([torchrun_path(), "--nproc-per-node", "2", "--master-port", str(free_port()),
                           "--no-python", "attndoctor", "fleet", "--format", "json"],
                          env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    assert [r["rank"] for r in doc["ranks"]] == [0, 1] and all(r["answered"] for r in doc["ranks"])
    assert doc["world"]["launcher"] == "torchrun" and len(doc["groups"]) == 1


@pytest.mark.skipif(torchrun_path() is None, reason="torchrun not installed")
def test_torchrun_mismatch_exits_1_with_the_whole_report():
    # NVTE_FUSED_ATTN=0 on rank 1 only, through the wrapper that benchmarks/fleet_gpu.sh uses on the GPUs
    env = clean_env(PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
                    PYTHON=sys.executable, ATTNDOCTOR_FLEET_ENV_FILE=str(FIXTURE))
    proc = subprocess.run([torchrun_path(), "--nproc-per-node", "2", "--master-port", str(free_port()),
                           "--no-python", str(ROOT / "benchmarks" / "fleet_rank_env.sh"), "1", "NVTE_FUSED_ATTN=0",
                           "fleet", *TE_ARGS, "--format", "json"],
                          env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 1, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    assert doc["gate"]["exit_code"] == 1 and len(doc["mismatches"]["selected"]) == 1
