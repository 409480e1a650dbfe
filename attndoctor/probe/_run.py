"""Shared plumbing of the probe: notes, Python subprocesses with a hard timeout, threads with a deadline."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

MARKER = "ATTNDOCTOR_JSON:"
"""Snippets print their result as one line `MARKER + json`, so stray output of imported libraries is harmless."""

MAX_MESSAGE = 400


def note(kind: str, severity: str, message: str) -> dict[str, str]:
    """One entry of Environment.notes; severity is error, warning or info."""
    return {"kind": kind, "severity": severity, "message": _clip(message)}


def _clip(text: str, limit: int = MAX_MESSAGE) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class PyResult:
    """What a Python subprocess did: exit code (None when it was killed for the timeout) and its output."""

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.timed_out and not self.error and self.returncode == 0

    def payload(self) -> dict[str, Any] | None:
        """The JSON the snippet printed after MARKER (the last such line), or None."""
        for line in reversed(self.stdout.splitlines()):
            if line.startswith(MARKER):
                try:
                    value = json.loads(line[len(MARKER):])
                except ValueError:
                    return None
                return value if isinstance(value, dict) else None
        return None

    def failure(self) -> str:
        """One line saying why it failed: the exception's last line, the signal, or the spawn error."""
        if self.error:
            return self.error
        if self.timed_out:
            return "timed out"
        line = last_meaningful_line(self.stderr)
        if self.returncode is not None and self.returncode < 0:
            try:
                name = signal.Signals(-self.returncode).name
            except ValueError:
                name = f"signal {-self.returncode}"
            return f"crashed with {name}" + (f" ({line})" if line else "")
        return line or f"exited with status {self.returncode}"


def last_meaningful_line(stderr: str) -> str:
    """The line that says what went wrong: the final unindented line of a traceback, else the last non-blank one."""
    lines = [ln.rstrip() for ln in stderr.splitlines() if ln.strip()]
    lines = [ln for ln in lines if set(ln.strip()) - set("^~ ")]  # drop caret markers under source lines
    for ln in reversed(lines):
        if not ln[:1].isspace() and not ln.startswith("Traceback (most recent call last)"):
            return _clip(ln)
    return _clip(lines[-1].strip()) if lines else ""


def run_python(code: str, args: list[str] | tuple[str, ...] = (), *, timeout: float,
               env: dict[str, str] | None = None) -> PyResult:
    """Run `python -c code args...` with this interpreter, killing its whole process group after `timeout`.

    Runs in a neutral working directory so that a source checkout in the user's folder (a flash-attention
    clone, say) cannot shadow the installed package. Never raises.
    """
    cmd = [sys.executable, "-c", code, *args]
    child_env = dict(os.environ if env is None else env)
    child_env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    child_env["PYTHONIOENCODING"] = "utf-8"
    kwargs: dict[str, Any] = {}
    if os.name == "posix":
        kwargs["start_new_session"] = True
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                cwd=tempfile.gettempdir(), env=child_env, **kwargs)
    except Exception as exc:  # noqa: BLE001 - any failure to start is a fact to report
        return PyResult(None, "", "", error=f"could not start {sys.executable}: {exc}")
    try:
        out, err = proc.communicate(timeout=max(0.1, timeout))
        return PyResult(proc.returncode, _text(out), _text(err))
    except subprocess.TimeoutExpired:
        _kill(proc)
        try:
            out, err = proc.communicate(timeout=2)
        except Exception:  # noqa: BLE001 - a grandchild may hold the pipes; give up on the output
            out, err = b"", b""
        return PyResult(None, _text(out), _text(err), timed_out=True)
    except Exception as exc:  # noqa: BLE001
        _kill(proc)
        return PyResult(None, "", "", error=f"{type(exc).__name__}: {exc}")


def _kill(proc: subprocess.Popen) -> None:
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover - not exercised on Linux
            proc.kill()
    except (ProcessLookupError, PermissionError, OSError):
        try:
            proc.kill()
        except OSError:
            pass


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")


class Part:
    """One probe step running in a daemon thread; `result` is its return value once `done`."""

    def __init__(self, name: str, fn: Callable[[], Any]) -> None:
        self.name = name
        self.result: Any = None
        self.error: BaseException | None = None
        self._fn = fn
        self._thread = threading.Thread(target=self._run, name=f"attndoctor-probe-{name}", daemon=True)

    def _run(self) -> None:
        try:
            self.result = self._fn()
        except BaseException as exc:  # noqa: BLE001 - reported by the caller as a note
            self.error = exc

    def start(self) -> "Part":
        self._thread.start()
        return self

    @property
    def done(self) -> bool:
        return not self._thread.is_alive()

    def wait(self, deadline: float) -> bool:
        """Wait until the part ends or the monotonic `deadline` passes; True if it ended."""
        self._thread.join(max(0.0, deadline - time.monotonic()))
        return self.done
