"""Results point at the file their config came from: SARIF physical locations and GitHub `file=` annotations."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from attndoctor.config import make_config
from attndoctor.sources.models import configs_from_model
from attndoctor.sources.project import ProjectConfig

FIXTURES = Path(__file__).parent / "fixtures"
MODELS = FIXTURES / "models"
SARIF_SCHEMA = FIXTURES / "sarif" / "sarif-schema-2.1.0.json"
# TE 2.3 + cuDNN 9.1 on H100 with MLA training: te-fused is selected and fails; a finding of every kind.
MACHINE = ["--gpu", "H100", "--torch", "2.5.1", "--te", "2.3", "--cudnn", "9.1.0", "--flash-attn", "2.7.3",
           "--require", "te-fused"]
MLA = ["--hdim", "192", "--hdim-v", "128", "--heads", "16", "--seqlen", "4096", "--dtype", "bf16", "--train",
       "--causal"]


@pytest.fixture(autouse=True)
def job_summary(monkeypatch, tmp_path):
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A checkout-like working folder holding two model configs."""
    root = tmp_path / "repo"
    for name in ("gemma-3-12b-it", "DeepSeek-V3"):
        shutil.copytree(MODELS / name, root / "models" / name)
    monkeypatch.chdir(root)
    return root


def line_of(path: Path, key: str) -> int:
    return next(i for i, text in enumerate(path.read_text().splitlines(), 1) if f'"{key}"' in text)


def validate_sarif(doc: dict) -> None:
    import jsonschema

    schema = json.loads(SARIF_SCHEMA.read_text())
    validator = jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)
    errors = [f"{e.json_path}: {e.message}" for e in validator.iter_errors(doc)]
    assert not errors, errors[:5]


def physical(result: dict) -> dict:
    found = [loc["physicalLocation"] for loc in result.get("locations", []) if "physicalLocation" in loc]
    assert found, f"no physical location on {result['ruleId']}"
    return found[0]


def test_model_configs_carry_their_file_and_the_line_that_decided_their_kind():
    file = MODELS / "gemma-3-12b-it" / "config.json"
    local, global_, image_local, image_global, _vision = configs_from_model(MODELS / "gemma-3-12b-it")
    assert local.source == (str(file), line_of(file, "sliding_window"))
    assert global_.source == (str(file), 1)
    assert image_local.source == image_global.source == (str(file), line_of(file, "vision_config"))
    gemma4 = MODELS / "gemma-4-31B-it" / "config.json"
    image = next(c for c in configs_from_model(gemma4) if c.name.endswith("with image tokens"))
    assert image.source == (str(gemma4), line_of(gemma4, "use_bidirectional_attention"))
    qwen = MODELS / "Qwen2.5-7B" / "config.json"
    assert configs_from_model(qwen)[0].source == (str(qwen), line_of(qwen, "use_sliding_window"))


def test_flags_over_a_model_keep_its_file():
    from attndoctor.services import configs_from_inputs

    configs = configs_from_inputs({"train": True}, models=[str(MODELS / "DeepSeek-V3")])
    assert configs[0].train is True and configs[0].source == (str(MODELS / "DeepSeek-V3" / "config.json"), 1)


