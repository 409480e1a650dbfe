"""Every `--format json` output has a published schema (attndoctor/schema/), each valid alone with plain
`jsonschema.validate(doc, schema)`, and each holds for real outputs: commands run here, and the GPU runs recorded in
tests/observations/ and benchmarks/results/."""

from __future__ import annotations

import copy
import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from conftest import fake_probe
from test_json_schema import closed

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
OBSERVATIONS = Path(__file__).parent / "observations"

SCHEMAS = {
    "check": "report-v1.json", "explain": "report-v1.json", "trace": "report-v1.json", "why": "why-v1.json",
    "verify": "verify-v1.json", "verify --record": "observation-v1.json", "verify --stress": "stress-v1.json",
    "bench": "bench-v1.json", "fleet": "fleet-v1.json", "rules list": "rules-list-v1.json",
    "rules show": "rule-v1.json", "rules matrix": "matrix-v1.json",
}
"""Each command's JSON output and its schema (`rules lint` has no JSON output)."""


def schema(name: str) -> dict[str, Any]:
    return json.loads((resources.files("attndoctor") / "schema" / name).read_text(encoding="utf-8"))


def valid(doc: Any, name: str, *, strict: bool = True) -> None:
    """Plain validate (the schema alone, no registry), then with every described object closed: the output has no
    field its schema does not describe."""
    jsonschema.validate(doc, schema(name))
    if strict:
        errors = [f"{e.json_path}: {e.message[:160]}"
                  for e in jsonschema.Draft202012Validator(closed(schema(name))).iter_errors(doc)]
        assert not errors, errors[:5]


def invalid(doc: Any, name: str) -> bool:
    return not jsonschema.Draft202012Validator(schema(name)).is_valid(doc)


@pytest.mark.parametrize("name", sorted(set(SCHEMAS.values())))
def test_each_schema_is_a_2020_12_schema_that_stands_alone(name):
    s = schema(name)
    jsonschema.Draft202012Validator.check_schema(s)
    assert s["$id"] == f"urn:attndoctor:{name.removesuffix('-v1.json')}:v1"
    refs = {m for m in json.dumps(s).split('"$ref": ')[1:]}
    if any("urn:attndoctor:report:v1" in r for r in refs):
        assert s["$defs"]["report-v1"]["$id"] == "urn:attndoctor:report:v1"  # tools/schema_embed.py keeps it


def test_every_schema_is_listed_in_the_docs():
    text = (ROOT / "docs" / "formats.md").read_text()
    for command, name in SCHEMAS.items():
        assert f"`{name}`" in text and f"`{command}" in text, (command, name)
    shipped = {p.name for p in (ROOT / "attndoctor" / "schema").glob("*.json")}
    assert shipped == set(SCHEMAS.values())


# ---------------------------------------------------------------- recorded GPU outputs


ADDED_SINCE = {"fp8_recipe": "none", "sdpa_flash_impl": "fa2", "sinks": False}
"""Config fields report-v1 gained after the H100 check and bench runs were recorded, at the values a config that does
not set them has: those recordings lack them and nothing else."""


def as_today(doc: Any) -> int:
    """Fill ADDED_SINCE into every config of a recording that lacks all of them; how many were filled."""
    filled = 0
    if isinstance(doc, dict):
        config = doc.get("config")
        if isinstance(config, dict) and "qkv_fused" in config and set(ADDED_SINCE).isdisjoint(config):
            config.update(ADDED_SINCE)
            filled += 1
        values = doc.values()
    else:
        values = doc if isinstance(doc, list) else []
    return filled + sum(as_today(v) for v in values)


def test_the_recorded_h100_check():
    doc = json.loads((RESULTS / "h100_check.json").read_text())
    assert invalid(doc, "report-v1.json") and as_today(doc) == len(doc["results"])
    valid(doc, "report-v1.json")


@pytest.mark.parametrize("run", ["h100_bench_run1.json", "h100_bench_run2.json", "h100_bench_run3.json"])
def test_the_recorded_h100_bench_runs(run):
    doc = json.loads((RESULTS / run).read_text())
    assert as_today(doc) == len(doc["results"])
    valid(doc, "bench-v1.json")
    assert sum(len(r["measurements"]) for r in doc["results"]) > 50


@pytest.mark.parametrize("run", sorted(p.name for p in RESULTS.glob("fleet_h200x2_*.json")))
def test_the_recorded_h200_fleet_runs(run):
    valid(json.loads((RESULTS / run).read_text()), "fleet-v1.json")


def test_every_recorded_observation_line():
    """The verify and verify --stress records of the GPU machines, every line (records from before a config field
    existed lack it, so the record's config and environment are checked for the fields every record has)."""
    validator = jsonschema.Draft202012Validator(schema("observation-v1.json"))
    lines = 0
    for path in sorted(OBSERVATIONS.rglob("*.jsonl")):
        if path.name.startswith("descriptors_") or path.parent.name == "advisories":
            continue  # cuDNN check_support answers (tools/cudnn_devices) and advisory probes, not verify records
        for number, line in enumerate(path.read_text().splitlines(), 1):
            errors = [e.message[:160] for e in validator.iter_errors(json.loads(line))]
            assert not errors, (path.name, number, errors[:3])
            lines += 1
    assert lines > 2000


