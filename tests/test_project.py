"""Settings files (attndoctor.toml, [tool.attndoctor]) as a user writes them: the README's example, an empty file,
and a bad value named by file, line and setting."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from attndoctor.sources.project import load_project

FIXTURES = Path(__file__).parent / "fixtures" / "models"
README = Path(__file__).resolve().parents[1] / "README.md"


def readme_settings() -> str:
    """The pyproject.toml block of the README's "In CI" section, verbatim."""
    text = README.read_text(encoding="utf-8")
    block = re.search(r"```toml\n(# pyproject\.toml\n.*?)```", text, re.S)
    assert block, "the README's settings example is gone"
    return block.group(1)


@pytest.fixture
def project_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_readme_settings_example_runs_end_to_end(project_dir, cli):
    (project_dir / "pyproject.toml").write_text(readme_settings(), encoding="utf-8")
    model = project_dir / "configs" / "our-model"
    model.mkdir(parents=True)
    shutil.copy(FIXTURES / "Meta-Llama-3-8B" / "config.json", model / "config.json")
    code, out, err = cli("explain", "--format", "json")
    assert err == "" and code == 0, err
    doc = json.loads(out)
    assert doc["environment"]["gpu"].startswith("H100") and doc["environment"]["versions"]["cudnn"] == "9.19.0"
    assert {c["check"] for c in doc["gate"]["checks"]} >= {"require sdpa-cudnn", "fail-on api-mismatch"}
    assert all(c["passed"] for c in doc["gate"]["checks"])
    ignored = [f for r in doc["results"] for v in r["verdicts"] for f in v["findings"]
               if f["rule"] == "SDPA-FLASH-ATTN-MASK"]
    assert not ignored


def test_empty_settings_file_is_no_settings(project_dir, cli):
    (project_dir / "attndoctor.toml").write_text("", encoding="utf-8")
    code, out, err = cli("explain", "--hdim", "128", "--gpu", "H100", "--format", "json")
    assert (code, err) == (0, "")
    assert json.loads(out)["results"]


def test_pyproject_without_the_table_is_ignored(project_dir, cli):
    (project_dir / "pyproject.toml").write_text("[project]\nname = 'x'\n# [tool.attndoctor] comes later\n")
    code, _, err = cli("explain", "--hdim", "128", "--gpu", "H100")
    assert (code, err) == (0, "")


def test_settings_values_are_used(project_dir):
    (project_dir / "attndoctor.toml").write_text(
        'require = ["sdpa-cudnn"]\nfail_on = "unsupported"\n\n[[config]]\nname = "ours"\nhdim = 128\n'
        '\n[[config]]\nname = "theirs"\nhdim = 64\n', encoding="utf-8")
    project = load_project()
    assert project.require == ("sdpa-cudnn",) and project.fail_on == "unsupported"
    assert [c.name for c in project.configs] == ["ours", "theirs"]
    assert [c.source for c in project.configs] == [("attndoctor.toml", 4), ("attndoctor.toml", 8)]


BAD = [
    ('fail_on = "api-mismach"\n', "1: fail_on", "api-mismatch"),
    ('require = "sdpa-cudnn"\nrequire_any = [""]\n', "2: require_any", "list of text"),
    ('require_any = [" , "]\n', "1: require_any", "empty group"),
    ('environment = { gpu = "H1000" }\n', "1: environment.gpu", "H100"),
    ('environment = { cudnn = "nine" }\n', "1: environment.cudnn", "not a version"),
    ('environment = { flash-attn = "2.6.3", gpus = 2 }\n', "1: environment.gpus", "accepted"),
    ('ignore = [{ rule = "X" }]\n', "1: ignore", "reason"),
    ('colour = true\n', "1: colour", "unknown setting"),
    ('models = ["missing/config.json"]\n', "1: models", "no such model config"),
    ('\n[[config]]\nhdim = 128\n\n[[config]]\nhdim = "big"\n', "5: config 2", "hdim"),
    ('env_file = 3\n', "1: env_file", "path"),
    ('\nrequire = ["sdpa-cudn"]\n', "2: require", "sdpa-cudnn"),
]


@pytest.mark.parametrize("text, where, accepted", BAD)
def test_bad_setting_exits_2_naming_file_line_and_setting(project_dir, cli, text, where, accepted):
    (project_dir / "attndoctor.toml").write_text(text, encoding="utf-8")
    code, out, err = cli("explain", "--hdim", "128")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("attndoctor: error: attndoctor.toml:"), err
    assert where in err and accepted in err, err


def test_bad_setting_in_pyproject_names_its_line(project_dir, cli):
    (project_dir / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.attndoctor]\nrequire = ["sdpa-cudnn"]\nfail_on = 3\n', encoding="utf-8")
    code, _, err = cli("explain", "--hdim", "128")
    assert code == 2 and "pyproject.toml:6: fail_on" in err


def test_ignored_rule_that_does_not_exist_is_named_with_its_line(project_dir, cli):
    (project_dir / "attndoctor.toml").write_text('\nignore = [{ rule = "NO-SUCH-RULE", reason = "x" }]\n')
    code, _, err = cli("explain", "--hdim", "128")
    assert code == 2 and "attndoctor.toml:2: ignore: no rule 'NO-SUCH-RULE'" in err


def test_settings_file_that_is_not_toml_or_text(project_dir, cli):
    (project_dir / "attndoctor.toml").write_bytes(b"\xff\xfe\x00")
    code, _, err = cli("explain", "--hdim", "128")
    assert code == 2 and "attndoctor.toml: not a text file" in err
    code, _, err = cli("explain", "--hdim", "128", "--project", str(project_dir))
    assert code == 2 and "is a folder" in err