def test_sarif_from_models_has_a_relative_location_on_every_result_and_validates(cli, workdir):
    code, out, _ = cli("explain", "--model", "models/gemma-3-12b-it", "--model", "models/DeepSeek-V3", "--train",
                       *MACHINE, "--format", "sarif")
    assert code == 1
    doc = json.loads(out)
    validate_sarif(doc)
    run = doc["runs"][0]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == workdir.resolve().as_uri() + "/"
    results = run["results"]
    assert {r["ruleId"] for r in results} >= {"AD-GATE"} and len(results) > 10
    uris = set()
    for result in results:
        where = physical(result)
        assert where["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert where["region"]["startLine"] >= 1
        uris.add((where["artifactLocation"]["uri"], where["region"]["startLine"]))
    gemma = workdir / "models" / "gemma-3-12b-it" / "config.json"
    assert uris == {("models/gemma-3-12b-it/config.json", line_of(gemma, "sliding_window")),
                    ("models/gemma-3-12b-it/config.json", 1), ("models/DeepSeek-V3/config.json", 1),
                    ("models/gemma-3-12b-it/config.json", line_of(gemma, "vision_config"))}


def test_sarif_for_a_file_outside_the_working_folder_is_an_absolute_uri(cli, workdir, tmp_path):
    outside = tmp_path / "elsewhere" / "DeepSeek-V3"
    shutil.copytree(MODELS / "DeepSeek-V3", outside)
    code, out, _ = cli("explain", "--model", str(outside), *MACHINE, "--format", "sarif")
    doc = json.loads(out)
    validate_sarif(doc)
    for result in doc["runs"][0]["results"]:
        location = physical(result)["artifactLocation"]
        assert "uriBaseId" not in location and location["uri"] == (outside / "config.json").resolve().as_uri()


def test_sarif_from_flags_alone_has_no_location_and_validates(cli, workdir):
    code, out, _ = cli("explain", *MLA, *MACHINE, "--format", "sarif")
    doc = json.loads(out)
    validate_sarif(doc)
    assert doc["runs"][0]["results"]
    assert not any("physicalLocation" in loc for r in doc["runs"][0]["results"] for loc in r["locations"])


def settings(monkeypatch, workdir: Path, **fields) -> Path:
    """A settings file in the working folder, as the loader would read it (the loader itself is tested apart)."""
    path = workdir / "attndoctor.toml"
    path.write_text("# settings\n")
    monkeypatch.setattr("attndoctor.sources.project.load_project",
                        lambda path_=None: ProjectConfig(path=str(path), **fields))
    return path


def test_flags_alone_point_at_the_settings_file_when_there_is_one(cli, workdir, monkeypatch):
    settings(monkeypatch, workdir, require=("sdpa-cudnn",))
    code, out, _ = cli("explain", *MLA, *MACHINE, "--format", "sarif")
    doc = json.loads(out)
    validate_sarif(doc)
    for result in doc["runs"][0]["results"]:
        where = physical(result)
        assert where["artifactLocation"] == {"uri": "attndoctor.toml", "uriBaseId": "%SRCROOT%"}
        assert "region" not in where  # no line is known


def test_settings_configs_point_at_the_settings_file(cli, workdir, monkeypatch):
    path = workdir / "attndoctor.toml"
    config = make_config({"name": "ours", "hdim": 192, "hdim_v": 128, "heads": 16, "seqlen": 4096,
                          "dtype": "bf16", "train": True, "causal": True})._replace(source=(str(path), 5))
    settings(monkeypatch, workdir, configs=(config,))
    code, out, _ = cli("explain", *MACHINE, "--format", "sarif")
    doc = json.loads(out)
    validate_sarif(doc)
    for result in doc["runs"][0]["results"]:
        assert physical(result) == {"artifactLocation": {"uri": "attndoctor.toml", "uriBaseId": "%SRCROOT%"},
                                    "region": {"startLine": 5}}


def test_settings_file_configs_end_to_end(cli, workdir):
    (workdir / "attndoctor.toml").write_text(
        '[[config]]\nname = "ours"\nhdim = 192\nhdim_v = 128\nheads = 16\nseqlen = 4096\ndtype = "bf16"\n'
        'train = true\nmask = "causal"\n')
    code, out, _ = cli("explain", *MACHINE, "--format", "sarif")
    doc = json.loads(out)
    validate_sarif(doc)
    for result in doc["runs"][0]["results"]:
        assert physical(result)["artifactLocation"] == {"uri": "attndoctor.toml", "uriBaseId": "%SRCROOT%"}
    code, out, _ = cli("explain", *MACHINE, "--format", "github")
    assert out.startswith("::error file=attndoctor.toml,")


def test_sarif_from_a_config_file_points_at_each_configs_line(cli, workdir):
    (workdir / "configs.jsonl").write_text(
        '{"name": "mla", "hdim": 192, "hdim_v": 128, "heads": 16, "seqlen": 4096, "dtype": "bf16", "train": true}\n'
        '\n'
        '{"name": "small", "hdim": 64, "heads": 8, "seqlen": 1024, "dtype": "bf16", "train": true}\n')
    code, out, _ = cli("explain", "--config-file", "configs.jsonl", *MACHINE, "--format", "sarif")
    doc = json.loads(out)
    validate_sarif(doc)
    lines = {}
    for result in doc["runs"][0]["results"]:
        where = physical(result)
        assert where["artifactLocation"] == {"uri": "configs.jsonl", "uriBaseId": "%SRCROOT%"}
        lines[result["locations"][0]["logicalLocations"][0]["name"]] = where["region"]["startLine"]
    assert lines == {"mla": 1, "small": 3}


def test_github_annotations_name_the_file_and_line(cli, workdir):
    code, out, _ = cli("explain", "--model", "models/gemma-3-12b-it", "--train", *MACHINE, "--format", "github")
    assert code == 1
    gemma = workdir / "models" / "gemma-3-12b-it" / "config.json"
    annotations = [line for line in out.splitlines() if line.startswith("::")]
    assert annotations and all(line.startswith(("::error file=", "::warning file=", "::notice file="))
                               for line in annotations)
    assert f"::error file=models/gemma-3-12b-it/config.json,line={line_of(gemma, 'sliding_window')},title=" in out
    assert "::error file=models/gemma-3-12b-it/config.json,line=1,title=" in out


def test_github_annotation_properties_are_escaped(cli, workdir):
    odd = workdir / "a,b:c%d"
    shutil.copytree(MODELS / "DeepSeek-V3", odd)
    code, out, _ = cli("explain", "--model", str(odd.relative_to(workdir)), "--train", *MACHINE, "--format", "github")
    assert "::error file=a%2Cb%3Ac%25d/config.json,line=1,title=" in out


def test_github_without_a_file_has_no_file_property(cli, workdir):
    code, out, _ = cli("explain", *MLA, *MACHINE, "--format", "github")
    assert out.startswith("::error title=") and "file=" not in out
