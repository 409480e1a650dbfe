"""The worker process: runs probes one at a time, speaking JSON lines (requests on stdin, replies on stdout).

Started by supervisor.Supervisor as `python -u .../worker.py`; it loads its own package by path, so it works
whether attndoctor is installed or only on PYTHONPATH. Library output never reaches the protocol: the reply
channel is a private copy of stdout, and file descriptor 1 is pointed at stderr before any library loads.

Requests: {"id": n, "op": "inventory", "backends": [...]}, {"id": n, "op": "load"} (import torch, no CUDA),
{"id": n, "op": "prepare"},
{"id": n, "op": "probe", "backend": b, "config": {...}, "seed": s, "repeats": r, "regime": name (optional)},
{"id": n, "op": "probes", "items": [probe requests]} (one reply per item, {"id": n, "index": i, "result": ...}),
{"id": n, "op": "bench", "backend": b, "config": {...}, "seed": s, "options": {runs, max_runs, budget_ms, graphs,
sets}}, {"op": "exit"}.
After a CUDA error the worker replies, then exits: the context is poisoned, the parent starts a fresh one.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

if __name__ == "__main__" and not __package__:  # started by path: load the package it belongs to
    _here = Path(__file__).resolve().parent
    if sys.path and Path(sys.path[0] or ".").resolve() == _here:
        sys.path.pop(0)  # our module names (data, spec, ...) must not shadow anyone's top-level modules
    if "attndoctor_kernels" not in sys.modules:
        _spec = importlib.util.spec_from_file_location("attndoctor_kernels", _here / "__init__.py",
                                                       submodule_search_locations=[str(_here)])
        _mod = importlib.util.module_from_spec(_spec)
        sys.modules["attndoctor_kernels"] = _mod
        _spec.loader.exec_module(_mod)
    __package__ = "attndoctor_kernels"

import json  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import zlib  # noqa: E402
from typing import Any, TextIO  # noqa: E402

EXIT_AFTER_CUDA_ERROR = 3


class WorkerContext:
    """What probes share inside one worker: the device, one cached case (data + reference), timers."""

    def __init__(self, device: str) -> None:
        self.device_name = device
        self._device: Any = None
        self._case: Any = None
        self._case_key: Any = None

    @property
    def device(self) -> Any:
        if self._device is None:
            import torch

            self._device = torch.device(self.device_name)
        return self._device

    def case(self, spec: Any, seed: int, regime: str = "") -> Any:
        from . import data

        key = (spec.data_key(), seed, regime)
        if self._case_key != key:
            self._case = None
            self._case_key = None
            self.free()
            data_seed = zlib.crc32(repr(key).encode()) & 0x7FFFFFFF
            self._case = data.make_case(spec, self.device, data_seed, regime)
            self._case_key = key
        if self._case.spec != spec:
            # train and infer share the data and the reference, but each probe runs as its own spec
            import dataclasses

            return dataclasses.replace(self._case, spec=spec)
        return self._case

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            import torch

            torch.cuda.synchronize(self.device)

    def event(self) -> Any:
        if self.device.type == "cuda":
            import torch

            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            return ev
        self.synchronize()
        return time.perf_counter()

    def elapsed(self, start: Any, stop: Any) -> float:
        if isinstance(start, float):
            return (stop - start) * 1000.0
        return float(start.elapsed_time(stop))

    def drop_case(self) -> None:
        """Forget the cached probe case (bench builds its own input sets) and give its memory back."""
        if self._case is not None:
            self._case = None
            self._case_key = None
            self.free()

    def release(self) -> None:
        """After a probe: nothing to do but let the probe's tensors go (the case stays cached)."""

    def free(self) -> None:
        """Give cached GPU memory back (after an out-of-memory, or when the case changes)."""
        if self._device is not None and self._device.type == "cuda":
            import gc

            import torch

            gc.collect()
            torch.cuda.empty_cache()


