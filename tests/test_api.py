"""The Python API: diagnose() takes the CLI's spellings and refuses what it does not know, naming it."""

from __future__ import annotations

import json

import pytest

import attndoctor
from attndoctor.errors import UsageError

CONFIG = {"hdim": 128, "dtype": "bf16", "train": True}


@pytest.mark.parametrize(("key", "package"), [("flash-attn", "flash_attn"), ("flash_attn", "flash_attn"),
                                              ("flash-attn-3", "flash_attn_3"), ("cudnn-frontend", "cudnn_frontend")])
def test_environment_takes_the_flag_spelling(key: str, package: str) -> None:
    report = attndoctor.diagnose(CONFIG, {"gpu": "H100", key: "2.6.3" if "flash" in key else "1.5.0"})
    assert report.environment.versions[package] in ("2.6.3", "1.5.0")


@pytest.mark.parametrize("key", ["flashattn", "flash_attn_2", "GPU", "cudnn_version"])
def test_unknown_environment_key_is_refused_by_name(key: str) -> None:
    with pytest.raises(UsageError, match=rf"unknown environment fact '{key}'; accepted: .*flash_attn"):
        attndoctor.diagnose(CONFIG, {key: "2.6.3"})


def test_one_environment_fact_given_twice_is_refused() -> None:
    with pytest.raises(UsageError, match="'flash-attn' and 'flash_attn' name the same fact"):
        attndoctor.diagnose(CONFIG, {"flash-attn": "2.6.3", "flash_attn": "2.7.0"})


def test_config_takes_the_flag_spelling_and_refuses_unknown_fields() -> None:
    report = attndoctor.diagnose({**CONFIG, "hdim-v": 64, "kv-heads": 2, "heads": 8, "seqlen": 512,
                                  "causal": True}, {"gpu": "H100"})
    config = report.results[0].config
    assert (config.hdim_v, config.kv_heads, config.seqlen_kv, config.mask) == (64, 2, 512, "causal")
    with pytest.raises(UsageError, match=r"unknown config field 'hdimm'; accepted: .*hdim_v.*, seqlen \(.*, causal \("):
        attndoctor.diagnose({**CONFIG, "hdimm": 64}, {"gpu": "H100"})
    with pytest.raises(UsageError, match="'hdim-v' and 'hdim_v' name the same field"):
        attndoctor.diagnose({**CONFIG, "hdim-v": 64, "hdim_v": 128}, {"gpu": "H100"})


def test_a_flag_overrides_the_settings_fact_in_either_spelling(cli, tmp_path, monkeypatch) -> None:
    (tmp_path / "attndoctor.toml").write_text('environment = { gpu = "H100", flash-attn = "2.6.3" }\n')
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("explain", "--hdim", "128", "--flash-attn", "2.7.3", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["environment"]["versions"]["flash_attn"] == "2.7.3"
