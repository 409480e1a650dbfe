"""Timing helpers for `bench` (torch, imported lazily; the statistics need no torch).

How a measurement is taken (METHOD.md of the device library, and the issue behind `bench`):
- warm-up first (module load, run-time compilation, cuDNN plan building and handle creation stay out of the
  numbers): at least `WARMUP_MIN` calls and about `WARMUP_MS` of work;
- every run is bracketed by its own pair of CUDA events, all runs are enqueued back to back and read after one
  synchronisation; the median of the runs is the figure, p10/p25/p75/p90 give the spread;
- the runs rotate among several input sets (each its own q, k, v, output gradient and outputs), enough that their
  bytes together exceed the L2 cache several times, so that no run finds its inputs in the cache;
- where a call can be captured in a CUDA graph, the graph's replays are timed (no launch gaps); a call that cannot
  be captured is timed eagerly, and the result says which and why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

WARMUP_MIN = 3
WARMUP_MS = 25.0
L2_FALLBACK_BYTES = 50 * 1024 * 1024
NOISY_IQR = 0.01
"""A measurement whose interquartile range exceeds this share of its median gets more runs (up to max_runs, within
EXTRA_BUDGETS times the budget): its median is less certain."""
EXTRA_BUDGETS = 4.0
"""Used when the device does not report its L2 size (the H100's is 50 MiB)."""


# ---------------------------------------------------------------- statistics (no torch)


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in [0, 100]) of already sorted values (numpy's default method)."""
    if not sorted_values:
        raise ValueError("no values")
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def summarize(samples_ms: Sequence[float]) -> dict[str, float]:
    """median, min, p10, p25, p75, p90 in ms, plus `iqr_rel` = (p75 - p25) / median and `spread_rel` =
    (p90 - p10) / median, and `runs`."""
    values = sorted(float(x) for x in samples_ms)
    med = percentile(values, 50)
    out = {"median_ms": med, "min_ms": values[0], "p10_ms": percentile(values, 10),
           "p25_ms": percentile(values, 25), "p75_ms": percentile(values, 75), "p90_ms": percentile(values, 90),
           "runs": len(values)}
    out["iqr_rel"] = (out["p75_ms"] - out["p25_ms"]) / med if med > 0 else 0.0
    out["spread_rel"] = (out["p90_ms"] - out["p10_ms"]) / med if med > 0 else 0.0
    return out


def input_sets_needed(bytes_per_set: int, l2_bytes: int, *, minimum: int = 2, maximum: int = 8,
                      factor: float = 3.0) -> int:
    """How many input sets to rotate among: enough that they hold `factor` times the L2 cache, within bounds."""
    if bytes_per_set <= 0:
        return maximum
    return max(minimum, min(maximum, math.ceil(factor * l2_bytes / bytes_per_set)))


def runs_for(estimate_ms: float, *, min_runs: int, max_runs: int, budget_ms: float) -> int:
    """Timed runs: at least `min_runs`, more for short calls until about `budget_ms` of work, at most `max_runs`."""
    if estimate_ms <= 0:
        return max_runs
    return max(min_runs, min(max_runs, int(budget_ms / estimate_ms)))


# ---------------------------------------------------------------- device helpers (torch)


def is_cuda(device: Any) -> bool:
    return getattr(device, "type", str(device)) == "cuda"


def synchronize(device: Any) -> None:
    if is_cuda(device):
        import torch

        torch.cuda.synchronize(device)


def l2_bytes(device: Any) -> int:
    if not is_cuda(device):
        return L2_FALLBACK_BYTES
    import torch

    props = torch.cuda.get_device_properties(device)
    return int(getattr(props, "L2_cache_size", 0) or L2_FALLBACK_BYTES)


def wall_once(fn: Callable[[], Any], device: Any) -> float:
    """One call, synchronised, in ms of host time (an estimate used to size warm-up and runs)."""
    import time

    synchronize(device)
    t0 = time.perf_counter()
    fn()
    synchronize(device)
    return (time.perf_counter() - t0) * 1000.0


def memory_mark(device: Any) -> int | None:
    """Start watching the peak: reset torch's peak counter and return what is allocated now (None off CUDA)."""
    if not is_cuda(device):
        return None
    import torch

    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    return int(torch.cuda.memory_allocated(device))


def memory_peak_since(device: Any, mark: int | None) -> int | None:
    """torch.cuda.max_memory_allocated() since `memory_mark`, over what was allocated then, in bytes."""
    if mark is None or not is_cuda(device):
        return None
    import torch

    torch.cuda.synchronize(device)
    return int(torch.cuda.max_memory_allocated(device) - mark)


@dataclass
class Captured:
    """The callables to time, one per input set, and how they run (graph replays or eager calls)."""

    calls: list[Callable[[], Any]]
    mode: str  # graph | eager
    note: str = ""


def capture(calls: Sequence[Callable[[], Any]], device: Any, *, resets: Sequence[Callable[[], None]] = (),
            warmup: int = 3) -> Captured:
    """One CUDA graph per call (sharing one memory pool), after a warm-up on a side stream as PyTorch's CUDA graph
    notes ask. Raises whatever the capture raised; the caller falls back to eager."""
    import torch

    graphs = []
    pool = None
    stream = torch.cuda.Stream(device=device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        for i, fn in enumerate(calls):
            for _ in range(warmup):
                if resets:
                    resets[i]()
                fn()
    torch.cuda.current_stream(device).wait_stream(stream)
    torch.cuda.synchronize(device)
    for i, fn in enumerate(calls):
        if resets:
            resets[i]()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=pool):
            fn()
        if pool is None:
            pool = graph.pool()
        graphs.append(graph)
    torch.cuda.synchronize(device)
    return Captured(calls=[g.replay for g in graphs], mode="graph")


def time_calls(calls: Sequence[Callable[[], Any]], device: Any, *, resets: Sequence[Callable[[], None]] = (),
               min_runs: int = 20, max_runs: int = 100, budget_ms: float = 100.0) -> list[float]:
    """Per-run times in ms, rotating through `calls` (one per input set): warm-up, then at least `min_runs` runs,
    each between its own CUDA events, enqueued back to back and read after one synchronisation; a noisy result
    (NOISY_IQR) gets a second batch. `resets[i]` (host work, such as dropping gradients) runs before call i,
    outside the events."""
    n = len(calls)

    def run(i: int) -> None:
        if resets:
            resets[i % n]()
        calls[i % n]()

    estimate = min(wall_once(lambda: run(0), device), wall_once(lambda: run(1 % n), device))
    warm = max(WARMUP_MIN, min(200, math.ceil(WARMUP_MS / max(estimate, 1e-3))))
    for i in range(warm):
        run(i)
    synchronize(device)
    runs = runs_for(estimate, min_runs=min_runs, max_runs=max_runs, budget_ms=budget_ms)
    samples = _timed(calls, device, resets, runs)
    extra = min(max_runs - runs, int(EXTRA_BUDGETS * budget_ms / max(estimate, 1e-3)))
    if extra > 0 and summarize(samples)["iqr_rel"] > NOISY_IQR:
        samples += _timed(calls, device, resets, extra, offset=runs)
    return samples


def _timed(calls: Sequence[Callable[[], Any]], device: Any, resets: Sequence[Callable[[], None]], runs: int,
           offset: int = 0) -> list[float]:
    import time

    n = len(calls)
    if is_cuda(device):
        import torch

        starts = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
        stops = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
        for i in range(runs):
            if resets:
                resets[(offset + i) % n]()
            starts[i].record()
            calls[(offset + i) % n]()
            stops[i].record()
        torch.cuda.synchronize(device)
        return [float(a.elapsed_time(b)) for a, b in zip(starts, stops)]
    out = []
    for i in range(runs):
        if resets:
            resets[(offset + i) % n]()
        t0 = time.perf_counter()
        calls[(offset + i) % n]()
        out.append((time.perf_counter() - t0) * 1000.0)
    return out
