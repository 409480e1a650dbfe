"""The default gate: a framework present in the environment that selects a backend which fails at run time (or
gives wrong results) fails the gate, without any --fail-on."""

from __future__ import annotations

import json

import pytest

README_CASE = ["explain", "--hdim", "192", "--hdim-v", "128", "--heads", "128", "--seqlen", "4096", "--dtype", "bf16",
               "--train", "--causal", "--gpu", "H100", "--torch", "2.11.0", "--cuda", "13.0", "--te", "2.3",
               "--flash-attn", "2.7.3"]


@pytest.mark.parametrize("flags", [[], ["--fail-on", "api-mismatch"], ["--fail-on", "wrong-results"]])
def test_readme_case_fails_the_gate_on_the_predicted_crash(cli, flags):
    code, out, err = cli(*README_CASE, "--cudnn", "9.1.0", *flags, "--format", "json")
    assert code == 1, err
    failed = [c for c in json.loads(out)["gate"]["checks"] if not c["passed"]]
    crash = [c for c in failed if c["check"] == "transformer-engine selection runs"]
    assert crash and crash[0]["backend"] == "te-fused"
    reason = crash[0]["reasons"][0]
    assert "TransformerEngine selects te-fused" in reason and "TE-FUSED-HD256-BWD-HOPPER-RUNTIME" in reason
    assert any("cuDNN" in f and "9.5" in f for f in crash[0]["fixes"])


def test_readme_case_with_cudnn_95_passes(cli):
    code, out, err = cli(*README_CASE, "--cudnn", "9.5.0", "--format", "json")
    assert code == 0, [c for c in json.loads(out)["gate"]["checks"] if not c["passed"]]


def test_text_report_says_why_the_gate_failed(cli):
    code, out, _ = cli(*README_CASE, "--cudnn", "9.1.0")
    assert code == 1
    assert "gate failed" in out.lower() and "TransformerEngine selects te-fused" in out
    assert "fix: upgrade cuDNN to 9.5.0" in out


def test_framework_not_given_does_not_fail_the_gate(cli):
    args = [a for a in README_CASE]
    i = args.index("--te")
    del args[i:i + 2]
    code, out, _ = cli(*args, "--cudnn", "9.1.0", "--format", "json")
    checks = json.loads(out)["gate"]["checks"]
    assert not [c for c in checks if c["check"] == "transformer-engine selection runs"]
    assert code == 0


def test_framework_known_absent_does_not_fail_the_gate(cli):
    args = [("none" if a == "2.3" else a) for a in README_CASE]
    code, out, _ = cli(*args, "--cudnn", "9.1.0", "--format", "json")
    assert code == 0
