"""The text a user reads: layout at their width, help texts, the answer to a bare command, and its wording."""

from __future__ import annotations

import pytest

README_CASE = ["explain", "--hdim", "192", "--hdim-v", "128", "--heads", "128", "--seqlen", "4096", "--dtype", "bf16",
               "--train", "--causal", "--gpu", "H100", "--torch", "2.11.0", "--cuda", "13.0", "--cudnn", "9.1.0",
               "--te", "2.3", "--flash-attn", "2.7.3", "--backend", "sdpa-cudnn", "--backend", "sdpa-flash",
               "--backend", "sdpa-efficient", "--backend", "te-flash", "--backend", "te-fused"]


@pytest.mark.parametrize("columns", ["60", "80", "100"])
def test_columns_sets_the_width_of_a_piped_report_and_ids_stay_whole(cli, monkeypatch: pytest.MonkeyPatch,
                                                                      columns: str) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    _, out, _ = cli(*README_CASE)
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= int(columns)
    words = {w for line in lines for w in line.split()}
    assert {"[SDPA-CUDNN-HEAD-DIM-210]", "[SDPA-FLASH-HEAD-DIM]", "[TE-FLASH-MLA]",
            "'transformer-engine[pytorch]>=2.17.0')"} <= words


def _commands():
    import typer.main

    from attndoctor.cli import build_app

    def walk(command, path):
        yield path, command
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                yield from walk(sub, [*path, name])

    return list(walk(typer.main.get_command(build_app()), []))


@pytest.mark.parametrize(("path", "command"), _commands(), ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_every_help_text_is_shown_whole(cli, monkeypatch: pytest.MonkeyPatch, path, command) -> None:
    """rich reads [word] in a help text as markup and drops it unless it is escaped."""
    monkeypatch.setenv("COLUMNS", "1000")
    _, out, _ = cli(*path, "--help")
    shown = " ".join(out.replace("│", " ").split())
    texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
    for text in texts:
        expected = " ".join(text.replace("\\[", "[").split("\n\n")[0].split())
        assert expected in shown, expected


@pytest.mark.parametrize("args", [[], ["--gpu", "H100", "--torch", "2.11"], ["--format", "json"], ["--train"],
                                  ["--infer", "--gpu", "H100"]])
def test_explain_without_a_config_hints_and_exits_2(cli, tmp_path, monkeypatch: pytest.MonkeyPatch, args) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("explain", *args)
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("attndoctor: error: no config to explain")
    assert all(flag in lines[0] for flag in ("--hdim", "--model", "--config-file"))


def test_training_on_one_backend_is_a_question(cli, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, _ = cli("explain", "--train", "--backend", "flash-attn-3")
    assert code == 0 and "flash-attn-3" in out  # every verdict depends on the GPU: nothing fails the gate


def test_explain_with_only_settings_models_needs_no_hint(cli, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil
    from pathlib import Path

    shutil.copytree(Path(__file__).parent / "fixtures" / "models" / "Meta-Llama-3-8B", tmp_path / "llama")
    (tmp_path / "attndoctor.toml").write_text('models = ["llama"]\n')
    monkeypatch.chdir(tmp_path)
    code, out, _ = cli("explain", "--gpu", "H100")
    assert code in (0, 1) and "llama: d=128 h=32/8kv" in out
