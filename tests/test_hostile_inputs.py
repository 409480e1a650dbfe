"""Hostile paths and files for every command that reads or writes one: pipes, devices, sockets, symlink loops, folders,
unreadable and huge files, outputs that name an input, settings that cannot be read, a HOME that is not there. Each
ends as exit 2 and one line that names the path and what it is, or as the right answer where the input is fine."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

from conftest import fake_probe

ROOT = os.geteuid() == 0
CONFIG = {"hdim": 64, "heads": 8, "seqlen": 128, "dtype": "bf16"}
MACHINE = ["--gpu", "H100", "--torch", "2.6.0"]


def _blocked(signum, frame):
    raise TimeoutError("attndoctor blocked on a hostile input")


def _address_space() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))


@pytest.fixture()
def cli(cli):
    """The in-process command line with watchdogs: a call that blocks (a FIFO opened) fails the test instead of
    hanging it, again every 5 s should attndoctor swallow the first alarm, and one that reads without end (/dev/zero)
    runs out of a 2 GiB allowance instead of the machine's memory."""

    def run(*args):
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = _address_space() + (2 << 30) if Path("/proc/self/status").exists() else None
        previous = signal.signal(signal.SIGALRM, _blocked)
        signal.setitimer(signal.ITIMER_REAL, 60, 5)
        try:
            if limit is not None and (hard == resource.RLIM_INFINITY or limit < hard):
                resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
            return cli(*args)
        finally:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    return run


def one_line_error(result: tuple[int, str, str], *words: str) -> str:
    code, _, err = result
    assert code == 2, (code, err)
    assert err.startswith("attndoctor: error: ") and err.count("\n") == 1 and err.endswith("\n"), err
    for word in words:
        assert word in err, (word, err)
    return err


# ---------------------------------------------------------------- what a path can be instead of a file


def fifo(tmp: Path) -> str:
    path = tmp / "in.json"
    os.mkfifo(path)
    return str(path)


def dev_zero(tmp: Path) -> str:
    return "/dev/zero"


def dev_null(tmp: Path) -> str:
    return "/dev/null"


def link_to_zero(tmp: Path) -> str:
    path = tmp / "zero.json"
    path.symlink_to("/dev/zero")
    return str(path)


def loop(tmp: Path) -> str:
    a, b = tmp / "a.json", tmp / "b.json"
    a.symlink_to(b)
    b.symlink_to(a)
    return str(a)


def folder(tmp: Path) -> str:
    path = tmp / "dir.json"
    path.mkdir()
    return str(path)


def huge(tmp: Path) -> str:
    path = tmp / "big.json"
    with open(path, "wb") as handle:
        handle.truncate(65 << 20)  # sparse: no data is written
    return str(path)


def dangling(tmp: Path) -> str:
    path = tmp / "gone.json"
    path.symlink_to(tmp / "nowhere.json")
    return str(path)


def unix_socket(tmp: Path) -> str:
    path = tmp / "s.json"
    if len(str(path)) > 100:
        pytest.skip("temporary folder too deep for a socket path")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
    return str(path)


def unreadable(tmp: Path) -> str:
    if ROOT:
        pytest.skip("root reads every file")
    path = tmp / "secret.json"
    path.write_text(json.dumps(CONFIG))
    path.chmod(0)
    return str(path)


BLOCK_EXPERIMENTAL = 60
"""A block major number reserved for local and experimental use (Linux devices.txt): no driver answers it, so even an
attndoctor that wrongly opened the node could neither read nor write a disk."""


def block_device(tmp: Path) -> str:
    path = tmp / "disk.json"
    try:
        os.mknod(path, stat.S_IFBLK | 0o600, os.makedev(BLOCK_EXPERIMENTAL, 0))
    except (OSError, AttributeError):
        pytest.skip("cannot make a device node here")
    return str(path)


NOT_FILES: list[tuple[Callable[[Path], str], str]] = [
    (fifo, "pipe (FIFO)"), (dev_zero, "character device"), (dev_null, "character device"),
    (link_to_zero, "character device"), (loop, "symlink loop"), (folder, "folder"), (huge, "larger than 64 MiB"),
    (dangling, "does not exist"), (unix_socket, "socket"), (unreadable, "permission denied"),
    (block_device, "block device"),
]

