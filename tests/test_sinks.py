"""The attention-sinks fact: config field, flag, condition variable, schema, runners, and the backends it decides."""


import pytest

from attndoctor.config import make_config
from attndoctor.engine import expr
from attndoctor_kernels.spec import NotBuilt, case_spec

GPT_OSS = ["--hdim", "64", "--heads", "64", "--kv-heads", "8", "--seqlen", "4096", "--dtype", "bf16", "--train",
           "--causal", "--sinks"]


def _statuses(doc: dict) -> dict[str, str]:
    return {v["backend"]: v["status"] for v in doc["results"][0]["verdicts"]}


def _rules(doc: dict, backend: str) -> set[str]:
    verdict = next(v for v in doc["results"][0]["verdicts"] if v["backend"] == backend)
    return {f["rule"] for f in verdict["findings"]}


def test_flag_and_config_key_set_sinks_and_the_json_carries_it(explain):
    doc = explain("--gpu", "H100", *GPT_OSS, exit=0)
    assert doc["results"][0]["config"]["sinks"] is True
    assert "sinks" in doc["results"][0]["label"]
    assert make_config({"sinks": True}).sinks is True
    assert make_config({}).sinks is False


def test_sinks_is_a_condition_variable_of_the_config():
    assert "sinks" in expr.CONFIG_VARIABLES and expr.VARIABLES["sinks"][0] == expr.BOOL


def test_runners_refuse_to_build_sinks():
    with pytest.raises(NotBuilt, match="sink"):
        case_spec(make_config({"batch": 1, "heads": 8, "seqlen": 128, "hdim": 64, "dtype": "bf16",
                               "sinks": True}).to_dict())


def test_sdpa_and_flash_attn_2_refuse_sinks_and_cudnn_runs_them_from_913(explain):
    env = ["--gpu", "H100", "--torch", "2.11.0", "--flash-attn", "2.8.3.post1", "--cudnn-frontend", "1.23.0"]
    old = _statuses(explain(*env, "--cudnn", "9.12.0", *GPT_OSS, exit=0))
    new = _statuses(explain(*env, "--cudnn", "9.19.0", *GPT_OSS, exit=0))
    assert {old[b] for b in ("sdpa-flash", "sdpa-efficient", "sdpa-cudnn", "sdpa-math", "flash-attn-2")} == \
        {"unsupported"}
    assert old["cudnn-fe"] == "unsupported" and new["cudnn-fe"] == "supported"


def test_without_sinks_the_sink_rules_stay_silent(explain):
    doc = explain("--gpu", "H100", "--torch", "2.11.0", "--flash-attn", "2.8.3.post1", *GPT_OSS[:-1], exit=0)
    for backend in ("sdpa-math", "flash-attn-2"):
        assert not any("SINKS" in rule for rule in _rules(doc, backend))


def test_flash_attn_4_sinks_by_arch(explain):
    geforce = explain("--gpu", "RTX5090", "--flash-attn-4", "4.0.0b27", *GPT_OSS, exit=0)
    hopper = explain("--gpu", "H100", "--flash-attn-4", "4.0.0b27", *GPT_OSS, exit=0)
    assert "FA4-SINKS-SM8X-SM12X" in _rules(geforce, "flash-attn-4")
    assert "FA4-SINKS-SM8X-SM12X" not in _rules(hopper, "flash-attn-4")


def test_cudnn_fe_fp8_forward_takes_a_sink_from_python_at_frontend_121(explain):
    """python/pygraph/sdpa.cpp: v1.20.0's sdpa_fp8 passes no sink_token, v1.21.0's takes one."""
    args = ["--gpu", "H100", "--cudnn", "9.26.0", "--flash-attn", "2.8.3.post2", "--flash-attn-4", "4.0.0b27",
            "--hdim", "128", "--heads", "16", "--seqlen", "4096", "--infer", "--sinks"]
    assert "CUDNN-FE-SINKS-FP8-FWD" in _rules(explain(*args, "--cudnn-frontend", "1.20.0", "--dtype", "fp8"), "cudnn-fe")
    assert "CUDNN-FE-SINKS-FP8-FWD" not in _rules(explain(*args, "--cudnn-frontend", "1.21.0", "--dtype", "fp8"),
                                                   "cudnn-fe")
    assert "CUDNN-FE-SINKS-FP8-FWD" not in _rules(explain(*args, "--cudnn-frontend", "1.20.0", "--dtype", "bf16"),
                                                   "cudnn-fe")
