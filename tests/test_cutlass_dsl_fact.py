"""The nvidia-cutlass-dsl runtime is a version fact: the flag, env files, the probe, `why`'s package lists and the
verdicts of the advisories that hinge on it, which depend on --cutlass-dsl while it is not given."""

from __future__ import annotations

import importlib.metadata as metadata
import json
from pathlib import Path

import pytest

from attndoctor.cli.options import ENV_OPTIONS
from attndoctor.engine.facts import env_facts
from attndoctor.environment import ABSENT, PACKAGES, environment_from_flags, load_env_file
from attndoctor.errors import UsageError
from attndoctor.probe import packages
from attndoctor.why.facts import read_facts

B300_BWD = ("--gpu", "B300", "--flash-attn-4", "4.0.0b26", "--hdim", "64", "--heads", "4", "--seqlen", "256",
            "--batch", "2", "--dtype", "bf16", "--train", "--backend", "flash-attn-4")
HANG = "ADV-FA4-SM103-BWD-HANG-CUTLASS-DSL-460"


def verdict(cli, *args):
    code, out, err = cli("explain", *args, "--format", "json")
    assert code in (0, 1), err
    return next(v for v in json.loads(out)["results"][0]["verdicts"] if v["backend"] == "flash-attn-4")


def test_a_version_fact_with_a_flag():
    assert "cutlass_dsl" in PACKAGES
    assert ("cutlass_dsl", "--cutlass-dsl") in [(name, flag) for name, flag, _ in ENV_OPTIONS]


def test_a_dev_build_keeps_its_tag_and_tells_itself_from_the_release():
    dev = env_facts(environment_from_flags({"cutlass_dsl": "4.6.0.dev0"}))
    release = env_facts(environment_from_flags({"cutlass_dsl": "4.6.0"}))
    assert str(dev["cutlass_dsl"]) == str(release["cutlass_dsl"]) == "4.6.0"
    assert dev["cutlass_dsl_dev"] is True and release["cutlass_dsl_dev"] is False
    assert env_facts(environment_from_flags({"cutlass_dsl": "none"}))["cutlass_dsl"] == ABSENT
    with pytest.raises(UsageError, match="--cutlass-dsl"):
        environment_from_flags({"cutlass_dsl": "four"})


def test_an_env_file_gives_it(tmp_path: Path):
    path = tmp_path / "env.json"
    path.write_text(json.dumps({"environment": {"gpu": "B300", "sm": 103, "versions": {
        "flash_attn_4": "4.0.0b26", "cutlass_dsl": "4.6.1"}}}))
    env = load_env_file(path)
    assert env.versions["cutlass_dsl"] == "4.6.1"


def test_the_probe_reads_the_distribution_and_never_raises(monkeypatch):
    seen = []

    def version(name):
        seen.append(name)
        if name == "nvidia-cutlass-dsl":
            return "4.6.2"
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", version)
    assert packages.package_versions().versions["cutlass_dsl"] == "4.6.2"
    assert "nvidia-cutlass-dsl" in seen

    def broken(name):
        raise ValueError("malformed METADATA")

    monkeypatch.setattr(metadata, "version", broken)
    assert packages.package_versions().versions["cutlass_dsl"] == ABSENT


def test_why_reads_it_from_pip_freeze_and_pip_list():
    freeze = {f.field: f.value for f in read_facts(["flash-attn-4==4.0.0b26", "nvidia-cutlass-dsl==4.6.0"])}
    assert freeze["cutlass_dsl"] == "4.6.0" and freeze["flash_attn_4"] == "4.0.0b26"
    columns = ["Package            Version", "------------------ ----------", "nvidia-cutlass-dsl 4.6.0.dev0"]
    assert {f.field: f.value for f in read_facts(columns)}["cutlass_dsl"] == "4.6.0.dev0"


def test_the_hang_depends_on_cutlass_dsl_until_it_is_given(cli, capsys):
    open_ = verdict(cli, *B300_BWD)
    assert open_["status"] == "depends"
    finding = next(f for f in open_["findings"] if f["rule"] == HANG)
    assert finding["applies"] is None and "cutlass_dsl" in finding["missing"]
    code, out, _ = cli("explain", *B300_BWD)
    assert "give --cutlass-dsl" in out
    assert verdict(cli, *B300_BWD, "--cutlass-dsl", "4.6.1")["status"] == "unsupported"
    for runs in ("4.6.0.dev0", "4.6.2"):
        found = verdict(cli, *B300_BWD, "--cutlass-dsl", runs)
        assert found["status"] == "supported" and HANG not in {f["rule"] for f in found["findings"] if f["applies"]}


def test_a_beta_whose_floor_rules_it_out_needs_no_cutlass_dsl(cli):
    # 4.0.0b27 requires nvidia-cutlass-dsl >= 4.6.2: the hang's window is closed without the runtime's version
    found = verdict(cli, *[a if a != "4.0.0b26" else "4.0.0b27" for a in B300_BWD])
    assert HANG not in {f["rule"] for f in found["findings"]}
    assert found["status"] == "supported"


def test_an_early_beta_depends_on_the_runtime_its_floor_lets_pip_resolve(cli):
    # 4.0.0b5 requires >= 4.4.2, so pip may install 4.6.x, whose nvvm.fmax the beta calls the old way
    args = ("--gpu", "A100 80GB", "--flash-attn-4", "4.0.0b5", "--hdim", "128", "--heads", "16", "--seqlen", "2048",
            "--dtype", "bf16", "--infer", "--backend", "flash-attn-4")
    open_ = verdict(cli, *args)
    assert open_["status"] == "depends" and "ADV-FA4-FMAX-TYPEERROR-CUTLASS-DSL-460" in {
        f["rule"] for f in open_["findings"] if f["applies"] is None}
    assert verdict(cli, *args, "--cutlass-dsl", "4.6.0")["status"] == "unsupported"
    assert verdict(cli, *args, "--cutlass-dsl", "4.4.2")["status"] == "supported"
