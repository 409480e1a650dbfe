"""Adoption in one line: the pre-commit hook and the composite action, run on a sample repository as their hosts run
them (the hook's entry with its args and files; the action's steps as bash scripts with GitHub's files set)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml")

from attndoctor.environment import environment_from_flags  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEEPSEEK = Path(__file__).resolve().parent / "fixtures" / "models" / "DeepSeek-V3"
CRASH = {"gpu": "H100", "torch": "2.11.0", "cuda": "13.0", "cudnn": "9.1.0", "te": "2.3", "flash_attn": "2.7.3"}
"""The README's headline: TE 2.3 with cuDNN 9.1 selects te-fused for MLA 192/128 training, which fails in backward."""
FIXED = {**CRASH, "cudnn": "9.5.0"}


def host_env(**extra: str) -> dict[str, str]:
    """The environment a hook or a step runs in: this interpreter's scripts (attndoctor) first on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "ATTNDOCTOR_"))}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.update(extra)
    return env


def sample_repo(root: Path, machine: dict[str, str], *, settings: bool = True) -> Path:
    """A project with a model config, its settings ([tool.attndoctor]) and an env file of its GPU machine."""
    shutil.copytree(DEEPSEEK, root / "configs" / "our-model")
    (root / "ci").mkdir()
    env = environment_from_flags(machine)
    (root / "ci" / "gpu-env.json").write_text(json.dumps({"environment": env.to_dict()}))
    (root / "README.md").write_text("our model\n")
    if settings:
        facts = ", ".join(f'{k} = "{v}"' for k, v in machine.items())
        (root / "pyproject.toml").write_text(
            '[project]\nname = "ours"\nversion = "1"\n\n'
            f'[tool.attndoctor]\nmodels = ["configs/our-model/config.json"]\nenvironment = {{ {facts} }}\n')
    return root


# ---------------------------------------------------------------- pre-commit


def hooks() -> list[dict[str, Any]]:
    return yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())


def run_hook(repo: Path, changed: list[str], args: list[str] | None = None) -> subprocess.CompletedProcess | None:
    """What `pre-commit run` does with the hook for these changed files: None when its `files` pattern selects none,
    else the entry run with the hook's args (or the user's) and, when it takes them, the file names."""
    hook = next(h for h in hooks() if h["id"] == "attndoctor")
    selected = [f for f in changed if re.search(hook["files"], f)]
    if not selected:
        return None
    command = shlex.split(hook["entry"]) + (hook.get("args", []) if args is None else args)
    if hook.get("pass_filenames", True):
        command += selected
    return subprocess.run(command, cwd=repo, env=host_env(), capture_output=True, text=True, timeout=120)


def test_the_hook_is_a_python_hook_of_the_gate_on_configs_and_settings():
    (hook,) = hooks()
    assert hook["id"] == "attndoctor" and hook["language"] == "python"
    assert shlex.split(hook["entry"])[:2] == ["attndoctor", "explain"]
    assert hook["pass_filenames"] is False  # the settings name the models; a changed file only triggers the run
    for name in ("config.json", "configs/llama/config.json", "pyproject.toml", "attndoctor.toml", "sub/pyproject.toml"):
        assert re.search(hook["files"], name), name
    for name in ("README.md", "train.py", "config.json.bak", "myconfig.json", "pyproject.toml~"):
        assert not re.search(hook["files"], name), name


@pytest.mark.parametrize(("machine", "code"), [(CRASH, 1), (FIXED, 0)])
def test_the_hook_gates_a_commit_of_a_model_config(tmp_path: Path, machine: dict[str, str], code: int):
    repo = sample_repo(tmp_path, machine)
    done = run_hook(repo, ["configs/our-model/config.json", "README.md"])
    assert done is not None and done.returncode == code, (done.stdout, done.stderr)
    if code:
        assert "te-fused" in done.stdout and "TE-FUSED-HD256-BWD-HOPPER-RUNTIME" in done.stdout
        assert "fix: upgrade cuDNN to 9.5.0 or later" in done.stdout


def test_the_hook_in_a_project_without_settings_fails_and_says_how_to_give_them(tmp_path: Path):
    repo = sample_repo(tmp_path, CRASH, settings=False)
    done = run_hook(repo, ["configs/our-model/config.json"])
    assert done is not None and done.returncode == 2 and not done.stdout
    assert "no config to explain" in done.stderr and "--model config.json" in done.stderr


def test_the_hook_runs_when_the_settings_change_and_not_for_other_files(tmp_path: Path):
    repo = sample_repo(tmp_path, CRASH)
    assert run_hook(repo, ["README.md", "train.py"]) is None
    done = run_hook(repo, ["pyproject.toml"])
    assert done is not None and done.returncode == 1
    done = run_hook(repo, ["pyproject.toml"], args=["--infer"])  # the user's args replace the hook's
    assert done is not None and done.returncode == 0, (done.stdout, done.stderr)


# ---------------------------------------------------------------- the composite action


def action() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "action.yml").read_text())


EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def value_of(name: str, inputs: dict[str, str], outputs: dict[str, dict[str, str]]) -> str:
    """The value of one context reference the action uses; any other expression is an error of this test."""
    parts = name.split(".")
    if parts[0] == "inputs" and len(parts) == 2:
        return inputs[parts[1]]
    if parts[0] == "steps" and len(parts) == 4 and parts[2] == "outputs":
        return outputs.get(parts[1], {}).get(parts[3], "")
    if name == "github.action_path":
        return str(ROOT)
    raise AssertionError(f"action.yml uses an expression this test does not evaluate: {name}")


def substitute(text: str, inputs: dict[str, str], outputs: dict[str, dict[str, str]]) -> str:
    return EXPRESSION.sub(lambda m: value_of(m.group(1), inputs, outputs), text)


def condition(text: str | None, inputs: dict[str, str], outputs: dict[str, dict[str, str]]) -> bool:
    """`if:` of a step: comparisons of context values with string literals, joined by &&."""
    if text is None:
        return True
    result = True
    for term in str(text).split("&&"):
        m = re.fullmatch(r"\s*([\w.-]+)\s*(==|!=)\s*'([^']*)'\s*", term)
        assert m, f"action.yml: an `if:` this test does not evaluate: {text}"
        got = value_of(m.group(1), inputs, outputs)
        result = result and ((got == m.group(3)) == (m.group(2) == "=="))
    return result


def read_outputs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def run_action(workspace: Path, given: dict[str, str]) -> dict[str, Any]:
    """Each step of the composite action in order, as the runner runs it: `run:` steps through `bash --noprofile
    --norc -eo pipefail` with GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, GITHUB_PATH and GITHUB_ACTION_PATH set; `uses:`
    steps are recorded with their `with:` values, not run."""
    spec = action()
    unknown = set(given) - set(spec["inputs"])
    assert not unknown, f"inputs the action does not have: {unknown}"
    inputs = {name: str(meta.get("default", "")) for name, meta in spec["inputs"].items()}
    inputs.update(given)
    files = workspace.parent / "runner"
    files.mkdir(exist_ok=True)
    summary, path_file = files / "summary.md", files / "path"
    summary.write_text("")
    path_file.write_text("")
    outputs: dict[str, dict[str, str]] = {}
    ran: list[dict[str, Any]] = []
    for i, step in enumerate(spec["runs"]["steps"]):
        record: dict[str, Any] = {"name": step.get("name"), "skipped": not condition(step.get("if"), inputs, outputs)}
        ran.append(record)
        if record["skipped"]:
            continue
        if "uses" in step:
            record["uses"] = step["uses"]
            record["with"] = {k: substitute(str(v), inputs, outputs) for k, v in step.get("with", {}).items()}
            continue
        assert step["shell"] == "bash"
        out_file = files / f"output-{i}"
        out_file.write_text("")
        script = files / f"step-{i}.sh"
        script.write_text(step["run"])  # the runner writes the script as it stands; expressions only in env
        assert not EXPRESSION.search(step["run"]), "expressions belong in env:, never in a script (injection)"
        env = host_env(GITHUB_OUTPUT=str(out_file), GITHUB_STEP_SUMMARY=str(summary), GITHUB_PATH=str(path_file),
                       GITHUB_ACTION_PATH=str(ROOT), GITHUB_WORKSPACE=str(workspace), RUNNER_TEMP=str(files))
        env.update({k: substitute(str(v), inputs, outputs) for k, v in step.get("env", {}).items()})
        cwd = workspace / substitute(str(step.get("working-directory", ".")), inputs, outputs)
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=300)
        record.update(code=done.returncode, stdout=done.stdout, stderr=done.stderr)
        if "id" in step:
            outputs[step["id"]] = read_outputs(out_file)
        if done.returncode:
            break  # a failed step ends the job: later steps (without if: always()) do not run
    declared = {k: substitute(str(v["value"]), inputs, outputs) for k, v in spec.get("outputs", {}).items()}
    return {"steps": ran, "outputs": declared, "summary": summary.read_text()}


def test_the_action_is_composite_and_uploads_sarif_with_codeql():
    spec = action()
    assert spec["runs"]["using"] == "composite"
    uses = [s["uses"] for s in spec["runs"]["steps"] if "uses" in s]
    assert uses == ["github/codeql-action/upload-sarif@v3"]
    assert {"models", "config-files", "env-file", "gpu", "torch", "cudnn", "te", "train", "sarif"} <= set(spec["inputs"])


@pytest.mark.parametrize(("machine", "code"), [(CRASH, 1), (FIXED, 0)])
def test_the_action_gates_annotates_summarises_and_uploads(tmp_path: Path, machine: dict[str, str], code: int):
    repo = sample_repo(tmp_path / "repo", machine, settings=False)
    got = run_action(repo, {"install": "false", "models": "configs/our-model", "env-file": "ci/gpu-env.json",
                            "train": "true", "args": "--seqlen 8192"})
    steps = {s["name"]: s for s in got["steps"]}
    gate = steps["Attention gate"]
    assert gate["code"] == 0, gate["stderr"]  # the gate's verdict waits until SARIF is uploaded
    assert got["outputs"]["exit-code"] == str(code)
    upload = steps["Upload SARIF to code scanning"]
    assert not upload["skipped"] and upload["with"]["sarif_file"] == got["outputs"]["sarif"]
    sarif = json.loads(Path(upload["with"]["sarif_file"]).read_text())
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["tool"]["driver"]["name"] == "attndoctor"
    assert steps["Fail when the gate failed"]["code"] == code
    assert "attndoctor" in got["summary"]
    if code:
        assert "::error" in gate["stdout"] and "TE-FUSED-HD256-BWD-HOPPER-RUNTIME" in gate["stdout"]
        assert "te-fused" in got["summary"]
        assert any(r["ruleId"] == "TE-FUSED-HD256-BWD-HOPPER-RUNTIME" for r in sarif["runs"][0]["results"])
    else:
        assert "::error" not in gate["stdout"]


def test_the_action_reads_the_project_settings_by_default(tmp_path: Path):
    repo = sample_repo(tmp_path / "repo", CRASH)
    got = run_action(repo, {"install": "false", "train": "true", "upload-sarif": "false"})
    assert got["outputs"]["exit-code"] == "1"
    assert next(s for s in got["steps"] if s["name"] == "Upload SARIF to code scanning")["skipped"]
    assert got["steps"][-1]["code"] == 1


def test_the_action_with_versions_as_inputs(tmp_path: Path):
    repo = sample_repo(tmp_path / "repo", CRASH, settings=False)
    versions = {k.replace("_", "-"): v for k, v in FIXED.items()}
    got = run_action(repo, {"install": "false", "models": "configs/our-model/config.json", "train": "true",
                            **versions, "args": "--require sdpa-cudnn", "sarif": ""})
    assert got["outputs"] == {"exit-code": "1", "sarif": ""}  # cuDNN 9.5 on torch 2.11 caps SDPA cuDNN at d128
    assert next(s for s in got["steps"] if s["name"] == "Upload SARIF to code scanning")["skipped"]


def test_bad_input_fails_the_action_with_exit_2_and_no_upload(tmp_path: Path):
    repo = sample_repo(tmp_path / "repo", CRASH, settings=False)
    got = run_action(repo, {"install": "false", "models": "configs/our-model", "env-file": "ci/missing.json"})
    assert got["outputs"] == {"exit-code": "2", "sarif": ""}
    assert "ci/missing.json" in next(s for s in got["steps"] if s["name"] == "Attention gate")["stderr"]
    assert next(s for s in got["steps"] if s["name"] == "Upload SARIF to code scanning")["skipped"]
    assert got["steps"][-1]["code"] == 2
    got = run_action(repo, {"install": "false", "models": "configs/our-model", "train": "maybe"})
    gate = next(s for s in got["steps"] if s["name"] == "Attention gate")
    assert gate["code"] == 2 and "train: expected true, false or empty" in gate["stdout"]


# ---------------------------------------------------------------- the examples use them


def test_the_example_workflow_uses_the_action_and_its_gate_catches_the_crash(tmp_path: Path):
    workflow = yaml.safe_load((ROOT / "examples" / "github-actions.yml").read_text())
    job = workflow["jobs"]["attndoctor"]
    assert job["permissions"]["security-events"] == "write"
    (step,) = [s for s in job["steps"] if "attndoctor@" in s.get("uses", "")]
    assert not any("pip install" in s.get("run", "") for s in job["steps"])  # the action installs itself
    for machine, code in ((CRASH, "1"), (FIXED, "0")):
        repo = sample_repo(tmp_path / f"repo-{code}", machine, settings=False)
        got = run_action(repo, {**step["with"], "install": "false"})
        assert got["outputs"]["exit-code"] == code


def test_the_example_precommit_config_uses_the_hook(tmp_path: Path):
    config = yaml.safe_load((ROOT / "examples" / "pre-commit-config.yaml").read_text())
    (repo_entry,) = config["repos"]
    assert repo_entry["repo"] != "local" and [h["id"] for h in repo_entry["hooks"]] == ["attndoctor"]
    repo = sample_repo(tmp_path, CRASH)
    done = run_hook(repo, ["configs/our-model/config.json"], args=repo_entry["hooks"][0].get("args"))
    assert done is not None and done.returncode == 1