def _inventory(runners: dict[str, Any], backends: list[str]) -> dict[str, Any]:
    out = {}
    for b in backends:
        runner = runners.get(b)
        if runner is None:
            out[b] = {"installed": False, "version": "", "error": f"no runner for backend {b!r}"}
            continue
        try:
            ok, text = runner.installed()
        except Exception as exc:  # noqa: BLE001
            ok, text = False, f"{type(exc).__name__}: {exc}"
        out[b] = {"installed": ok, "version": text if ok else "", "error": "" if ok else text}
    return out


def _prepare(context: WorkerContext) -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {"torch": torch.__version__, "device": context.device_name}
    if context.device.type == "cuda":
        torch.cuda.init()
        torch.zeros(1, device=context.device).add_(1)
        torch.cuda.synchronize()
        info["gpu"] = torch.cuda.get_device_name(context.device)
        info["capability"] = list(torch.cuda.get_device_capability(context.device))
        info["memory_free"], info["memory_total"] = torch.cuda.mem_get_info(context.device)
    return info


def serve(inp: TextIO, out: TextIO, runners: dict[str, Any], context: WorkerContext) -> int:
    from .runners.base import Probe

    def send(message: dict[str, Any]) -> None:
        out.write(json.dumps(message, default=str) + "\n")
        out.flush()

    send({"op": "hello", "pid": os.getpid()})
    for line in inp:
        line = line.strip()
        if not line:
            continue
        try:
            request = json.loads(line)
        except ValueError:
            send({"op": "error", "error": f"not JSON: {line[:200]}"})
            continue
        rid, op = request.get("id"), request.get("op")
        if op == "exit":
            send({"id": rid, "op": "bye"})
            return 0
        try:
            if op == "inventory":
                send({"id": rid, "inventory": _inventory(runners, list(request.get("backends") or runners))})
            elif op == "prepare":
                send({"id": rid, "info": _prepare(context)})
            elif op == "load":  # import the libraries ahead of the first probe, without touching the GPU
                import torch  # noqa: F401

                send({"id": rid, "loaded": True})
            elif op == "probes":
                # many probes, one reply each (tagged with its index); the batch stops at the first that needs a
                # fresh worker or breaks the runner: the parent sends the rest again
                for index, item in enumerate(request.get("items") or []):
                    backend = item.get("backend")
                    runner = runners.get(backend)
                    try:
                        if runner is None:
                            result = Probe(str(backend), "skipped", phase="setup", error=f"no runner for {backend!r}")
                        else:
                            result = runner.probe(item, context)
                    except Exception as exc:  # noqa: BLE001
                        send({"id": rid, "index": index, "error": f"{type(exc).__name__}: {exc}",
                              "traceback": "".join(traceback.format_exception(exc))[-3000:]})
                        break
                    send({"id": rid, "index": index, "result": result.to_dict()})
                    if result.restart:
                        return EXIT_AFTER_CUDA_ERROR
            elif op in ("probe", "bench"):
                from .runners.base import BenchResult

                backend = request.get("backend")
                runner = runners.get(backend)
                if runner is None:
                    kind = Probe if op == "probe" else BenchResult
                    result = kind(str(backend), "skipped", phase="setup", error=f"no runner for {backend!r}")
                else:
                    result = getattr(runner, op)(request, context)
                send({"id": rid, "result": result.to_dict()})
                if result.restart:
                    return EXIT_AFTER_CUDA_ERROR
            else:
                send({"id": rid, "error": f"unknown op {op!r}"})
        except Exception as exc:  # noqa: BLE001 - a bug in a runner must not kill the worker silently
            send({"id": rid, "error": f"{type(exc).__name__}: {exc}",
                  "traceback": "".join(traceback.format_exception(exc))[-3000:]})
    return 0


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="attndoctor-kernels-worker")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--runners", default="", help="extra runner modules, comma-separated")
    args = parser.parse_args(argv)
    protocol = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # whatever a library prints goes to stderr, never into the protocol
    sys.stdout = sys.stderr
    from .runners import load_runners

    runners = load_runners([m for m in args.runners.split(",") if m])
    code = serve(sys.stdin, protocol, runners, WorkerContext(args.device))
    protocol.flush()
    return code


if __name__ == "__main__":
    code = main()
    sys.stderr.flush()
    os._exit(code)  # skip interpreter teardown: a library's atexit hook must not hang the worker