# ---------------------------------------------------------------- commands run here


def test_rules_list_show_and_matrix(cli):
    code, out, _ = cli("rules", "list", "--format", "json")
    rules = json.loads(out)
    assert code == 0 and len(rules) > 400
    valid(rules, "rules-list-v1.json")
    valid(json.loads(cli("rules", "list", "--advisories", "--format", "json")[1]), "rules-list-v1.json")
    for rule_id in ("TE-FUSED-SEQ64-CUDNN8", "ADV-CUDNN-SM90-BWD-KV64-LSE-NAN"):
        doc = json.loads(cli("rules", "show", rule_id, "--format", "json")[1])
        valid(doc, "rule-v1.json")
        assert doc["examples"]
    for gpu in ("H100", "A100", "B200"):
        valid(json.loads(cli("rules", "matrix", "--gpu", gpu, "--format", "json")[1]), "matrix-v1.json")
    bad = copy.deepcopy(rules[:2])
    bad[1]["effect"] = "fatal"
    assert invalid(bad, "rules-list-v1.json")


@pytest.fixture
def on_cpu(monkeypatch):
    """verify and bench run the real kernels through the worker, on the CPU."""
    pytest.importorskip("torch")
    fake_probe(monkeypatch, gpu="H100")
    monkeypatch.setenv("ATTNDOCTOR_VERIFY_DEVICE", "cpu")


SMALL = ["--heads", "4", "--kv-heads", "2", "--seqlen", "32", "--hdim", "16", "--dtype", "fp32", "--train", "--causal"]


def test_verify_and_its_record(cli, on_cpu, tmp_path):
    record = tmp_path / "obs.jsonl"
    code, out, err = cli("verify", *SMALL, "--backend", "sdpa-math", "--backend", "sdpa-flash", "--repeats", "1",
                         "--seed", "11", "--record", str(record), "--format", "json")
    doc = json.loads(out)
    assert code == 1, err  # sdpa-flash runs fp32 on the CPU, which the rules refuse on a GPU: contradicted
    valid(doc, "verify-v1.json")
    assert doc["summary"]["agreement"] == {"confirmed": 1, "contradicted": 1}
    for line in record.read_text().splitlines():
        valid(json.loads(line), "observation-v1.json", strict=False)
    bad = copy.deepcopy(doc)
    bad["observations"][0]["agreement"] = "agreed"
    assert invalid(bad, "verify-v1.json")


def test_verify_stress(cli, on_cpu):
    code, out, err = cli("verify", "--stress", "--heads", "2", "--seqlen", "64", "--hdim", "16", "--dtype", "fp32",
                         "--train", "--mask", "arbitrary", "--backend", "sdpa-math", "--seed", "3", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    valid(doc, "stress-v1.json")
    from attndoctor.config import make_config
    from attndoctor.runs.stress import StressFinding

    found = StressFinding(config=make_config({"heads": 1, "seqlen": 704, "hdim": 64, "dtype": "bf16", "train": True,
                                              "mask": "arbitrary"}),
                          regime="low-lse", backend="sdpa-cudnn", kind="non-finite",
                          detail="non-finite dq where the float64 reference is finite",
                          explained_by=("ADV-CUDNN-SM90-BWD-KV64-LSE-NAN",), repro="python repro.py")
    finding = found.to_dict()
    valid({**doc, "findings": [finding], "new": 0}, "stress-v1.json")
    assert invalid({**doc, "findings": [{**finding, "kind": "odd"}]}, "stress-v1.json")


def test_bench(cli, on_cpu):
    code, out, err = cli("bench", *SMALL, "--backend", "sdpa-math", "--runs", "3", "--seed", "5", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    valid(doc, "bench-v1.json")
    bad = copy.deepcopy(doc)
    del bad["results"][0]["measurements"][0]["recommended"]
    assert invalid(bad, "bench-v1.json")


def test_fleet_of_two_local_ranks():
    """Two ranks that meet through torch.distributed on this machine: one with NVTE_FUSED_ATTN=0 (they select
    differently), a context-parallel config that does not fit; then one rank whose env file is missing."""
    from test_fleet_dist import TE_ARGS, as_h100, run_ranks

    results = run_ranks([*TE_ARGS, "--cp", "4", "--format", "json"], [as_h100(), as_h100(NVTE_FUSED_ATTN="0")])
    doc = json.loads(results[0][1])
    assert doc["mismatches"]["selected"] and doc["context_parallel"][0]["fits"] is False
    valid(doc, "fleet-v1.json")
    results = run_ranks([*TE_ARGS, "--format", "json"], [as_h100(), {"ATTNDOCTOR_FLEET_ENV_FILE": "/missing.json"}])
    doc = json.loads(results[0][1])
    assert doc["gate"]["exit_code"] == 2
    valid(doc, "fleet-v1.json")
    bad = copy.deepcopy(doc)
    bad["gate"]["exit_code"] = 3
    assert invalid(bad, "fleet-v1.json")