FILE_OPTIONS = {
    "explain --config-file": ["explain", "--config-file"],
    "explain --model": ["explain", "--model"],
    "explain --env-file": ["explain", "--hdim", "64", "--env-file"],
    "explain --project": ["explain", "--hdim", "64", "--project"],
    "why --log": ["why", "--no-here", "--log"],
    "why --env-file": ["why", "--no-here", "No available kernel. Aborting execution.", "--env-file"],
    "check --config-file": ["check", "--config-file"],
    "verify --model": ["verify", "--model"],
    "bench --config-file": ["bench", "--config-file"],
    "fleet --config-file": ["fleet", "--config-file"],
}


@pytest.mark.parametrize("make, words", NOT_FILES, ids=[m.__name__ for m, _ in NOT_FILES])
@pytest.mark.parametrize("option", list(FILE_OPTIONS))
def test_a_file_option_given_what_is_not_a_readable_file(cli, tmp_path, option, make, words):
    path = make(tmp_path)
    one_line_error(cli(*FILE_OPTIONS[option], path), path, words)


FOLDER_OPTIONS = {
    "explain --rules-dir": ["explain", "--hdim", "64", "--rules-dir", "{}"],
    "rules list --rules-dir": ["rules", "list", "--rules-dir", "{}"],
    "rules lint --rules-dir": ["rules", "lint", "--rules-dir", "{}"],
    "trace --rules-dir": ["trace", "--rules-dir", "{}", "--", "program.py"],
}


def regular_file(tmp: Path) -> str:
    path = tmp / "rules.toml"
    path.write_text("")
    return str(path)


def missing(tmp: Path) -> str:
    return str(tmp / "no-such-rules")


NOT_FOLDERS: list[tuple[Callable[[Path], str], str]] = [
    (fifo, "pipe (FIFO)"), (dev_zero, "character device"), (loop, "symlink loop"), (dangling, "does not exist"),
    (regular_file, "is a file, not a rules folder"), (missing, "no such rules folder"), (unix_socket, "socket"),
]


@pytest.mark.parametrize("make, words", NOT_FOLDERS, ids=[m.__name__ for m, _ in NOT_FOLDERS])
@pytest.mark.parametrize("option", list(FOLDER_OPTIONS))
def test_a_folder_option_given_what_is_not_a_folder(cli, tmp_path, option, make, words):
    path = make(tmp_path)
    one_line_error(cli(*[a.format(path) for a in FOLDER_OPTIONS[option]]), path, words)


@pytest.mark.parametrize("make, words", [(fifo, "pipe (FIFO)"), (folder, "folder"), (link_to_zero, "character device"),
                                         (loop, "symlink loop")], ids=["fifo", "folder", "link_to_zero", "loop"])
def test_a_rule_file_inside_the_rules_folder_that_is_not_a_file(cli, tmp_path, make, words):
    rules = tmp_path / "rules"
    rules.mkdir()
    if make is loop:
        (rules / "bad.toml").symlink_to(rules / "bad.toml")
    else:
        os.rename(make(tmp_path), rules / "bad.toml")
    one_line_error(cli("rules", "list", "--rules-dir", str(rules)), "bad.toml", words)


PROGRAMS: list[tuple[Callable[[Path], str], str]] = [
    (fifo, "pipe (FIFO)"), (folder, "is a folder"), (loop, "symlink loop"), (dangling, "does not exist"),
]


@pytest.mark.parametrize("make, words", PROGRAMS, ids=[m.__name__ for m, _ in PROGRAMS])
def test_trace_given_a_program_that_is_not_a_file(cli, tmp_path, make, words):
    made = Path(make(tmp_path))
    program = made.with_name("train.py")
    if make is loop:
        program.symlink_to(program)
    else:
        os.rename(made, program)
    one_line_error(cli("trace", "--", str(program)), str(program), words)


