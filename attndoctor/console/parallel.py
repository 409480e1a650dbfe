"""Many configs on every core: forked worker processes (which share the loaded rule base) evaluate and render chunks
of configs; the parent writes the chunks in order and keeps the gate. Memory stays bounded: a few chunks are in
flight at a time."""

from __future__ import annotations

import collections
import os
from typing import Any, Callable, Iterable, Iterator

CHUNK = 256
"""Configs per task: large enough that sending them costs little, small enough to keep every core busy."""
PARALLEL_OVER = 2000
"""Below this many configs one process is faster than starting workers."""
IN_FLIGHT = 2
"""Chunks queued per worker."""

_JOB: dict[str, Any] = {}


def workers_for(count: int) -> int:
    """How many worker processes a run of `count` configs (-1: unknown) gets; 1 means none."""
    import multiprocessing

    if 0 <= count < PARALLEL_OVER or "fork" not in multiprocessing.get_all_start_methods():
        return 1
    wanted = os.environ.get("ATTNDOCTOR_WORKERS", "")
    if wanted.isdigit() and int(wanted) > 0:
        return int(wanted)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, 8))


def _chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _work(chunk: list[Any]) -> list[Any]:
    render = _JOB.get("render")
    if render is None:
        render = _JOB["render"] = _JOB["make_render"]()
    return [render(result) for result in _JOB["evaluate"](chunk)]


def _leave_ctrl_c_to_the_parent() -> None:
    """Pool initializer: Ctrl-C reaches the whole process group; the parent ends the run (exit 130) and the pool."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def map_ordered(configs: Iterable[Any], evaluate: Callable[[Iterable[Any]], Iterator[Any]],
                make_render: Callable[[], Callable[[Any], Any]], workers: int) -> Iterator[Any]:
    """render(result) for every config, in order, computed by `workers` forked processes."""
    import multiprocessing

    _JOB.clear()
    _JOB.update(evaluate=evaluate, make_render=make_render)
    context = multiprocessing.get_context("fork")
    with context.Pool(workers, initializer=_leave_ctrl_c_to_the_parent) as pool:
        pending: collections.deque[Any] = collections.deque()
        for chunk in _chunks(configs, CHUNK):
            pending.append(pool.apply_async(_work, (chunk,)))
            if len(pending) >= IN_FLIGHT * workers:
                yield from pending.popleft().get()
        while pending:
            yield from pending.popleft().get()
    _JOB.clear()
