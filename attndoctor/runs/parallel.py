"""Probes spread over several kernel workers on one GPU, for `verify` and `verify --stress`.

The time of a sweep is the libraries' once-per-shape work (cuDNN plan builds, cudnn-frontend graph builds, Triton
compiles), CPU-bound and done one shape after another in one worker; several workers build several shapes at once.
The outcomes stay those of one worker: each shape's probes stay together in one worker (its plans and compiles
happen once), shapes too large to share the GPU run alone before the others start, and a probe that runs out of
memory (or whose worker could not start) beside other workers runs again alone. Results come back in the order of the
groups.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable, Hashable, Iterator, Mapping, Sequence

from ..engine.states import Outcome

MAX_DEFAULT_JOBS = 8
WORKER_BYTES = 4 << 30
"""GPU memory a worker needs beside the others: its CUDA context, the caching allocator's slack, a light shape."""
REFERENCE_BYTES = 3 << 29
"""The float64 reference's score chunks at most (attndoctor_kernels.data.REFERENCE_BUDGET_BYTES, a few at once)."""
_ITEMSIZE = {"bf16": 2, "fp16": 2, "fp32": 4, "fp8": 1}

BeforeFn = Callable[[int, int, int], None]
"""Called as item i of group g starts, with the number of probes started before it: before(g, i, n)."""


def cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def default_jobs(device: str) -> int:
    """min(8, cores) on a GPU; 1 on the CPU, whose kernels use every core already."""
    return min(MAX_DEFAULT_JOBS, cores()) if device == "cuda" else 1