# ---------------------------------------------------------------- files that are fine reached in odd ways


def write_config(tmp: Path, name: str = "c.json") -> Path:
    path = tmp / name
    path.write_text(json.dumps(CONFIG))
    return path


def test_a_symlink_to_a_config_file_is_followed(cli, tmp_path):
    link = tmp_path / "link.json"
    link.symlink_to(write_config(tmp_path))
    code, out, err = cli("explain", "--config-file", str(link), *MACHINE, "--format", "json")
    assert code in (0, 1) and err == "" and json.loads(out)["results"][0]["config"]["hdim"] == 64


def test_a_symlinked_model_folder_is_followed(cli, tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 512,
                                                   "num_attention_heads": 8}))
    link = tmp_path / "link"
    link.symlink_to(model)
    code, out, err = cli("explain", "--model", str(link), *MACHINE, "--format", "json")
    assert code in (0, 1) and err == "" and json.loads(out)["results"][0]["config"]["hdim"] == 64


def test_env_file_from_standard_input_that_is_a_file(tmp_path):
    env = tmp_path / "env.json"
    env.write_text(json.dumps({"schema_version": 1, "environment": {"gpu": "H100", "versions": {"torch": "2.6.0"}}}))
    with open(env) as stdin:
        proc = subprocess.run([sys.executable, "-m", "attndoctor", "explain", "--hdim", "64", "--env-file",
                               "/dev/stdin", "--format", "json"], stdin=stdin, capture_output=True, text=True,
                              timeout=120)
    assert proc.returncode in (0, 1) and proc.stderr == "", proc.stderr
    assert json.loads(proc.stdout)["environment"]["gpu"].startswith("H100")


def test_env_file_from_a_pipe_is_named_a_pipe(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "attndoctor", "explain", "--hdim", "64", "--env-file",
                           "/dev/stdin"], input="{}", capture_output=True, text=True, timeout=120)
    one_line_error((proc.returncode, proc.stdout, proc.stderr), "/dev/stdin", "pipe (FIFO)", "not an env file")


def test_standard_input_that_never_ends_is_cut_at_the_cap():
    with open("/dev/zero", "rb") as zero:
        proc = subprocess.run([sys.executable, "-m", "attndoctor", "why", "--no-here", "-"], stdin=zero,
                              capture_output=True, text=True, timeout=120)
    one_line_error((proc.returncode, proc.stdout, proc.stderr), "standard input", "larger than 64 MiB")


@pytest.mark.parametrize("path", ["", " "])
@pytest.mark.parametrize("option", ["explain --config-file", "explain --model", "explain --env-file",
                                    "explain --project", "why --log", "why --env-file"])
def test_an_empty_path(cli, option, path):
    one_line_error(cli(*FILE_OPTIONS[option], path), "empty path")


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf"])
def test_why_takes_the_timeout_every_command_takes(cli, value):
    one_line_error(cli("why", "--here", "No available kernel.", "--timeout", value), "--timeout", "above 0")


def test_a_huge_sparse_jsonl_line_is_refused_at_the_cap(cli, tmp_path):
    path = tmp_path / "configs.jsonl"
    with open(path, "wb") as handle:
        handle.truncate(65 << 20)
    one_line_error(cli("explain", "--config-file", str(path)), f"{path}:1", "longer than 64 MiB")


def test_a_binary_config_file(cli, tmp_path):
    path = tmp_path / "c.json"
    path.write_bytes(bytes(range(256)) * 4)
    one_line_error(cli("explain", "--config-file", str(path)), str(path), "not a text file")


# ---------------------------------------------------------------- an output never replaces an input


def same_file(tmp: Path, target: Path) -> str:
    return str(target)


def symlink_alias(tmp: Path, target: Path) -> str:
    link = tmp / "alias.json"
    link.symlink_to(target)
    return str(link)


def hard_link(tmp: Path, target: Path) -> str:
    link = tmp / "hard.json"
    os.link(target, link)
    return str(link)


ALIASES = [same_file, symlink_alias, hard_link]


