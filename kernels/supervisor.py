"""The parent side of the isolation: one worker process for many probes, a timeout per probe, a fresh worker
after a crash, a timeout or a CUDA error. Imports neither torch nor any attention library.
"""

from __future__ import annotations

import collections
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from . import outcomes

WORKER = Path(__file__).resolve().parent / "worker.py"


class WorkerError(RuntimeError):
    """The worker could not be started or stopped answering outside a probe."""


class _Worker:
    """One running worker process with a reader thread for its replies and one for its stderr."""

    def __init__(self, cmd: list[str], env: dict[str, str], cwd: str | None) -> None:
        kwargs: dict[str, Any] = {}
        if os.name == "posix":
            kwargs["start_new_session"] = True
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env, cwd=cwd, **kwargs)
        self.replies: "queue.Queue[dict[str, Any] | None]" = queue.Queue()
        self.stderr: collections.deque[str] = collections.deque(maxlen=400)
        self.started = time.monotonic()
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            text = raw.decode("utf-8", errors="replace").strip()
            if not text:
                continue
            try:
                self.replies.put(json.loads(text))
            except ValueError:
                self.stderr.append(f"[protocol] {text[:500]}")
        self.replies.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.stderr.append(raw.decode("utf-8", errors="replace").rstrip("\n"))

    def send(self, message: Mapping[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message, default=str) + "\n").encode("utf-8"))
        self.proc.stdin.flush()

    def wait_reply(self, rid: Any, deadline: float, index: int | None = None) -> dict[str, Any] | None:
        """The reply to `rid` (item `index` of a batch); None when the worker died; raises TimeoutError past the
        deadline."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            try:
                reply = self.replies.get(timeout=left)
            except queue.Empty:
                raise TimeoutError from None
            if reply is None:
                return None
            if (reply.get("id") == rid and reply.get("index") == index) or (rid is None and reply.get("op") == "hello"):
                return reply

    def kill(self) -> None:
        if self.proc.poll() is not None:
            return
        try:
            if os.name == "posix":
                os.killpg(self.proc.pid, signal.SIGKILL)
            else:  # pragma: no cover
                self.proc.kill()
        except (ProcessLookupError, PermissionError, OSError):
            try:
                self.proc.kill()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            pass

    def exit_text(self) -> str:
        """How the process ended, with the last meaningful lines it printed."""
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.returncode
        time.sleep(0.05)  # let the stderr thread catch the last lines
        if code is not None and code < 0:
            try:
                how = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
        else:
            how = f"exited with status {code}"
        tail = _meaningful(self.stderr)
        return f"worker {how}" + (f": {tail}" if tail else "")


def _meaningful(lines: Iterable[str], keep: int = 3) -> str:
    """The last lines that say something (errors, fatal messages), joined on one line."""
    picked = []
    for line in reversed(list(lines)):
        text = line.strip()
        if not text or text.startswith(("File ", "^", "~")) or set(text) <= set("^~ "):
            continue
        picked.append(text)
        if len(picked) >= keep:
            break
    return " | ".join(reversed(picked))[:800]


class Supervisor:
    """Runs probes in a worker process, one at a time, and survives whatever a probe does to it."""

    def __init__(self, *, device: str = "cuda", timeout: float = 120.0, startup_timeout: float = 180.0,
                 runner_modules: Iterable[str] = (), python: str | None = None, env: Mapping[str, str] | None = None,
                 cwd: str | None = None, prepare: bool = True) -> None:
        self.device = device
        self.timeout = float(timeout)
        self.startup_timeout = float(startup_timeout)
        self.runner_modules = [m for m in runner_modules if m]
        self.python = python or sys.executable
        self.env = dict(os.environ if env is None else env)
        self.env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
        self.env["PYTHONIOENCODING"] = "utf-8"
        self.env["PYTHONUNBUFFERED"] = "1"
        self.cwd = cwd
        self.prepare_on_start = prepare
        self._settings = {"device": device, "timeout": timeout, "startup_timeout": startup_timeout,
                          "runner_modules": tuple(self.runner_modules), "python": python, "env": dict(self.env),
                          "cwd": cwd, "prepare": prepare}
        self.worker: _Worker | None = None
        self.starts = 0
        self.restarts = 0
        self.info: dict[str, Any] = {}
        self.prepared = False
        self._next_id = 0

    def clone(self) -> "Supervisor":
        """A new supervisor with this one's settings and its own worker (for probes run side by side)."""
        return Supervisor(**self._settings)

    # ---- lifecycle

    def __enter__(self) -> "Supervisor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _command(self) -> list[str]:
        cmd = [self.python, "-u", str(WORKER), "--device", self.device]
        if self.runner_modules:
            cmd += ["--runners", ",".join(self.runner_modules)]
        return cmd

    def load(self) -> None:
        """Start a worker and import torch in it without initialising CUDA (no GPU memory taken), so that a later
        `start` is quick; best effort: a worker that fails here is started again by `start`."""
        try:
            self._spawn()
            self._call({"op": "load"}, self.startup_timeout)
        except (WorkerError, TimeoutError, OSError):
            self._drop()

    def start(self) -> None:
        """Start a worker (and initialise CUDA in it); raises WorkerError when it does not come up."""
        if self.worker is not None and self.worker.proc.poll() is None:
            if self.prepare_on_start and not self.prepared:
                self._prepare()
            return
        self._spawn()
        if self.prepare_on_start:
            self._prepare()

    def _spawn(self) -> None:
        if self.worker is not None and self.worker.proc.poll() is None:
            return
        if self.starts:
            self.restarts += 1
        self.starts += 1
        try:
            worker = _Worker(self._command(), self.env, self.cwd)
        except OSError as exc:
            raise WorkerError(f"cannot start the worker ({self.python}): {exc}") from None
        deadline = time.monotonic() + self.startup_timeout
        try:
            hello = worker.wait_reply(None, deadline)
        except TimeoutError:
            worker.kill()
            raise WorkerError(f"the worker did not start within {self.startup_timeout:.0f} s") from None
        if hello is None:
            raise WorkerError(f"the worker did not start: {worker.exit_text()}")
        self.worker = worker
        self.prepared = False

    def _prepare(self) -> None:
        try:
            reply = self._call({"op": "prepare"}, self.startup_timeout)
        except TimeoutError:
            reply = {"error": f"no answer within {self.startup_timeout:.0f} s"}
        if reply is None or "error" in reply:
            why = (reply or {}).get("error") or self._dead_text()
            self._drop()
            raise WorkerError(f"the worker could not initialise {self.device}: {why}")
        self.info = reply.get("info", {})
        self.prepared = True

    def close(self) -> None:
        worker, self.worker = self.worker, None
        if worker is None:
            return
        try:
            if worker.proc.poll() is None:
                worker.send({"op": "exit"})
                worker.proc.wait(timeout=5)
        except Exception:  # noqa: BLE001 - closing is best effort; kill below
            pass
        worker.kill()

    def _drop(self) -> None:
        if self.worker is not None:
            self.worker.kill()
        self.worker = None

    def _dead_text(self) -> str:
        return self.worker.exit_text() if self.worker is not None else "worker gone"

    def _call(self, message: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        assert self.worker is not None
        self._next_id += 1
        message = {"id": self._next_id, **message}
        try:
            self.worker.send(message)
        except (BrokenPipeError, OSError):
            return None
        return self.worker.wait_reply(self._next_id, time.monotonic() + timeout)

    @property
    def pid(self) -> int | None:
        return self.worker.proc.pid if self.worker is not None else None

    def stderr_tail(self, n: int = 20) -> list[str]:
        return list(self.worker.stderr)[-n:] if self.worker is not None else []

    # ---- requests

    def inventory(self, backends: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Which backends' libraries import in the worker (and their versions)."""
        self.start()
        reply = self._call({"op": "inventory", "backends": list(backends)}, self.startup_timeout)
        if reply is None or "inventory" not in reply:
            why = (reply or {}).get("error") or self._dead_text()
            self._drop()
            raise WorkerError(f"the worker failed to list the backends: {why}")
        return reply["inventory"]

    def probe(self, backend: str, config: Mapping[str, Any], *, seed: int = 0, repeats: int = 0,
              timeout: float | None = None, regime: str = "") -> dict[str, Any]:
        """Run one probe (on inputs shaped for a stress regime when one is named); never raises for what the probe
        does (crash, hang, CUDA error become `crashed`)."""
        message = {"op": "probe", "backend": backend, "config": dict(config), "seed": seed, "repeats": repeats}
        if regime:
            message["regime"] = regime
        return self._request(backend, message, timeout)

    def probes(self, items: Sequence[Mapping[str, Any]], *, timeout: float | None = None,
               before: Callable[[int], None] | None = None) -> list[dict[str, Any]]:
        """Run many probes with one request (`items` as `probe` takes them: backend, config, seed, repeats,
        regime); each still has its own timeout, and one that crashes, hangs or hits a CUDA error costs only itself:
        the rest go to a fresh worker. `before(i)` is called as item i starts. Results in the items' order."""
        limit = self.timeout if timeout is None else float(timeout)
        messages = [{k: v for k, v in {"backend": item["backend"], "config": dict(item["config"]),
                                       "seed": item.get("seed", 0), "repeats": item.get("repeats", 0),
                                       "regime": item.get("regime") or ""}.items() if k != "regime" or v}
                    for item in items]
        results: list[dict[str, Any]] = []
        while len(results) < len(messages):
            first = len(results)
            backend = str(messages[first]["backend"])
            if before:
                before(first)
            started = time.perf_counter()
            try:
                self.start()
            except WorkerError as exc:
                results.append(_crashed(backend, f"worker start failed: {exc}", started))
                continue
            started = time.perf_counter()
            self._next_id += 1
            rid = self._next_id
            assert self.worker is not None
            try:
                self.worker.send({"id": rid, "op": "probes", "items": messages[first:]})
            except (BrokenPipeError, OSError):
                text = self._dead_text()
                self._drop()
                results.append(_crashed(backend, text, started))
                continue
            for index in range(len(messages) - first):
                backend = str(messages[first + index]["backend"])
                if index and before:
                    before(first + index)
                result = self._answer(backend, rid, index, limit, started)
                results.append(result)
                started = time.perf_counter()
                if self.worker is None:  # dropped: the rest go to a fresh worker
                    break
        return results

    def _answer(self, backend: str, rid: int, index: int, limit: float, started: float) -> dict[str, Any]:
        """Item `index` of batch `rid` as a result dict, the worker dropped when it must not serve again."""
        assert self.worker is not None
        worker = self.worker
        return self._settle(backend, lambda: worker.wait_reply(rid, time.monotonic() + limit, index), limit, started)

    def _settle(self, backend: str, wait: Callable[[], dict[str, Any] | None], limit: float,
                started: float) -> dict[str, Any]:
        """The result of a request whose reply `wait` brings: a timeout, a dead worker or a worker error is a crash
        of this backend's probe, and the worker is dropped so it never serves again."""
        try:
            reply = wait()
        except TimeoutError:
            self._drop()
            result = _crashed(backend, f"timed out after {limit:g} s (the worker was killed and restarted)", started)
            result["phase"] = "timeout"
            return result
        if reply is None:
            text = self._dead_text()
            self._drop()
            return _crashed(backend, text, started)
        if "result" not in reply:
            self._drop()
            return _crashed(backend, f"worker error: {reply.get('error', 'no result')}", started)
        return self._finish(reply, started)

    def _finish(self, reply: dict[str, Any], started: float) -> dict[str, Any]:
        result = dict(reply["result"])
        if result.get("restart"):
            assert self.worker is not None
            try:
                self.worker.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                pass
            self._drop()
            result["error"] = (result.get("error") or "") + " (CUDA error: the worker was restarted)"
        result["round_trip_ms"] = (time.perf_counter() - started) * 1000.0
        return result

    def bench(self, backend: str, config: Mapping[str, Any], *, seed: int = 0,
              options: Mapping[str, Any] | None = None, timeout: float | None = None) -> dict[str, Any]:
        """Time one backend on one config in the worker (runners' `bench`); like `probe`, never raises for what
        the kernel does."""
        return self._request(backend, {"op": "bench", "backend": backend, "config": dict(config), "seed": seed,
                                       "options": dict(options or {})}, timeout)

    def _request(self, backend: str, message: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        limit = self.timeout if timeout is None else float(timeout)
        started = time.perf_counter()
        try:
            self.start()
        except WorkerError as exc:
            return _crashed(backend, f"worker start failed: {exc}", started)
        started = time.perf_counter()  # the round trip counts the request, not the worker's start
        return self._settle(backend, lambda: self._call(message, limit), limit, started)


def _crashed(backend: str, error: str, started: float) -> dict[str, Any]:
    return {"backend": backend, "outcome": outcomes.CRASHED, "phase": "worker", "error": error, "expressible": True,
            "errors": {}, "rel_error": None, "tolerance": None, "ms": None, "ms_forward": None, "ms_backward": None,
            "warnings": [], "details": {}, "version": "", "restart": True,
            "round_trip_ms": (time.perf_counter() - started) * 1000.0}
