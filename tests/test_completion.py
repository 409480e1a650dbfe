"""Shell completion: --install-completion / --show-completion for bash, zsh and fish, answered through the command
line's own entry point, and never built by a run that names its command (start-up)."""

from __future__ import annotations

from pathlib import Path

import pytest

from attndoctor.cli import COMPLETE_VAR, build_app


@pytest.fixture
def shells(monkeypatch):
    """Name the shell on the command line instead of detecting the parent process's."""
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")


def test_the_root_help_offers_completion_and_commands_do_not(cli):
    code, out, _ = cli("--help")
    assert code == 0 and "--install-completion" in out and "--show-completion" in out
    code, out, _ = cli("explain", "--help")
    assert code == 0 and "--install-completion" not in out


@pytest.mark.parametrize(("shell", "marker"), [("bash", "complete_bash"), ("zsh", "complete_zsh"),
                                                ("fish", "complete_fish")])
def test_show_completion_prints_the_script_of_each_shell(cli, shells, shell, marker):
    code, out, err = cli("--show-completion", shell)
    assert code == 0 and err == ""
    assert f"{COMPLETE_VAR}={marker}" in out and "attndoctor" in out


def test_install_completion_writes_the_script_and_sources_it(cli, shells, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    code, out, _ = cli("--install-completion", "bash")
    assert code == 0 and "bash completion installed" in out
    script = tmp_path / ".bash_completions" / "attndoctor.sh"
    assert COMPLETE_VAR in script.read_text() and str(script) in (tmp_path / ".bashrc").read_text()


def complete(cli, monkeypatch, shell: str, words: str) -> list[str]:
    """What the installed script gets when the shell asks for completions of `words` (the word being typed last)."""
    monkeypatch.setenv(COMPLETE_VAR, f"complete_{shell}")
    if shell == "bash":
        monkeypatch.setenv("COMP_WORDS", words)
        monkeypatch.setenv("COMP_CWORD", str(len(words.split()) - 1))
    else:
        monkeypatch.setenv("_TYPER_COMPLETE_ARGS", words)
        monkeypatch.setenv("_TYPER_COMPLETE_WORD_TO_COMPLETE", words.split()[-1])
        monkeypatch.setenv("_TYPER_COMPLETE_FISH_ACTION", "get-args")
    code, out, err = cli()
    assert code == 0, err
    return out.splitlines()


def test_bash_completes_commands_and_options(cli, monkeypatch):
    assert complete(cli, monkeypatch, "bash", "attndoctor expl") == ["explain"]
    assert set(complete(cli, monkeypatch, "bash", "attndoctor explain --hd")) == {"--hdim", "--hdim-v"}


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_complete_options(cli, monkeypatch, shell):
    got = "\n".join(complete(cli, monkeypatch, shell, "attndoctor explain --summ"))
    assert "--summary" in got and "--hdim" not in got


def test_a_named_command_never_builds_completion(cli, monkeypatch):
    """The completion options cost start-up time; `explain` runs without them."""
    import typer.main

    def refuse(*args, **kwargs):
        raise AssertionError("completion options built for a named command")

    assert build_app("explain")._add_completion is False and build_app()._add_completion is True
    monkeypatch.setattr(typer.main, "get_install_completion_arguments", refuse)
    code, out, _ = cli("explain", "--hdim", "128", "--summary")
    assert code == 0 and out.splitlines()[-1] == "gate passed"