@pytest.mark.parametrize("alias", ALIASES, ids=[a.__name__ for a in ALIASES])
def test_output_onto_the_config_file(cli, tmp_path, alias):
    config = write_config(tmp_path)
    before = config.read_text()
    one_line_error(cli("explain", "--config-file", str(config), *MACHINE, "--output", alias(tmp_path, config)),
                   "--output", "config file this run reads")
    assert config.read_text() == before


def test_output_onto_the_model_config(cli, tmp_path):
    model = tmp_path / "config.json"
    model.write_text(json.dumps({"model_type": "llama", "hidden_size": 512, "num_attention_heads": 8}))
    before = model.read_text()
    one_line_error(cli("explain", "--model", str(tmp_path), *MACHINE, "--output", str(model)), "model config")
    assert model.read_text() == before


def test_output_onto_the_env_file(cli, tmp_path):
    env = tmp_path / "env.json"
    env.write_text(json.dumps({"schema_version": 1, "environment": {"gpu": "H100"}}))
    one_line_error(cli("explain", "--hdim", "64", "--env-file", str(env), "--output", str(env)), "env file")
    assert json.loads(env.read_text())["environment"]["gpu"] == "H100"


def test_output_onto_the_settings_file(cli, tmp_path):
    settings = tmp_path / "attndoctor.toml"
    settings.write_text('require = ["sdpa-math"]\n')
    one_line_error(cli("explain", "--hdim", "64", *MACHINE, "--project", str(settings), "--output", str(settings)),
                   "settings file")
    assert settings.read_text() == 'require = ["sdpa-math"]\n'


def test_output_onto_the_log(cli, tmp_path):
    log = tmp_path / "train.log"
    log.write_text("RuntimeError: No available kernel. Aborting execution.\n")
    one_line_error(cli("why", "--no-here", "--log", str(log), "--output", str(log)), "log file")
    assert "No available kernel" in log.read_text()


def test_check_output_onto_its_config_file(cli, tmp_path, monkeypatch):
    fake_probe(monkeypatch, gpu="H100")
    config = write_config(tmp_path)
    one_line_error(cli("check", "--config-file", str(config), "--output", str(config), "--format", "json"),
                   "config file")
    assert json.loads(config.read_text()) == CONFIG


def test_github_step_summary_onto_the_config_file(cli, tmp_path, monkeypatch):
    config = write_config(tmp_path)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(config))
    one_line_error(cli("explain", "--config-file", str(config), *MACHINE, "--format", "github"),
                   "GITHUB_STEP_SUMMARY")
    assert json.loads(config.read_text()) == CONFIG


def test_verify_record_onto_its_config_file(cli, tmp_path, monkeypatch):
    pytest.importorskip("torch")
    fake_probe(monkeypatch, gpu="H100")
    monkeypatch.setenv("ATTNDOCTOR_VERIFY_DEVICE", "cpu")
    config = write_config(tmp_path)
    one_line_error(cli("verify", "--config-file", str(config), "--backend", "sdpa-math", "--record", str(config)),
                   "--record", "config file")
    assert json.loads(config.read_text()) == CONFIG


def test_output_onto_a_pipe_nobody_reads(cli, tmp_path):
    path = fifo(tmp_path)
    one_line_error(cli("explain", "--hdim", "64", *MACHINE, "--output", path), "--output", "nobody reads")


def test_output_onto_a_pipe_that_is_read(cli, tmp_path):
    path = fifo(tmp_path)
    # the read end is open before attndoctor opens the pipe (a reader thread that had not reached its open() yet
    # raced the check), and a thread drains it while attndoctor writes more than the pipe's buffer holds
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    chunks: list[bytes] = []
    written = threading.Event()

    def drain() -> None:
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:  # the writer is there but has not written yet
                chunk = None
            if chunk:
                chunks.append(chunk)
            elif chunk == b"" and written.is_set():  # no writer and nothing left after attndoctor returned
                return
            else:
                time.sleep(0.005)

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        code, _, err = cli("explain", "--hdim", "64", *MACHINE, "--output", path, "--format", "json")
    finally:
        written.set()
        reader.join(30)
        os.close(fd)
    assert code in (0, 1) and err == "" and json.loads(b"".join(chunks))["schema_version"] == 1


