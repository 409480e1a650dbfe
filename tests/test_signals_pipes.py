"""Signals, closed streams, hostile text and option ranges: every command ends with an exit code of the table
(0, 1, 2, 130 on Ctrl-C, 141 when stdout's reader went away), whatever stream is closed, and never a traceback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures"
ATTNDOCTOR = [sys.executable, "-m", "attndoctor"]
CASE = ["explain", "--hdim", "128", "--heads", "16", "--seqlen", "2048", "--dtype", "bf16", "--train",
        "--gpu", "H100", "--cudnn", "9.19.0", "--torch", "2.11.0"]
FAILING_GATE = ["explain", "--hdim", "512", "--heads", "16", "--seqlen", "2048", "--dtype", "bf16", "--train",
                "--gpu", "H100", "--torch", "2.11.0", "--require", "sdpa-flash"]
BAD_INPUT = ["explain", "--hdim", "-3"]
ESC = "\x1b]0;owned\x07\x1b[2J\x1b[31m"


def closed_pipe(*args: str, stdin: object = subprocess.DEVNULL) -> subprocess.CompletedProcess:
    """Run with stdout a pipe whose reader is already gone (`| head -c0` that exited first)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([*ATTNDOCTOR, *args], stdout=write, stderr=subprocess.PIPE, stdin=stdin, text=True,
                              timeout=180)
    finally:
        os.close(write)


def shell(line: str) -> subprocess.CompletedProcess:
    """A shell line where `A` is the command line (for closing streams as a user's shell does)."""
    a = " ".join(f"'{part}'" for part in ATTNDOCTOR)
    return subprocess.run(["bash", "-c", line.replace("A ", a + " ", 1)], capture_output=True, text=True, timeout=180)


def quiet(err: str) -> None:
    assert "Traceback" not in err and "Exception" not in err and "internal error" not in err, err


# ---------------------------------------------------------------- closed pipes: 141, quietly, in every command


@pytest.mark.parametrize("args", [
    CASE, [*CASE, "--format", "json"], [*CASE, "--format", "jsonl"], [*CASE, "--format", "sarif"],
    [*CASE, "--format", "junit"], [*CASE, "--format", "github"], FAILING_GATE,
    ["why", "--no-here", "CUDA error: no kernel image is available for execution on the device"],
    ["rules", "list"], ["rules", "show", "SDPA-CUDNN-DTYPE"], ["rules", "matrix"], ["--help"], ["explain", "--help"],
    [], ["rules"], ["--version"],
], ids=lambda a: " ".join(a[:1] + a[-2:]) or "bare")
def test_a_closed_pipe_ends_with_141_and_nothing_on_stderr(args):
    proc = closed_pipe(*args)
    assert proc.returncode == 141, (proc.returncode, proc.stderr)
    assert proc.stderr == ""


def test_check_on_a_closed_pipe():
    proc = closed_pipe("check", "--hdim", "128", "--heads", "8", "--seqlen", "512", "--dtype", "bf16")
    assert proc.returncode == 141 and proc.stderr == "", (proc.returncode, proc.stderr)


def test_fleet_on_a_closed_pipe():
    pytest.importorskip("torch")  # without torch fleet exits 2 before it writes (tests/test_fleet.py)
    proc = closed_pipe("fleet", "--hdim", "128", "--heads", "8", "--seqlen", "512", "--dtype", "bf16")
    assert proc.returncode == 141 and proc.stderr == "", (proc.returncode, proc.stderr)


def test_head_1_in_a_pipefail_shell_gives_141_not_the_gate_code():
    # rules list writes ~170 kB: far more than a pipe holds, so head exits while it still writes
    proc = shell("set -o pipefail; A rules list | head -1")
    assert proc.returncode == 141, (proc.returncode, proc.stderr)
    assert proc.stdout.count("\n") == 1
    quiet(proc.stderr)