def fit_jobs(jobs: int, info: Mapping[str, Any]) -> int:
    """`jobs`, fewer where the GPU's free memory cannot hold that many workers."""
    free = int(info.get("memory_free") or 0)
    if free > 0:
        jobs = min(jobs, max(1, free // WORKER_BYTES))
    return max(1, jobs)


def worker_env(jobs: int) -> dict[str, str]:
    """The workers' environment: Inductor's and Triton's compile caches kept under attndoctor's cache folder across
    runs (unless the caller set them), and Inductor's compile threads shared between the workers."""
    from ..inputs.cache import cache_root

    env = dict(os.environ)
    root = cache_root()
    if root is not None:
        env.setdefault("TORCHINDUCTOR_CACHE_DIR", str(root / "inductor"))
        env.setdefault("TRITON_CACHE_DIR", str(root / "triton"))
    if jobs > 1:
        env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", str(max(1, cores() // jobs)))
    return env


FULL_SCORES = frozenset({"sdpa-math", "te-unfused"})
"""Backends that hold the whole score matrix (and its gradient when training): memory grows with length squared."""


def probe_bytes(config: Mapping[str, Any], full_scores: bool = True) -> int:
    """A generous estimate of the GPU memory one probe of this shape holds: inputs, gradients and their float64
    copies, the reference's chunks, a dense mask, and for a backend in FULL_SCORES its score matrices."""
    def get(key: str, default: int) -> int:
        value = config.get(key)
        return int(value) if isinstance(value, (int, float)) and value else default

    b, h = get("batch", 1), get("heads", 1)
    hk, sq = get("kv_heads", h), get("seqlen_q", 1)
    sk, d = get("seqlen_kv", sq), get("hdim", 64)
    dv = get("hdim_v", d)
    train = bool(config.get("train"))
    size = _ITEMSIZE.get(str(config.get("dtype") or "bf16"), 4)
    elements = b * sq * h * (d + dv) + b * sk * hk * (d + dv)
    tensors = elements * (size * (3 if train else 2) + 8 * (2 if train else 1))
    scores = b * h * sq * sk
    math = scores * 4 * (4 if train else 2) if full_scores else 0
    mask = b * sq * sk * 5
    return tensors + math + mask + min(scores * 8 * 3, REFERENCE_BYTES)


def _again(result: Mapping[str, Any]) -> bool:
    """Whether a probe run beside other workers must run again alone: it ran out of memory, or its worker could not
    start (a CUDA context finds no memory either)."""
    return result.get("outcome") == Outcome.OUT_OF_MEMORY or (
        result.get("outcome") == Outcome.CRASHED and str(result.get("error") or "").startswith("worker start failed"))


class ProbePool:
    """Runs groups of probes on `sup` and, for `jobs` > 1, on clones of it side by side."""

    def __init__(self, sup: Any, jobs: int = 1) -> None:
        self.sup = sup
        self.jobs = max(1, int(jobs))
        self.clones: list[Any] = []
        self.stopped = False

    @property
    def parallel(self) -> bool:
        return self.jobs > 1 and callable(getattr(self.sup, "clone", None))

    @property
    def starts(self) -> int:
        return int(getattr(self.sup, "starts", 0)) + sum(int(getattr(c, "starts", 0)) for c in self.clones)

    def run(self, groups: Sequence[Sequence[Mapping[str, Any]]], keys: Sequence[Hashable],
            sizes: Sequence[int] = (), before: BeforeFn | None = None) -> Iterator[tuple[int, list[dict[str, Any]]]]:
        """(group index, its results) for every group, in order. Groups with one key run in one worker, in their
        order; a group larger than a worker's share of the GPU's free memory runs alone."""
        from .verification import probe_all

        if not self.parallel or len(groups) < 2:
            started = 0
            for g, items in enumerate(groups):
                def one(i: int, g: int = g, base: int = started) -> None:
                    if before:
                        before(g, i, base + i)

                yield g, probe_all(self.sup, items, before=one)
                started += len(items)
            return
        yield from self._run_parallel(groups, keys, sizes, before)

    def _run_parallel(self, groups: Sequence[Sequence[Mapping[str, Any]]], keys: Sequence[Hashable],
                      sizes: Sequence[int], before: BeforeFn | None) -> Iterator[tuple[int, list[dict[str, Any]]]]:
        free = int((getattr(self.sup, "info", None) or {}).get("memory_free") or 0)
        share = free * 3 // (4 * self.jobs) if free else 0
        alone = [g for g in range(len(groups)) if share and g < len(sizes) and sizes[g] > share]
        bundles: dict[Hashable, list[int]] = {}
        for g in range(len(groups)):
            if g not in alone:
                bundles.setdefault(keys[g], []).append(g)
        yield from _Round(self, groups, alone, list(bundles.values()), before).results()


class _Round:
    """One parallel run of a pool: the large groups alone first, then the bundles across the workers, then the
    probes that ran out of memory beside others again alone; results handed back in group order."""

    def __init__(self, pool: ProbePool, groups: Sequence[Sequence[Mapping[str, Any]]], alone: list[int],
                 queue: list[list[int]], before: BeforeFn | None) -> None:
        self.pool, self.groups, self.alone, self.queue, self.before = pool, groups, alone, queue, before
        self.done: list[list[dict[str, Any]] | None] = [None] * len(groups)
        self.cond = threading.Condition()
        self.failures: list[BaseException] = []
        self.started = 0
        self.deferred: dict[int, list[dict[str, Any]]] = {}

    def probe(self, sup: Any, g: int, only: Sequence[int] | None = None) -> list[dict[str, Any]]:
        from .verification import probe_all

        picked = list(range(len(self.groups[g]))) if only is None else list(only)

        def starting(i: int) -> None:
            with self.cond:
                if self.before and only is None:
                    self.before(g, picked[i], self.started)
                self.started += only is None

        return probe_all(sup, [self.groups[g][i] for i in picked], before=starting)

    def settle(self, g: int, res: list[dict[str, Any]]) -> None:
        with self.cond:
            self.done[g] = res
            self.cond.notify_all()

    def fail(self, exc: BaseException) -> None:
        with self.cond:
            self.failures.append(exc)
            self.cond.notify_all()

    def serve(self, sup: Any) -> None:
        try:
            while not self.pool.stopped:
                with self.cond:
                    if not self.queue:
                        return
                    bundle = self.queue.pop(0)
                for g in bundle:
                    if self.pool.stopped:
                        return
                    res = self.probe(sup, g)
                    if any(_again(r) for r in res):
                        self.deferred[g] = res
                    else:
                        self.settle(g, res)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            self.fail(exc)

    def coordinate(self) -> None:
        pool = self.pool
        try:
            lanes = min(pool.jobs, len(self.queue))
            pool.clones = [pool.sup.clone() for _ in range(max(0, lanes - 1))]
            go = threading.Event()

            def lane(sup: Any) -> None:
                load = getattr(sup, "load", None)
                if sup is not pool.sup and load is not None:
                    load()  # python and torch load while the large shapes run; CUDA waits for `go`
                go.wait()
                self.serve(sup)

            threads = [threading.Thread(target=lane, args=(s,), daemon=True) for s in [pool.sup, *pool.clones]]
            for t in threads:
                t.start()
            for g in self.alone:
                if pool.stopped:
                    break
                self.settle(g, self.probe(pool.sup, g))
            go.set()
            for t in threads:
                t.join()
            for c in pool.clones:
                c.close()  # their memory goes back before the probes that ran out of it run again alone
            self.rerun_alone()
        except BaseException as exc:  # noqa: BLE001
            self.fail(exc)

    def rerun_alone(self) -> None:
        for g in sorted(self.deferred):
            if self.pool.stopped:
                return
            res = list(self.deferred[g])
            again = [i for i, r in enumerate(res) if _again(r)]
            for i, r in zip(again, self.probe(self.pool.sup, g, again)):
                res[i] = r
            self.settle(g, res)

    def results(self) -> Iterator[tuple[int, list[dict[str, Any]]]]:
        boss = threading.Thread(target=self.coordinate, daemon=True)
        boss.start()
        try:
            for g in range(len(self.groups)):
                with self.cond:
                    while self.done[g] is None and not self.failures and boss.is_alive():
                        self.cond.wait(0.5)
                    if self.failures:
                        raise self.failures[0]
                    res = self.done[g]
                if res is None:
                    raise RuntimeError("the probe pool stopped before every group ran")
                yield g, res
        finally:
            self.pool.stopped = True
            for c in self.pool.clones:
                c.close()