@pytest.mark.parametrize("make, words", [(loop, "symlink loop"), (unix_socket, "socket"),
                                         (block_device, "block device")],
                         ids=["loop", "socket", "block_device"])
@pytest.mark.parametrize("command", [["explain", "--hdim", "64", *MACHINE, "--output", "{}"],
                                     ["why", "--no-here", "No available kernel.", "--output", "{}"],
                                     ["trace", "--output", "{}", "--", "program.py"],
                                     ["trace", "--record", "{}", "--", "program.py"]],
                         ids=["explain", "why", "trace-output", "trace-record"])
def test_output_onto_what_is_not_a_file(cli, tmp_path, command, make, words):
    path = make(tmp_path)
    one_line_error(cli(*[a.format(path) for a in command]), path, words)


def test_output_onto_the_null_device_is_fine(cli):
    code, out, err = cli("explain", "--hdim", "64", *MACHINE, "--output", "/dev/null")
    assert code in (0, 1) and out == "" and err == ""


# ---------------------------------------------------------------- keys given twice, tables that are not tables


@pytest.mark.parametrize("name, text, option", [
    ("c.json", '{"hdim": 64, "heads": 8, "hdim": 128}', "--config-file"),
    ("c.json", '[{"hdim": 64}, {"heads": 8, "heads": 16}]', "--config-file"),
    ("c.jsonl", '{"hdim": 64}\n{"hdim": 64, "hdim": 32}\n', "--config-file"),
    ("config.json", '{"model_type": "llama", "hidden_size": 512, "num_attention_heads": 8, '
                    '"num_attention_heads": 16}', "--model"),
    ("env.json", '{"schema_version": 1, "environment": {"gpu": "H100", "gpu": "A100"}}', "--env-file"),
], ids=["json-object", "json-list-item", "jsonl-line", "model", "env-file"])
def test_a_key_given_twice_in_json(cli, tmp_path, name, text, option):
    path = tmp_path / name
    path.write_text(text)
    args = ["explain", option, str(path)] if option != "--env-file" else ["explain", "--hdim", "64", option, str(path)]
    one_line_error(cli(*args), str(path), "duplicate key")