@pytest.mark.parametrize("args", [BAD_INPUT, ["verify", "--timeout", "0"], ["rules", "show", "NO-SUCH-RULE"]])
def test_bad_input_on_a_closed_pipe_is_still_2(args):
    proc = closed_pipe(*args)
    assert proc.returncode == 2 and proc.stderr.startswith("attndoctor: error: ") and proc.stderr.count("\n") == 1


# ---------------------------------------------------------------- closed stderr, closed stdout


@pytest.mark.parametrize("redirect", ["2>&-", "2>/dev/full"])
@pytest.mark.parametrize("args,code", [(BAD_INPUT, 2), (FAILING_GATE, 1), (CASE, 0), (["bench", "--runs", "0"], 2),
                                       (["why", "--no-here"], 2)])
def test_exit_codes_hold_with_stderr_closed_or_full(redirect, args, code):
    if redirect.endswith("full") and not Path("/dev/full").exists():
        pytest.skip("needs /dev/full")
    proc = shell(f"A {' '.join(args)} >/dev/null </dev/null {redirect}")
    assert proc.returncode == code


@pytest.mark.parametrize("args,code", [(BAD_INPUT, 2), (FAILING_GATE, 1), (CASE, 0)])
def test_exit_codes_hold_with_stderr_a_pipe_nobody_reads(args, code):
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([*ATTNDOCTOR, *args], stdout=subprocess.PIPE, stderr=write, text=True, timeout=120)
    finally:
        os.close(write)
    assert proc.returncode == code


def test_closed_stdout_is_an_unusable_output():
    proc = shell(f"A {' '.join(CASE)} >&-")
    assert proc.returncode == 2
    assert proc.stderr == "attndoctor: error: standard output: cannot write (bad file descriptor)\n"


def test_closed_stdout_with_output_file_keeps_the_gate_code(tmp_path):
    target = tmp_path / "r.json"
    proc = shell(f"A {' '.join(FAILING_GATE)} --format json --output {target} >&-")
    assert proc.returncode == 1 and json.loads(target.read_text())["gate"]["passed"] is False


def test_closed_stdin_is_no_text_to_read():
    proc = shell("A why --no-here <&-")
    assert proc.returncode == 2 and proc.stderr.startswith("attndoctor: error: no text to read")


# ---------------------------------------------------------------- Ctrl-C: 130, one line


def _wait_until_reading(pid: int, limit: float = 60.0) -> None:
    """Until the process sleeps in a pipe read (past its start-up, waiting for stdin)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            if "pipe_read" in Path(f"/proc/{pid}/wchan").read_text():
                return
        except OSError:
            pytest.skip("needs /proc/PID/wchan")
        time.sleep(0.05)
    raise AssertionError("the command never waited for its input")


@pytest.mark.skipif(not Path("/proc/self/wchan").exists(), reason="needs /proc")
def test_ctrl_c_ends_with_130_and_one_line():
    proc = subprocess.Popen([*ATTNDOCTOR, "why", "--no-here", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _wait_until_reading(proc.pid)
        os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C: the whole foreground group
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130 and err == "attndoctor: interrupted\n" and out == ""


def test_ctrl_c_inside_a_command_is_130_in_process(cli, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("attndoctor.services.diagnose_stream", interrupted)
    monkeypatch.setattr("attndoctor.services.diagnose_many", interrupted, raising=False)
    code, out, err = cli(*CASE)
    assert code == 130 and err == "attndoctor: interrupted\n"


PROGRAM = """\
import sys, time
try:
    print("ready", flush=True)
    time.sleep(60)
    sys.exit(3)
except KeyboardInterrupt:
    open(sys.argv[1], "w").write(f"interrupted {time.monotonic()}")
    sys.exit(0)
