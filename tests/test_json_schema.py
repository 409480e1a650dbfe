"""The published JSON Schema of `--format json` (attndoctor/schema/report-v1.json) holds for real output."""

from __future__ import annotations

import copy
import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from attndoctor.environment import GpuInfo
from attndoctor.report.json_format import SCHEMA_VERSION

from conftest import fake_probe


ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures"
MLA_TE = ["--gpu", "H100", "--torch", "2.5.1", "--te", "2.3", "--cudnn", "9.1.0", "--flash-attn", "2.7.3"]


def schema() -> dict[str, Any]:
    return json.loads((resources.files("attndoctor") / "schema" / "report-v1.json").read_text(encoding="utf-8"))


def closed(node: Any) -> Any:
    """The schema with every described object closed: output fields the schema does not describe are errors."""
    if isinstance(node, dict):
        out = {k: closed(v) for k, v in node.items()}
        if "properties" in out and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [closed(v) for v in node]
    return node


def errors(doc: Any, against: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft202012Validator(against)
    return [f"{e.json_path}: {e.message[:200]}" for e in validator.iter_errors(doc)]


def check(doc: Any) -> None:
    assert not errors(doc, schema())
    assert not errors(doc, closed(schema())), "output has fields the schema does not describe"


@pytest.fixture
def several(tmp_path) -> Path:
    """Configs that give every verdict kind: MLA training (te-fused fails at run time), one with unknown dims."""
    path = tmp_path / "configs.jsonl"
    rows = [
        {"name": "mla", "hdim": 192, "hdim_v": 128, "heads": 16, "seqlen": 4096, "dtype": "bf16", "train": True,
         "mask": "causal"},
        {"name": "gqa-window", "hdim": 128, "heads": 32, "kv_heads": 8, "seqlen": 8192, "dtype": "bf16",
         "train": False, "mask": "causal", "window": [4096, 0], "softcap": 30.0},
        {"name": "unknown-dims", "mask": "padding", "dropout": 0.1},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_schema_is_a_valid_2020_12_schema_for_this_schema_version():
    jsonschema.Draft202012Validator.check_schema(schema())
    assert schema()["properties"]["schema_version"] == {"const": SCHEMA_VERSION}


def test_explain_with_several_configs_fixes_selections_and_a_failing_gate(cli, several):
    code, out, _ = cli("explain", "--config-file", str(several), *MLA_TE, "--require", "te-fused",
                       "--fail-on", "slow", "--format", "json")
    assert code == 1
    doc = json.loads(out)
    check(doc)
    verdicts = [v for r in doc["results"] for v in r["verdicts"]]
    findings = [f for v in verdicts for f in v["findings"]]
    assert {"supported", "unsupported", "depends"} <= {v["status"] for v in verdicts}
    assert any(v["fix"] for v in verdicts) and any(v["alternatives"] for v in verdicts)
    assert {True, None} <= {f["applies"] for f in findings}
    assert "fails" in {s["status"] for r in doc["results"] for s in r["selected"]}
    assert doc["gate"]["passed"] is False and any(not c["passed"] for c in doc["gate"]["checks"])


def test_explain_with_no_machine_has_depends_verdicts_and_where_they_run(cli):
    code, out, _ = cli("explain", "--hdim", "128", "--heads", "32", "--seqlen", "4096", "--dtype", "bf16", "--train",
                       "--causal", "--torch", "2.5", "--format", "json")
    doc = json.loads(out)
    check(doc)
    verdicts = doc["results"][0]["verdicts"]
    assert any(v["status"] == "depends" and v["missing"] and v["runs_where"] for v in verdicts)
    assert "depends" in {s["status"] for s in doc["results"][0]["selected"]}


def test_explain_of_a_model_carries_each_fields_origin(cli):
    code, out, _ = cli("explain", "--model", str(FIXTURES / "models" / "gemma-2-9b"), *MLA_TE, "--format", "json")
    doc = json.loads(out)
    check(doc)
    assert len(doc["results"]) == 2 and all(r["config"]["origin"] for r in doc["results"])


def test_explain_on_an_env_file_and_its_round_trip(cli, tmp_path):
    code, out, _ = cli("explain", "--hdim", "128", "--env-file", str(FIXTURES / "fleet" / "h100_te.json"),
                       "--format", "json")
    doc = json.loads(out)
    check(doc)
    assert doc["environment"]["source"] == "env-file:h100_te.json" and len(doc["environment"]["gpus"]) == 2
    again = tmp_path / "env.json"
    again.write_text(out)
    code, out, _ = cli("explain", "--hdim", "64", "--env-file", str(again), "--format", "json")
    check(json.loads(out))


def test_check_on_a_probed_machine(cli, monkeypatch):
    env = fake_probe(monkeypatch, gpu="H100", cudnn="9.5.0", te="2.5.0", flash_attn="2.7.3")
    env.gpus = [GpuInfo(index=0, name="NVIDIA H100 80GB HBM3", sm=90, memory_mib=81559, uuid="GPU-0")]
    env.import_errors = {"flash_attn_3": "ImportError: undefined symbol"}
    env.notes = [{"kind": "torch", "severity": "info", "message": "build facts reused"}]
    env.torch_arch_list, env.torch_cuda_available, env.cudnn_compiled = ["sm_90"], True, "9.5.0"
    code, out, _ = cli("check", "--format", "json")
    doc = json.loads(out)
    check(doc)
    assert doc["command"] == "check" and len(doc["results"]) > 2
    statuses = {v["status"] for r in doc["results"] for v in r["verdicts"]}
    assert "not-installed" in statuses


def test_the_schema_rejects_what_it_must(cli, several):
    code, out, _ = cli("explain", "--config-file", str(several), *MLA_TE, "--format", "json")
    doc = json.loads(out)
    check(doc)
    bad = copy.deepcopy(doc)
    bad["results"][0]["verdicts"][0]["status"] = "maybe"
    assert errors(bad, schema())
    bad = copy.deepcopy(doc)
    del bad["gate"]
    assert errors(bad, schema())
    bad = copy.deepcopy(doc)
    finding = next(f for r in bad["results"] for v in r["verdicts"] for f in v["findings"] if f["applies"] is None)
    del finding["applies_if"]
    assert errors(bad, schema())
    bad = copy.deepcopy(doc)
    bad["results"][0]["selected"][0]["status"] = "picked"
    assert errors(bad, schema())
    bad = copy.deepcopy(doc)
    bad["results"][0]["config"]["novel"] = 1
    assert not errors(bad, schema()), "schema_version 1 readers must accept added fields"
    assert errors(bad, closed(schema()))


def test_the_wheel_ships_the_schema():
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "schema/*.json" in data["attndoctor"]
    assert (ROOT / "attndoctor" / "schema" / "report-v1.json").is_file()
