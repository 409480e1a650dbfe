"""The examples/ a user copies: they install what exists and their gate catches the README's headline crash."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

from attndoctor.environment import environment_from_flags

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DEEPSEEK = Path(__file__).resolve().parent / "fixtures" / "models" / "DeepSeek-V3"


def _runs(workflow: str) -> list[str]:
    """The shell of each `run:` step, folded blocks (`run: >`) joined into one line as YAML does."""
    lines, out, i = workflow.splitlines(), [], 0
    while i < len(lines):
        m = re.match(r"^(\s*)(?:- )?run: ?(.*)$", lines[i])
        i += 1
        if not m:
            continue
        if m.group(2).strip() not in (">", "|"):
            out.append(m.group(2).strip())
            continue
        block = []
        while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > len(m.group(1))):
            block.append(lines[i].strip())
            i += 1
        out.append(" ".join(b for b in block if b))
    return out


def test_the_workflow_installs_attndoctor_from_source_not_pypi() -> None:
    runs = _runs((EXAMPLES / "github-actions.yml").read_text())
    installs = [r for r in runs if r.startswith("pip install")]
    assert installs and not any(re.search(r"pip install\s+['\"]?attndoctor\b(?!\s*@)", r) for r in installs)
    assert all("./" in r or re.search(r"git\+\S+@[0-9a-f]{7,}", r) for r in installs)


def test_the_precommit_hook_installs_nothing_from_pypi() -> None:
    text = (EXAMPLES / "pre-commit-config.yaml").read_text()
    assert not re.search(r"additional_dependencies:\s*\[\s*['\"]?attndoctor['\"]?\s*\]", text)
    assert "entry: attndoctor explain" in text


@pytest.mark.parametrize(("cudnn", "code"), [("9.1.0", 1), ("9.5.0", 0)])
def test_the_workflow_gate_catches_the_readme_crash(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    cudnn: str, code: int) -> None:
    """TE 2.3 with cuDNN 9.1 selects te-fused for MLA 192/128 training, which fails in the backward pass."""
    shutil.copytree(DEEPSEEK, tmp_path / "configs" / "our-model")
    (tmp_path / "ci").mkdir()
    env = environment_from_flags({"gpu": "H100", "torch": "2.11.0", "cuda": "13.0", "cudnn": cudnn, "te": "2.3",
                                  "flash_attn": "2.7.3"})
    (tmp_path / "ci" / "gpu-env.json").write_text(json.dumps({"environment": env.to_dict()}))
    monkeypatch.chdir(tmp_path)
    gates = [r for r in _runs((EXAMPLES / "github-actions.yml").read_text())
             if r.startswith("attndoctor explain") and "|| true" not in r]
    assert len(gates) == 1 and "--fail-on" not in gates[0]
    got, out, err = cli(*shlex.split(gates[0])[1:])
    assert got == code, (out, err)
    if code:
        assert "te-fused" in out and "TE-FUSED-HD256-BWD-HOPPER-RUNTIME" in out


def test_the_precommit_hook_gate_catches_the_readme_crash(cli, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(DEEPSEEK, tmp_path / "configs" / "our-model")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.attndoctor]\nmodels = ["configs/our-model/config.json"]\n'
        'environment = { gpu = "H100", torch = "2.11.0", cudnn = "9.1.0", te = "2.3", flash_attn = "2.7.3" }\n')
    monkeypatch.chdir(tmp_path)
    entry = re.search(r"entry: (.+)", (EXAMPLES / "pre-commit-config.yaml").read_text()).group(1)
    code, out, err = cli(*shlex.split(entry)[1:])
    assert code == 1 and "te-fused" in out, (out, err)