def test_a_key_given_twice_in_toml(cli, tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("[[config]]\nhdim = 64\nhdim = 128\n")
    one_line_error(cli("explain", "--config-file", str(path)), str(path), "not valid TOML")


@pytest.mark.parametrize("text, words", [
    ("config = 5\n", ["config", "[[config]] tables", "a number"]),
    ('config = "llama"\n', ["config", "[[config]] tables", "text"]),
    ("config = [1, 2]\n", ["config", "[[config]] tables"]),
    ("config = true\n", ["config", "true/false"]),
], ids=["number", "text", "list-of-numbers", "bool"])
def test_a_toml_config_that_is_not_tables(cli, tmp_path, text, words):
    path = tmp_path / "c.toml"
    path.write_text(text)
    one_line_error(cli("explain", "--config-file", str(path)), str(path), *words)


# ---------------------------------------------------------------- settings files are read, never skipped


@pytest.mark.parametrize("text, words", [
    ("[tool]\nattndoctor = 5\n", ["tool.attndoctor", "a table of settings", "a number"]),
    ('[tool]\nattndoctor = "yes"\n', ["tool.attndoctor", "a table of settings", "text"]),
    ('tool = 5\n[project]\ndependencies = ["attndoctor"]\n', ["tool", "a table", "a number"]),
    ("[tool.attndoctor]\nconfig = 5\n", ["config", "[[config]] tables"]),
    ("[tool.attndoctor]\nrequire = 5\n", ["require", "list of text"]),
], ids=["attndoctor-number", "attndoctor-text", "tool-number", "config-number", "require-number"])
def test_pyproject_settings_that_are_not_a_table(cli, tmp_path, monkeypatch, text, words):
    (tmp_path / "pyproject.toml").write_text(text)
    monkeypatch.chdir(tmp_path)
    one_line_error(cli("explain", "--hdim", "64", *MACHINE), "pyproject.toml", *words)


def test_a_pyproject_that_only_names_attndoctor_as_a_dependency_is_no_settings_file(cli, tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["attndoctor"]\n')
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("explain", "--hdim", "64", *MACHINE, "--format", "json")
    assert code in (0, 1) and err == "" and json.loads(out)["results"][0]["config"]["hdim"] == 64


SETTINGS_KINDS: list[tuple[Callable[[Path], str], str]] = [
    (folder, "is a folder"), (loop, "symlink loop"), (fifo, "pipe (FIFO)"), (dangling, "does not exist"),
    (link_to_zero, "character device"), (unreadable, "permission denied"), (huge, "larger than 64 MiB"),
]


@pytest.mark.parametrize("make, words", SETTINGS_KINDS, ids=[m.__name__ for m, _ in SETTINGS_KINDS])
@pytest.mark.parametrize("name", ["attndoctor.toml", "pyproject.toml"])
def test_a_settings_file_in_the_folder_that_cannot_be_read(cli, tmp_path, monkeypatch, name, make, words):
    target = tmp_path / name
    if make is loop:
        target.symlink_to(target)
    else:
        os.rename(make(tmp_path), target)
    monkeypatch.chdir(tmp_path)
    one_line_error(cli("explain", "--hdim", "64", *MACHINE), name, words)


@pytest.mark.parametrize("command", [["check"], ["verify"], ["bench"], ["fleet"]])
def test_every_command_reads_the_settings_it_finds(cli, tmp_path, monkeypatch, command):
    (tmp_path / "attndoctor.toml").mkdir()
    monkeypatch.chdir(tmp_path)
    one_line_error(cli(*command), "attndoctor.toml", "is a folder")


# ---------------------------------------------------------------- a HOME that is not there


def _fresh_run(cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("HOME", "XDG_CACHE_HOME", "ATTNDOCTOR_NO_CACHE")}
    return subprocess.run([sys.executable, "-m", "attndoctor", "explain", "--hdim", "64", *MACHINE],
                          cwd=cwd, env={**base, **env}, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("home", ["missing/home", "relative", "unset", "empty"])
def test_a_home_that_is_not_a_folder_creates_nothing(tmp_path, home):
    work = tmp_path / "work"
    work.mkdir()
    env = {} if home == "unset" else {"HOME": "" if home == "empty" else
                                      (str(tmp_path / home) if home.startswith("missing") else home)}
    proc = _fresh_run(work, env)
    assert proc.returncode in (0, 1) and proc.stderr == "", proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"] and list(work.iterdir()) == []


def test_a_relative_xdg_cache_home_is_ignored(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    proc = _fresh_run(work, {"HOME": str(home), "XDG_CACHE_HOME": "cache"})
    assert proc.returncode in (0, 1) and proc.stderr == ""
    assert list(work.iterdir()) == [] and (home / ".cache" / "attndoctor").is_dir()


def test_an_unwritable_home_skips_the_cache(tmp_path):
    if ROOT:
        pytest.skip("root writes everywhere")
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o500)
    try:
        proc = _fresh_run(tmp_path, {"HOME": str(home)})
    finally:
        home.chmod(0o700)
    assert proc.returncode in (0, 1) and proc.stderr == "" and list(home.iterdir()) == []


def test_a_cache_file_that_is_a_pipe_is_not_read(tmp_path):
    cache = tmp_path / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    (cache / "attndoctor" / "toml").mkdir(parents=True)
    first = _fresh_run(tmp_path, {"XDG_CACHE_HOME": str(cache)})
    assert first.returncode in (0, 1)
    for entry in (cache / "attndoctor").rglob("*"):
        if entry.is_file():
            entry.unlink()
            os.mkfifo(entry)
    again = _fresh_run(tmp_path, {"XDG_CACHE_HOME": str(cache)})
    assert again.returncode == first.returncode and again.stdout == first.stdout and again.stderr == ""
