"""Planted runners for the worker tests: they abort, hang, raise CUDA-like errors, print on stdout, exit.

Loaded by the worker process (Supervisor(runner_modules=["fake_runners"])) with tests/ on PYTHONPATH; they need
no torch, so the isolation is tested on any machine.
"""

from __future__ import annotations

import os
import sys
import time

from attndoctor_kernels.outcomes import classify_exception, error_text
from attndoctor_kernels.runners.base import BenchResult, Probe, Runner


class Fake(Runner):
    def __init__(self, backend: str, action: str) -> None:
        self.backend = backend
        self.action = action

    def installed(self) -> tuple[bool, str]:
        return True, "0.0-fake"

    def probe(self, request, context):  # noqa: ANN001
        if self.action == "abort":
            os.abort()
        if self.action == "hang":
            time.sleep(3600)
        if self.action == "exit":
            sys.exit(7)
        if self.action == "print":
            print("library chatter on stdout")
            os.write(1, b"raw bytes on fd 1\n")
        if self.action == "bug":
            raise KeyError("runner bug")
        if self.action in ("cuda-error", "refuse", "signature"):
            try:
                if self.action == "cuda-error":
                    raise RuntimeError("CUDA error: an illegal memory access was encountered\nCUDA kernel errors "
                                       "might be asynchronously reported at some other API call")
                if self.action == "refuse":
                    raise RuntimeError("FlashAttention only supports Ampere GPUs or newer.")
                raise TypeError("flash_attn_func() got an unexpected keyword argument 'softcap'")
            except Exception as exc:  # noqa: BLE001
                outcome, restart = classify_exception(exc)
                return Probe(self.backend, outcome, phase="forward", error=error_text(exc), restart=restart,
                             details={"pid": os.getpid()})
        return Probe(self.backend, "ok", phase="done", details={"pid": os.getpid(), "seed": request.get("seed")})

    def bench(self, request, context):  # noqa: ANN001
        """The same planted actions; an ok bench reports made-up timings (1 ms forward, 3 ms forward+backward)."""
        probe = self.probe(request, context)
        if probe.outcome != "ok":
            return BenchResult(self.backend, probe.outcome, phase=probe.phase, error=probe.error,
                               restart=probe.restart, details=probe.details)
        stats = {"median_ms": 1.0, "p10_ms": 0.99, "p25_ms": 0.995, "p75_ms": 1.005, "p90_ms": 1.01, "min_ms": 0.98,
                 "runs": 20, "iqr_rel": 0.01, "spread_rel": 0.02}
        return BenchResult(self.backend, "ok", phase="done", mode="eager", sets=2, forward=stats,
                           train={**stats, "median_ms": 3.0}, details=probe.details)


RUNNERS = {f"fake-{a}": Fake(f"fake-{a}", a) for a in ("ok", "abort", "hang", "exit", "print", "bug", "cuda-error",
                                                         "refuse", "signature")}
