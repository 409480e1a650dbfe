"""Every output format carries the same gate and the same exit code: text, json, junit, sarif, github."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest


FAILING = ["explain", "--hdim", "192", "--hdim-v", "128", "--seqlen", "4096", "--heads", "16", "--dtype", "bf16",
           "--train", "--causal", "--gpu", "H100", "--te", "2.5", "--cudnn", "9.1.0", "--flash-attn", "2.7.3",
           "--require", "te-fused"]
PASSING = [a if a != "9.1.0" else "9.5.0" for a in FAILING]
WRONG = ["explain", "--heads", "16", "--kv-heads", "1", "--hdim", "64", "--seqlen", "2048", "--dtype", "fp16",
         "--qkv-fused", "--layout", "sbhd", "--gpu", "H100", "--cudnn", "9.2.1", "--te", "1.11",
         "--flash-attn", "2.6.3", "--infer"]


@pytest.fixture(autouse=True)
def job_summary(monkeypatch, tmp_path):
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))


@pytest.mark.parametrize("fmt", ["text", "json", "junit", "sarif", "github"])
def test_exit_code_is_the_same_in_every_format(cli, fmt):
    assert cli(*FAILING, "--format", fmt)[0] == 1
    assert cli(*PASSING, "--format", fmt)[0] == 0
    assert cli(*WRONG, "--format", fmt)[0] == 1


def test_junit_has_a_testcase_per_check_with_reasons_and_fixes(cli):
    code, out, _ = cli(*FAILING, "--format", "junit")
    root = ET.fromstring(out)
    cases = root.findall(".//testcase")
    assert {c.get("name") for c in cases} >= {"require te-fused", "no wrong results"}
    failure = next(c for c in cases if c.get("name") == "require te-fused").find("failure")
    assert failure is not None and "TE-FUSED-HD256-BWD-HOPPER" in failure.get("message")
    assert "fix: upgrade cuDNN to 9.5.0" in failure.text
    assert root.get("failures") == "1"


def test_sarif_is_2_1_0_with_rules_help_and_results(cli):
    code, out, _ = cli(*FAILING, "--format", "sarif")
    doc = json.loads(out)
    assert doc["version"] == "2.1.0" and doc["$schema"].endswith("sarif-2.1.0.json")
    run = doc["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert "TE-FUSED-HD256-BWD-HOPPER" in rules and "Fix:" in rules["TE-FUSED-HD256-BWD-HOPPER"]["help"]["text"]
    levels = {(r["ruleId"], r["level"]) for r in run["results"]}
    assert ("TE-FUSED-HD256-BWD-HOPPER", "error") in levels and ("AD-GATE", "error") in levels
    assert run["invocations"][0]["exitCode"] == 1
    code, out, _ = cli(*WRONG, "--format", "sarif")
    assert any(r["level"] == "error" and r["properties"]["status"] == "wrong-results"
               for r in json.loads(out)["runs"][0]["results"])


def test_github_annotations_and_job_summary(cli, tmp_path):
    code, out, _ = cli(*FAILING, "--format", "github")
    assert out.startswith("::error title=") and "upgrade cuDNN to 9.5.0" in out
    summary = (tmp_path / "summary.md").read_text()
    assert "gate failed" in summary and "| te-fused |" not in summary.splitlines()[0]
    assert "te-fused" in summary


def test_json_gate_block(cli):
    code, out, _ = cli(*FAILING, "--format", "json")
    gate = json.loads(out)["gate"]
    assert gate["passed"] is False and gate["reasons"]
    assert [c["check"] for c in gate["checks"] if not c["passed"]] == ["require te-fused"]


@pytest.mark.parametrize("fail_on", [None, "info", "slow", "unsupported", "api-mismatch", "wrong-results"])
def test_a_selected_backend_that_fails_at_run_time_fails_at_every_level(cli, fail_on):
    # TE 2.3 selects te-fused for MLA training, which has an 'unsupported' finding (fails at run time).
    args = [a if a != "2.5" else "2.3" for a in FAILING if a not in ("--require", "te-fused")]
    assert cli(*args, *(["--fail-on", fail_on] if fail_on else []))[0] == 1


@pytest.mark.parametrize("beta, fail_on, code", [
    ("4.0.0b31", None, 0), ("4.0.0b31", "info", 1), ("4.0.0b31", "slow", 0), ("4.0.0b31", "wrong-results", 0),
    ("4.0.0b27", "slow", 1), ("4.0.0b27", "wrong-results", 0)])
def test_fail_on_threshold_semantics(cli, beta, fail_on, code):
    # flash-attn-4 4.0.0b31 on a B200 runs the required backend with an 'info' finding (FA4-BETA-VERSIONS); 4.0.0b27
    # also carries a 'slow' advisory there (ADV-FA4-SM100-FWD-HD128-SOFTMAX-SPILL-CUTLASS-DSL-452, fixed in b31).
    args = ["explain", "--hdim", "128", "--seqlen", "2048", "--heads", "16", "--dtype", "bf16", "--infer",
            "--gpu", "B200", "--flash-attn-4", beta, "--torch", "2.11.0", "--cudnn", "9.19.0",
            "--require", "flash-attn-4"]
    assert cli(*args, *(["--fail-on", fail_on] if fail_on else []))[0] == code
