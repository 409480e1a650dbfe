"""Shared fixtures: a small synthetic rule base, so engine tests do not move with the shipped corpus."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Iterator

import pytest

from attndoctor.cli import main
from attndoctor.engine.rules import load_rulebase
from attndoctor.environment import environment_from_flags

@pytest.fixture(autouse=True, scope="session")
def _own_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The tests keep their caches (rule base, TOML, torch build facts) away from the user's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        patch.delenv("COLUMNS", raising=False)  # reports are read at the file width, whatever runs the tests
        yield


BACKENDS = """
[[backend]]
id = "alpha"
framework = "fw"
requires = ["torch"]

[[backend]]
id = "beta"
framework = "fw"
requires = ["torch"]

[[backend]]
id = "gamma"
framework = "fw"
requires = ["torch"]
cpu = true

[[backend]]
id = "delta"
framework = "other"
requires = ["te"]
"""

SELECTION = """
[[selection]]
id = "SEL-FW-NEW"
framework = "fw"
when = { torch = ">=2.5" }
order = ["beta", "alpha", "gamma"]
references = ["test"]

[[selection]]
id = "SEL-FW-OLD"
framework = "fw"
order = ["alpha", "beta", "gamma"]
references = ["test"]

[[selection]]
id = "SEL-OTHER"
framework = "other"
order = ["delta"]
references = ["test"]
"""

RULES = """
[[rule]]
id = "T-ALPHA-HDIM"
title = "alpha needs hdim <= 128 before cudnn 9.5"
backends = ["alpha"]
effect = "unsupported"
when = { cudnn = "<9.5" }
condition = "hdim > 128"
message = "alpha with cuDNN {cudnn} takes hdim <= 128, got {hdim}"
symptom = "No execution plans support the graph"
fixes = [{ upgrade = "cudnn", to = "9.5.0" }, { change = "hdim", to = "128" }]
references = ["test"]

[[rule]]
id = "T-ALPHA-SEQ"
title = "alpha needs seqlen % 64"
backends = ["alpha"]
effect = "unsupported"
condition = "seqlen_q % 64 != 0"
message = "seqlen {seqlen_q} is not a multiple of 64"
symptom = "refused"
fixes = [{ change = "seqlen_q", to = "(seqlen_q + 63) // 64 * 64" }]
references = ["test"]

[[rule]]
id = "T-BETA-RUNTIME"
title = "beta fails at run time in training"
backends = ["beta"]
effect = "unsupported"
surfaces = "runtime"
condition = "train and dtype == 'fp16'"
message = "beta crashes in backward with fp16"
symptom = "CUDA error"
fixes = [{ change = "dtype", to = "'bf16'" }]
references = ["test"]

[[rule]]
id = "T-BETA-SWITCH"
title = "beta off by env"
backends = ["beta"]
effect = "unsupported"
condition = "env('BETA_OFF') == '1'"
message = "BETA_OFF=1 turns beta off"
symptom = "skipped"
fixes = [{ unset = "BETA_OFF" }]
references = ["test"]

[[rule]]
id = "T-GAMMA-WRONG"
title = "gamma wrong with fused qkv"
backends = ["gamma"]
effect = "wrong-results"
condition = "qkv_fused and heads != kv_heads"
message = "gamma misreads fused qkv"
symptom = "silently wrong"
fixes = [{ change = "qkv_fused", to = "false" }]
references = ["test"]

[[rule]]
id = "T-GAMMA-FP32"
title = "gamma refuses fp32"
backends = ["gamma"]
effect = "unsupported"
condition = "dtype == 'fp32'"
message = "no fp32"
symptom = "refused"
references = ["test"]

[[rule]]
id = "T-GAMMA-SLOW"
title = "gamma is slow"
backends = ["gamma"]
effect = "slow"
message = "gamma is the reference path"
references = ["test"]
"""


def write_rules(folder: Path, rules: str = RULES, backends: str = BACKENDS, selection: str = SELECTION) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "backends.toml").write_text(textwrap.dedent(backends))
    (folder / "selection.toml").write_text(textwrap.dedent(selection))
    (folder / "rules.toml").write_text(textwrap.dedent(rules))
    return folder


@pytest.fixture()
def toy_dir(tmp_path: Path) -> Path:
    return write_rules(tmp_path / "rules")


@pytest.fixture()
def toy_base(toy_dir: Path):
    load_rulebase.cache_clear()
    return load_rulebase(str(toy_dir))


@pytest.fixture()
def cli(capsys):
    """Run the command line in-process: (exit code, stdout, stderr)."""
    def run(*args):
        with pytest.raises(SystemExit) as info:
            main(list(args))
        out, err = capsys.readouterr()
        return info.value.code, out, err
    return run


@pytest.fixture()
def explain(cli):
    """`attndoctor explain ... --format json` in-process: the document. The exit code is the document's gate (0: it
    passed, 1: it failed, never 2), and `exit`, where a test gives it, is the code that test means."""
    def run(*args, exit=None):
        code, out, err = cli("explain", *args, "--format", "json")
        if exit is not None:
            assert code == exit, err
        assert code in (0, 1), err
        doc = json.loads(out)
        assert code == (0 if doc["gate"]["passed"] else 1), doc["gate"]
        return doc
    return run


def fake_probe(monkeypatch, **facts):
    """Make `probe()` answer a machine with torch 2.6 and nothing else installed, plus the given facts."""
    env = environment_from_flags({"torch": "2.6.0", "cudnn": "none", "te": "none", "flash_attn": "none",
                                  "flash_attn_3": "none", "flash_attn_4": "none", "cudnn_frontend": "none", **facts})
    env.source = "probe"
    monkeypatch.setattr("attndoctor.probe.probe", lambda timeout=20.0, use_cache=True: env)
    return env