"""


def test_trace_passes_ctrl_c_to_the_program_waits_for_it_and_exits_130(tmp_path):
    program, mark = tmp_path / "train.py", tmp_path / "mark"
    program.write_text(PROGRAM)
    proc = subprocess.Popen([*ATTNDOCTOR, "trace", "--", str(program), str(mark)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stdout.readline() == "ready\n"
        started = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    word, at = mark.read_text().split()
    assert word == "interrupted", "the program never saw Ctrl-C"
    # The program's own clock (CLOCK_MONOTONIC is one clock for every process): the report that follows its exit
    # takes as long as the machine makes it, and is not what this measures.
    assert float(at) - started < 50, "the program slept on: Ctrl-C did not reach it"
    assert proc.returncode == 130, (proc.returncode, err)
    assert "(exit 0)" in err  # the report of what ran still comes, with the program's own exit status
    quiet(err)


def test_trace_leaves_sigint_to_its_default_in_the_program(tmp_path):
    program = tmp_path / "show.py"
    program.write_text("import signal\nprint(signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n")
    proc = subprocess.run([*ATTNDOCTOR, "trace", "--", str(program)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout == "True\n", (proc.stdout, proc.stderr)


# ---------------------------------------------------------------- bare command


def test_bare_attndoctor_prints_usage_not_an_empty_error():
    proc = subprocess.run(ATTNDOCTOR, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "Usage: attndoctor" in proc.stdout and "explain" in proc.stdout
    assert "error" not in proc.stderr and proc.stderr == ""


def test_bare_subcommand_group_prints_its_usage(cli):
    code, out, err = cli("rules")
    assert code == 2 and "Usage: attndoctor rules" in out and err == ""


# ---------------------------------------------------------------- hostile text


def _config_file(tmp_path: Path, name: str, hdim: int = 128) -> Path:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"name": name, "hdim": hdim, "heads": 8, "seqlen": 512, "dtype": "bf16"}))
    return path


@pytest.mark.parametrize("fmt", ["text", "github"])
def test_escape_sequences_in_a_config_name_reach_no_terminal(cli, tmp_path, fmt):
    # a failing gate, so that the github annotations name the config too
    code, out, err = cli("explain", "--config-file", str(_config_file(tmp_path, f"evil{ESC}name", hdim=512)),
                         "--gpu", "H100", "--torch", "2.11.0", "--require", "sdpa-flash", "--format", fmt)
    assert code == 1 and "\x1b" not in out and "\x07" not in out
    assert "evil\\x1b]0;owned\\x07\\x1b[2J\\x1b[31mname" in out


def test_escape_sequences_in_several_configs_and_the_matrix(cli, tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"name": f"n{i}{ESC}\r\b", "hdim": 64 * (i + 1), "heads": 8, "seqlen": 512,
                                        "dtype": "bf16"}) + "\n" for i in range(3)))
    code, out, err = cli("explain", "--config-file", str(path), "--gpu", "H100")
    assert code in (0, 1) and not any(c in out for c in "\x1b\x07\r\b")
    assert "n0\\x1b]0;owned" in out and "\\r\\x08" in out


def test_json_keeps_the_name_exact(cli, tmp_path):
    name = f"evil{ESC}name\u202e"
    code, out, err = cli("explain", "--config-file", str(_config_file(tmp_path, name)), "--gpu", "H100",
                         "--format", "json")
    assert json.loads(out)["results"][0]["config"]["name"] == name


def test_escape_sequences_in_gpu_names_and_notes_of_an_env_file(cli, tmp_path):
    env = {"source": "probe", "gpu": f"H100 {ESC}", "sm": 90, "gpus": [], "versions": {"torch": "2.6.0"},
           "import_errors": {}, "api": {}, "env_vars": {}, "torch_arch_list": None, "torch_cuda_available": None,
           "cudnn_compiled": None, "no_gpu": False, "notes": [f"note {ESC}"]}
    path = tmp_path / "env.json"
    path.write_text(json.dumps({"environment": env}))
    code, out, err = cli("explain", "--env-file", str(path), "--hdim", "128", "--heads", "8", "--seqlen", "128",
                         "--dtype", "bf16")
    assert code in (0, 1), err
    assert "\x1b" not in out and "\x07" not in out and "H100 \\x1b]0;owned" in out


def test_escape_sequences_in_an_error_line(cli):
    code, out, err = cli("explain", "--gpu", f"H100{ESC}")
    assert code == 2 and "\x1b" not in err and err.count("\n") == 1


def test_shown_escapes_controls_and_keeps_text():
    from attndoctor.console.output import shown

    assert shown("plain ✓ text\nnext") == "plain ✓ text\nnext"
    assert shown("a\x1b[31mb\x07c\x9bd\u202ee\tf\rg") == "a\\x1b[31mb\\x07c\\x9bd\\u202ee\\tf\\rg"
    assert shown("one\ntwo", newlines=False) == "one\\ntwo"


# ---------------------------------------------------------------- one range per option


TIMEOUTS = [("check", "--timeout"), ("verify", "--timeout"), ("bench", "--timeout"), ("why", "--timeout"),
            ("fleet", "--timeout"), ("fleet", "--rank-timeout")]


@pytest.mark.parametrize("command,flag", TIMEOUTS)
@pytest.mark.parametrize("value", ["-1", "0", "-0", "nan", "inf", "-inf", "1e300", "604801"])
def test_every_timeout_refuses_the_same_values_the_same_way(cli, command, flag, value):
    code, out, err = cli(command, flag, value)
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"attndoctor: error: Invalid value for '{flag}': expected a number of seconds above 0 "
                          "and at most 604800 (a week), got "), err


@pytest.mark.parametrize("command,flag", TIMEOUTS)
def test_every_timeout_takes_the_same_good_values(command, flag):
    from attndoctor.cli.options import seconds

    assert seconds(0.5) == 0.5 and seconds(604800.0) == 604800.0
    param = next(p for p in _command(command).params if flag in p.opts)
    assert param.callback is not None and param.callback(None, param, 0.5) == 0.5


def _command(name: str):
    import typer.main

    from attndoctor.cli import build_app

    return typer.main.get_command(build_app(name)).commands[name]


@pytest.mark.parametrize("command,flag,value,low", [
    ("verify", "--repeats", "-1", 0), ("verify", "--seed", "-1", 0), ("bench", "--seed", "-5", 0),
    ("bench", "--runs", "0", 1), ("bench", "--sets", "-1", 0), ("verify", "--jobs", "0", 1),
])
def test_whole_number_options_have_one_range(cli, command, flag, value, low):
    code, out, err = cli(command, flag, value)
    assert code == 2 and err == (f"attndoctor: error: Invalid value for '{flag}': expected a whole number of at "
                                 f"least {low}, got {value}\n")


def test_every_numeric_option_has_a_range_check():
    import typer.main

    from attndoctor.cli import build_app

    stack, numeric, unchecked = [typer.main.get_command(build_app())], [], []
    while stack:
        cmd = stack.pop()
        stack += list(getattr(cmd, "commands", {}).values())
        for p in cmd.params:
            if getattr(p.type, "name", "") in ("int", "integer", "float"):  # typer's own click, or click
                numeric.append(f"{cmd.name} {p.opts[0]}")
                if p.callback is None:
                    unchecked.append(numeric[-1])
    assert len(numeric) >= 10 and unchecked == []


# ---------------------------------------------------------------- docs that match


def test_help_texts_never_break_mid_sentence():
    import typer.main

    from attndoctor.cli import build_app, tidy_help

    app = typer.main.get_command(build_app())
    tidy_help(app)
    texts = []
    stack = [app]
    while stack:
        cmd = stack.pop()
        texts += [cmd.help or "", cmd.short_help or ""] + [getattr(p, "help", None) or "" for p in cmd.params]
        stack += list(getattr(cmd, "commands", {}).values())
    assert all("\n" not in t.replace("\n\n", "") for t in texts)
    assert any("show whether the rules were right" in t for t in texts)


def test_help_listing_shows_whole_sentences():
    proc = subprocess.run([*ATTNDOCTOR, "--help"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0
    verify = next(line for line in proc.stdout.splitlines() if "│ verify" in line)
    assert "show whether the rules were right" in verify


def test_the_readme_names_every_core_dependency():
    import re
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = [re.match(r"[A-Za-z0-9_.-]+", d).group() for d in deps]
    readme = " ".join((ROOT / "README.md").read_text().split())
    sentence = readme[readme.index("The core install needs only"):].split(";")[0]
    assert all(name in sentence for name in names), (names, sentence)


def test_the_readme_says_which_torch_the_suite_is_tested_with():
    import re

    pinned = re.search(r"torch==([0-9.]+)", (ROOT / ".ci" / "run").read_text()).group(1)
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert f"tested with torch {pinned}" in readme and f"'torch=={pinned}'" in readme


def test_one_symbol_per_verdict():
    from attndoctor.report.text import MARK

    symbols = {}
    for status, (symbol, _, _) in MARK.items():
        symbols.setdefault(symbol, []).append(status)
    assert symbols["⚠"] == ["wrong-results"] and symbols["✓!"] == ["known-bug"] and symbols["✓"] == ["supported"]
    docs = (ROOT / "docs" / "output.md").read_text() + (ROOT / "README.md").read_text()
    assert "⚠ runs, known bug" not in docs and "✓! runs, known bug" in docs


def test_known_bug_has_the_same_mark_in_the_table_and_the_matrix(cli):
    args = ["--gpu", "H100", "--torch", "2.11.0", "--cudnn", "9.19.0", "--heads", "1", "--hdim", "64", "--seqlen",
            "704", "--dtype", "bf16", "--mask", "arbitrary", "--train", "--backend", "sdpa-cudnn"]
    code, table, _ = cli("explain", *args)
    assert "✓! runs, known bug" in table and "⚠" not in table


@pytest.mark.parametrize("model,line", [
    ("gemma-2-9b", "assumed dtype fp32 (torch_dtype (float32): the dtype the checkpoint is stored in"),
    ("Qwen2.5-7B", "assumed seqlen 8192 (max_position_embeddings (131072), capped at 8192"),
])
def test_model_assumptions_are_in_the_text_report(cli, model, line):
    code, out, err = cli("explain", "--model", str(FIXTURES / "models" / model), "--gpu", "H100")
    assert line in " ".join(out.split())


def test_no_assumption_line_when_the_model_states_its_values(cli):
    code, out, err = cli("explain", "--model", str(FIXTURES / "models" / "Meta-Llama-3-8B"), "--gpu", "H100")
    assert "assumed" not in out


def test_why_schema_validates_with_plain_jsonschema(cli):
    import jsonschema
    from importlib import resources

    schema = json.loads((resources.files("attndoctor") / "schema" / "why-v1.json").read_text(encoding="utf-8"))
    code, out, _ = cli("why", "--no-here", (FIXTURES / "why" / "te1591_debug.log").read_text(), "--format", "json")
    doc = json.loads(out)
    jsonschema.validate(doc, schema)
    doc["config"] = {"hdim": "x"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, schema)


def test_why_schema_embeds_the_current_report_schema():
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "schema_embed.py"), "--check"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc")
def test_ctrl_c_during_a_parallel_run_leaves_no_worker_traceback(tmp_path):
    path = tmp_path / "many.jsonl"
    path.write_text("".join(json.dumps({"hdim": 64 * (1 + i % 4), "heads": 8, "seqlen": 128 + i, "dtype": "bf16"})
                            + "\n" for i in range(20000)))
    proc = subprocess.Popen([*ATTNDOCTOR, "explain", "--config-file", str(path), "--gpu", "H100", "--format",
                             "jsonl"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env={**os.environ, "ATTNDOCTOR_WORKERS": "2"})
    try:
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(children.read_text().split()) < 2:
            time.sleep(0.05)
        time.sleep(0.5)  # the workers are at work on their first chunks
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130 and err == "attndoctor: interrupted\n", err[:2000]
