"""`attndoctor fleet`, the pure part: launch variables, fingerprints, groups, mismatches, context-parallel fit, the
exit decision and the text report. No torch, no network."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from attndoctor.config import make_config
from attndoctor.environment import Environment, GpuInfo, environment_from_dict
from attndoctor.errors import UsageError
from attndoctor.fleet.ranks import (Launch, compact_ranks, compare_selections, cp_fit, decide, environment_for_rank,
                              fingerprint, first_host, fleet_document, group_ranks, launch_from_env)
from attndoctor.fleet.dist import rank_environment, rank_payload
from attndoctor.report.fleet_text import describe_fingerprint, render_fleet_text

FIXTURE = Path(__file__).parent / "fixtures" / "fleet" / "h100_te.json"
TE_CONFIG = {"hdim": 128, "heads": 32, "seqlen": 8192, "dtype": "bf16", "train": True, "mask": "causal"}


# ---------------------------------------------------------------- launch


def test_torchrun_variables():
    launch = launch_from_env({"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "3", "MASTER_ADDR": "node1",
                              "MASTER_PORT": "29500", "TORCHELASTIC_RUN_ID": "x"})
    assert launch == Launch("torchrun", 3, 8, 3, "node1", 29500) and launch.distributed


def test_slurm_variables_give_rank_world_and_master():
    launch = launch_from_env({"SLURM_PROCID": "5", "SLURM_NTASKS": "16", "SLURM_STEP_NUM_TASKS": "8",
                              "SLURM_LOCALID": "1", "SLURM_STEP_NODELIST": "gpu[003-004],login1",
                              "SLURM_JOB_ID": "123456"})
    assert (launch.launcher, launch.rank, launch.world_size, launch.local_rank) == ("slurm", 5, 8, 1)
    assert launch.master_addr == "gpu003" and launch.master_port == 20000 + 123456 % 20000
    explicit = launch_from_env({"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_JOB_NODELIST": "a,b",
                                "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "1234"})
    assert (explicit.master_addr, explicit.master_port) == ("10.0.0.1", 1234)


def test_torchrun_variables_win_over_slurm_and_nothing_is_a_world_of_one():
    both = launch_from_env({"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1",
                            "SLURM_PROCID": "1", "SLURM_NTASKS": "4"})
    assert both.launcher == "env" and both.world_size == 2
    single = launch_from_env({"PATH": "/bin"})
    assert single == Launch("single") and not single.distributed and single.world_size == 1


@pytest.mark.parametrize("environ, fragment", [
    ({"RANK": "2", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"}, "does not fit a world of 2"),
    ({"RANK": "0", "WORLD_SIZE": "2"}, "MASTER_ADDR"),
    ({"RANK": "x", "WORLD_SIZE": "2"}, "RANK='x'"),
    ({"RANK": "0"}, "WORLD_SIZE is not set"),
    ({"SLURM_PROCID": "0", "SLURM_NTASKS": "2"}, "MASTER_ADDR"),
])
def test_bad_launch_variables_are_usage_errors(environ, fragment):
    with pytest.raises(UsageError, match=fragment):
        launch_from_env(environ)


@pytest.mark.parametrize("nodelist, host", [
    ("node01", "node01"), ("gpu[003-007,9],login1", "gpu003"), ("a,b", "a"), ("rack[2-3]-n[07-08]", "rack2-n07"),
    ("x[5]", "x5"), ("", None),
])
def test_first_host_of_a_slurm_host_list(nodelist, host):
    assert first_host(nodelist) == host


def test_compact_ranks():
    assert compact_ranks([8, 0, 1, 2, 5, 7]) == "0-2,5,7-8" and compact_ranks([]) == ""


# ---------------------------------------------------------------- one rank


def h100_env(**env_vars: str) -> Environment:
    env = environment_from_dict(json.loads(FIXTURE.read_text()))
    env.env_vars = dict(env_vars)
    return env


def test_fingerprint_keeps_versions_and_steering_variables_only():
    env = h100_env(NVTE_FUSED_ATTN="0", CUDNN_LOGLEVEL_DBG="1", CUDA_VISIBLE_DEVICES="0",
                   PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True", TORCH_CUDNN_SDPA_ENABLED="1")
    fp = fingerprint(env)
    assert fp["gpu"] == "H100 SXM" and fp["sm"] == 90 and fp["cudnn"] == "9.7.0" and fp["te"] == "2.5.0"
    assert fp["flash_attn_3"] == "absent" and fp["cuda_available"] is True
    assert fp["env"] == {"CUDNN_LOGLEVEL_DBG": "1", "NVTE_FUSED_ATTN": "0", "TORCH_CUDNN_SDPA_ENABLED": "1"}
    assert fingerprint(Environment(no_gpu=True))["gpu"] == "none" and fingerprint(Environment())["gpu"] is None


def test_each_rank_is_checked_on_its_own_gpu_on_a_mixed_node():
    env = Environment(gpu="H100 SXM", sm=90, gpus=[GpuInfo(0, "NVIDIA H100 80GB HBM3", 90),
                                                     GpuInfo(1, "NVIDIA A100-SXM4-80GB", 80)])
    assert environment_for_rank(env, 0) is env
    other = environment_for_rank(env, 1)
    assert other.sm == 80 and other.gpu.startswith("A100") and env.sm == 90
    assert environment_for_rank(env, 5).sm == 90  # one GPU per task: the first visible one


def test_env_file_what_if_merges_the_rank_own_variables(tmp_path):
    env = rank_environment(1.0, {"ATTNDOCTOR_FLEET_ENV_FILE": str(FIXTURE), "NVTE_FUSED_ATTN": "0", "HOME": "/x"})
    assert env.gpu == "H100 SXM" and env.env_vars == {"NVTE_FUSED_ATTN": "0"}
    assert "ATTNDOCTOR_FLEET_ENV_FILE" in env.source


def test_rank_payload_reports_a_bad_env_file_instead_of_raising(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNDOCTOR_FLEET_ENV_FILE", str(tmp_path / "missing.json"))
    payload = rank_payload(Launch("single"), [make_config(TE_CONFIG)], probe_timeout=1.0)
    assert "no such env file" in payload["error"] and payload["results"] == []


def test_rank_payload_from_the_fixture(monkeypatch):
    monkeypatch.setenv("ATTNDOCTOR_FLEET_ENV_FILE", str(FIXTURE))
    monkeypatch.setenv("NVTE_FUSED_ATTN", "0")
    payload = rank_payload(Launch("env", 1, 2, 1, "h", 1), [make_config(TE_CONFIG)], probe_timeout=1.0)
    assert payload["error"] is None and payload["device"]["index"] == 1
    assert payload["results"][0]["selected"]["transformer-engine"]["backend"] == "te-flash"
    json.dumps(payload)  # travels as JSON


# ---------------------------------------------------------------- comparing ranks


def payload(rank: int, *, host: str = "n1", env: dict | None = None, te: str = "te-fused", cudnn: str = "9.7.0",
            label: str = "cfg", verdict: str = "supported") -> dict:
    fp = {"gpu": "H100 SXM", "sm": 90, "cudnn": cudnn, "te": "2.5.0", "env": env or {}}
    return {"rank": rank, "host": host, "fingerprint": fp, "environment": {"source": "probe"},
            "results": [{"label": label,
                         "selected": {"pytorch": {"backend": "sdpa-flash", "status": "selected"},
                                      "transformer-engine": {"backend": te, "status": "selected"}},
                         "verdicts": {"te-fused": verdict, "sdpa-flash": "supported"}}],
            "error": None}


def test_group_ranks_by_identical_fingerprint_and_name_what_differs():
    payloads = [payload(0), payload(1, env={"NVTE_FUSED_ATTN": "0"}, host="n2"), payload(2, cudnn="9.1.0"),
                payload(3)]
    groups, differences = group_ranks(payloads)
    assert [(g["id"], g["ranks"]) for g in groups] == [("A", [0, 3]), ("B", [1]), ("C", [2])]
    assert groups[1]["hosts"] == ["n2"]
    by_field = {d["field"]: d["values"] for d in differences}
    assert by_field == {"cudnn": {"A": "9.7.0", "B": "9.7.0", "C": "9.1.0"},
                        "env.NVTE_FUSED_ATTN": {"A": None, "B": "0", "C": None}}


def test_identical_ranks_make_one_group_and_no_differences():
    groups, differences = group_ranks([payload(1), payload(0)])
    assert [g["ranks"] for g in groups] == [[0, 1]] and differences == []


def test_compare_selections_finds_the_backend_that_differs():
    found = compare_selections([payload(0), payload(1, te="te-flash", verdict="unsupported"), payload(2)])
    assert found["configs"] == []
    (sel,) = found["selected"]
    assert sel["framework"] == "transformer-engine"
    assert [(v["backend"], v["ranks"]) for v in sel["values"]] == [("te-fused", [0, 2]), ("te-flash", [1])]
    (ver,) = found["verdicts"]
    assert ver["backend"] == "te-fused" and [v["ranks"] for v in ver["values"]] == [[0, 2], [1]]
    assert compare_selections([payload(0), payload(1)]) == {"selected": [], "verdicts": [], "configs": []}


def test_ranks_that_evaluated_different_configs_are_reported():
    found = compare_selections([payload(0), payload(1, label="other")])
    assert [m["ranks"] for m in found["configs"]] == [[0], [1]] and found["selected"] == []


# ---------------------------------------------------------------- context parallel


def cp_config(**values):
    return make_config({"hdim": 128, "heads": 32, "kv_heads": 8, "dtype": "bf16", "mask": "causal", **values})


def test_cp_fit():
    fits, = cp_fit([cp_config(seqlen=8192, cp=4)], 8)
    assert fits["fits"] is True and fits["other_parallel"] == 2 and fits["problems"] == []
    bad, = cp_fit([cp_config(seqlen=8190, cp=4)], 6)
    assert bad["fits"] is False
    assert bad["problems"] == ["cp=4 does not divide the world size 6",
                               "seqlen_q 8190 is not divisible by 2·cp = 8 (pad to 8192)"]
    a2a, = cp_fit([cp_config(seqlen=8192, cp=16, cp_comm="a2a")], 16)
    assert a2a["fits"] is False and "kv_heads 8 is not divisible by cp=16" in a2a["problems"][0]
    unknown, = cp_fit([make_config({"cp": 2})], 2)
    assert unknown["fits"] is None and unknown["unknown"] == ["seqlen_q"]
    assert cp_fit([cp_config(seqlen=8192)], 8) == []  # cp 1 is no context parallelism


# ---------------------------------------------------------------- decision and document


def test_decide():
    none = {"selected": [], "configs": []}
    assert decide(mismatches=none, cp=[], missing=[], errors={}) == (0, [])
    code, reasons = decide(mismatches=compare_selections([payload(0), payload(1, te="te-flash")]), cp=[],
                           missing=[], errors={})
    assert code == 1 and "transformer-engine selects different backends" in reasons[0]
    assert decide(mismatches=none, cp=[{"config": "c", "fits": None, "problems": []}], missing=[], errors={})[0] == 0
    assert decide(mismatches=none, cp=[{"config": "c", "fits": False, "problems": ["x"]}], missing=[],
                  errors={})[0] == 1
    assert decide(mismatches=none, cp=[], missing=[3], errors={})[0] == 1
    assert decide(mismatches=none, cp=[], missing=[], errors={1: "bad"})[0] == 2


def test_fleet_document_with_a_rank_that_did_not_answer():
    doc = fleet_document(launch={"launcher": "torchrun"}, payloads=[payload(0), None, payload(2)],
                         configs=[cp_config(seqlen=8192, cp=2)], rank_timeout=5.0)
    assert doc["world"]["missing"] == [1] and doc["world"]["answered"] == 2 and doc["world"]["size"] == 3
    assert doc["ranks"][1] == {"rank": 1, "answered": False}
    assert doc["context_parallel"][0]["fits"] is False  # cp 2 does not divide 3
    assert doc["gate"]["exit_code"] == 1 and any("did not answer" in r for r in doc["gate"]["reasons"])
    json.dumps(doc)


def test_text_report_shows_groups_differences_and_mismatch():
    doc = fleet_document(launch={"launcher": "torchrun"},
                         payloads=[payload(0), payload(1, env={"NVTE_FUSED_ATTN": "0"}, te="te-flash")], configs=[])
    out = io.StringIO()
    render_fleet_text(doc, out, detailed=True)
    text = out.getvalue()
    assert "NVTE_FUSED_ATTN" in text and "A: unset" in text and "B: 0" in text
    assert "te-fused on ranks 0 (A)" in text and "te-flash on ranks 1 (B)" in text and "FAIL (exit 1)" in text
    assert describe_fingerprint({}) == "environment unknown"


def test_fleet_without_torch_is_exit_2_with_one_line(monkeypatch, capsys):
    import attndoctor.fleet.dist as fleet_dist
    from attndoctor.cli import main

    monkeypatch.setattr(fleet_dist, "find_spec", lambda name: None)
    with pytest.raises(SystemExit) as info:
        main(["fleet", "--hdim", "128"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err == "attndoctor: error: fleet needs torch for torch.distributed\n"
