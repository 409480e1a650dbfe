"""`attndoctor fleet`, the distributed part: this rank's answer, and every rank's answer brought to rank 0.

The ranks meet through torch.distributed's env:// rendezvous (the TCPStore that torchrun's agent, or rank 0,
hosts) and form a gloo process group, so no NCCL and no GPU is needed. Answers travel as one key per rank in
the rendezvous store rather than through a collective (`all_gather_object`): a collective is all-or-nothing,
so one rank stuck in its probe would time it out on every rank and lose both the other ranks' answers and the
name of the rank that failed. With one key per rank, rank 0 waits until a deadline, reports the ranks whose key
is missing, and still reports everyone else; rank 0 then publishes the exit code the same way, so that every
rank exits with it. Every wait is bounded: the rendezvous and the gloo group by `rank_timeout`, the answers by
`rank_timeout` after rank 0 has its own, the exit code by that plus the probe's time.

torch is imported only inside `gather_answers`.
"""

from __future__ import annotations

import json
import os
import socket
import time
from datetime import timedelta
from importlib.util import find_spec
from typing import Any, Callable, Mapping, Sequence

from ..config import AttentionConfig
from ..engine.install import environment_dict
from ..environment import Environment, load_env_file
from ..errors import RuleError, UsageError
from .ranks import (FLEET_ENV_FILE, Launch, environment_for_rank, fingerprint, fleet_document, launch_from_env,
                    rank_device, summarize_result)

NEEDS_TORCH = "fleet needs torch for torch.distributed"
ACK_SECONDS = 10.0
"""How long rank 0 keeps the store up for the other ranks to read the exit code (it hosts it under srun)."""


LET_RANK_0_EXIT = 1.0
"""Seconds a rank with a failing exit code waits after rank 0 is done, so that rank 0 exits first."""


class FleetFailure(RuntimeError):
    """The ranks could not meet or rank 0 did not report: one line, exit 1 on this rank."""


def rank_environment(probe_timeout: float, environ: Mapping[str, str] | None = None) -> Environment:
    """This rank's environment: probed, or read from ATTNDOCTOR_FLEET_ENV_FILE with this rank's own steering
    variables (NVTE_*, CUDNN_*, ...) merged over the file's."""
    from ..probe.envvars import relevant_env_vars

    environ = os.environ if environ is None else environ
    path = environ.get(FLEET_ENV_FILE)
    if path:
        env = load_env_file(path)
        env.env_vars = {**env.env_vars, **relevant_env_vars(environ)}
        env.source = f"{env.source} via {FLEET_ENV_FILE}"
        return env
    from ..probe import probe

    return probe(timeout=probe_timeout)


def rank_payload(launch: Launch, configs: Sequence[AttentionConfig], *, probe_timeout: float,
                 backends: Sequence[str] | None = None, rules_dir: str | None = None,
                 ignore: Any = ()) -> dict[str, Any]:
    """This rank's answer (see attndoctor.fleet): never raises; what fails is the payload's `error`."""
    from ..services import diagnose_many

    start = time.monotonic()
    payload: dict[str, Any] = {
        "rank": launch.rank, "local_rank": launch.local_rank, "host": socket.gethostname(), "pid": os.getpid(),
        "launcher": launch.launcher, "device": None, "environment": None, "fingerprint": None, "results": [],
        "error": None,
    }
    try:
        env = rank_environment(probe_timeout)
        payload["environment"] = environment_dict(env)
        device = rank_device(env, launch.local_rank)
        if device is not None:
            payload["device"] = {"index": device.index, "name": device.name, "uuid": device.uuid}
        env = environment_for_rank(env, launch.local_rank)
        payload["fingerprint"] = fingerprint(env)
        report = diagnose_many(configs, env, command="fleet", backends=backends, rules_dir=rules_dir,
                               ignore=ignore)
        payload["results"] = [summarize_result(r) for r in report.results]
    except (UsageError, RuleError) as exc:
        payload["error"] = str(exc)
    except Exception as exc:  # noqa: BLE001 - a rank's failure is a fact for rank 0 to report
        payload["error"] = f"{type(exc).__name__}: {exc}"
    payload["seconds"] = round(time.monotonic() - start, 3)
    return payload


def run_fleet(configs: Sequence[AttentionConfig], *, render: Callable[[dict[str, Any]], None],
              probe_timeout: float = 20.0, rank_timeout: float = 120.0, backends: Sequence[str] | None = None,
              rules_dir: str | None = None, ignore: Any = (),
              environ: Mapping[str, str] | None = None) -> int:
    """Probe and evaluate on this rank, bring every answer to rank 0, render there; the exit code for this rank
    (the same on every rank that hears from rank 0). Raises UsageError without torch, FleetFailure when the ranks
    cannot meet or rank 0 does not report in time."""
    if find_spec("torch") is None:
        raise UsageError(NEEDS_TORCH)
    launch = launch_from_env(os.environ if environ is None else environ)
    start = time.monotonic()

    def answer() -> dict[str, Any]:
        return rank_payload(launch, configs, probe_timeout=probe_timeout, backends=backends, rules_dir=rules_dir,
                            ignore=ignore)

    def report(payloads: list[dict[str, Any] | None], transport: str) -> int:
        doc = fleet_document(launch={k: v for k, v in launch.to_dict().items() if k not in ("rank", "local_rank")},
                             payloads=payloads, configs=configs, seconds=round(time.monotonic() - start, 3),
                             rank_timeout=rank_timeout if launch.distributed else None, transport=transport)
        render(doc)
        return int(doc["gate"]["exit_code"])

    if launch.world_size == 1:
        payload = answer()
        if payload["error"]:
            raise UsageError(payload["error"])
        return report([payload], "none: a world of 1" + ("" if launch.distributed else
                                                           " (not started under torchrun or srun)"))
    return gather_answers(launch, answer, report, rank_timeout=rank_timeout,
                          code_timeout=rank_timeout + probe_timeout + 60.0)


def gather_answers(launch: Launch, answer: Callable[[], dict[str, Any]],
                   report: Callable[[list[dict[str, Any] | None], str], int], *, rank_timeout: float,
                   code_timeout: float) -> int:
    """Meet, answer, and on rank 0 collect and report; every rank returns rank 0's exit code."""
    try:
        import torch.distributed as dist
        from torch.distributed.rendezvous import rendezvous
    except ImportError:
        raise UsageError(NEEDS_TORCH) from None
    if not dist.is_available():
        raise UsageError(f"{NEEDS_TORCH}, and this torch build has no torch.distributed")

    # srun: env:// reads MASTER_ADDR/MASTER_PORT, which fleet derived from SLURM_* when they were not set
    os.environ.setdefault("MASTER_ADDR", str(launch.master_addr))
    os.environ.setdefault("MASTER_PORT", str(launch.master_port))
    where = f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
    timeout = timedelta(seconds=rank_timeout)
    try:
        store, rank, world = next(rendezvous("env://", rank=launch.rank, world_size=launch.world_size,
                                             timeout=timeout))
    except Exception as exc:  # noqa: BLE001 - torch raises RuntimeError, DistStoreError, TimeoutError, ValueError
        raise FleetFailure(f"rank {launch.rank}: the {launch.world_size} ranks did not meet at {where} within "
                           f"{rank_timeout:g} s (env:// rendezvous): {_first_line(exc)}") from None
    run = f"{os.environ.get('TORCHELASTIC_RUN_ID', 'run')}/{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}"
    keys = dist.PrefixStore(f"attndoctor-fleet/{run}", store)
    try:
        dist.init_process_group("gloo", store=dist.PrefixStore(f"attndoctor-fleet/{run}/gloo", store), rank=rank,
                                world_size=world, timeout=timeout)
    except Exception as exc:  # noqa: BLE001
        raise FleetFailure(f"rank {rank}: the gloo group of {world} ranks did not form within {rank_timeout:g} s: "
                           f"{_first_line(exc)}") from None
    transport = f"torch.distributed env:// store at {where}, gloo group of {world}"
    try:
        keys.set(f"answer/{rank}", json.dumps(answer(), default=str))
        if rank == 0:
            deadline = time.monotonic() + rank_timeout
            names = [f"answer/{r}" for r in range(world)]
            _wait_for(keys, names, deadline)
            payloads = [json.loads(keys.get(n)) if keys.check([n]) else None for n in names]
            try:
                code = report(payloads, transport)
            except BaseException:
                keys.set("exit_code", "2")
                raise
            keys.set("exit_code", str(code))
            answered = [f"done/{r}" for r in range(1, world) if payloads[r] is not None]
            _wait_for(keys, answered, time.monotonic() + ACK_SECONDS)
            keys.set("closing", "1")
            return code
        if not _wait_for(keys, ["exit_code"], time.monotonic() + code_timeout):
            raise FleetFailure(f"rank {rank}: rank 0 did not report within {code_timeout:g} s")
        code = int(keys.get("exit_code"))
        keys.set(f"done/{rank}", "1")
        if code:
            _let_rank_0_exit_first(keys)
        return code
    except FleetFailure:
        raise
    except Exception as exc:  # noqa: BLE001 - rank 0 gone (its store with it), a broken connection
        raise FleetFailure(f"rank {rank}: lost the rendezvous store at {where}: {_first_line(exc)}") from None
    finally:
        try:
            dist.destroy_process_group()
        except Exception:  # noqa: BLE001
            pass


def _let_rank_0_exit_first(keys: Any) -> None:
    """torchrun stops every other rank when one exits non-zero, and names the first as the root cause: with a
    failing code, the other ranks leave rank 0 (which printed the report) a moment to exit first."""
    try:
        _wait_for(keys, ["closing"], time.monotonic() + ACK_SECONDS)
    except Exception:  # noqa: BLE001 - rank 0 gone with its store: it has exited already
        return
    time.sleep(LET_RANK_0_EXIT)


def _wait_for(store: Any, names: Sequence[str], deadline: float) -> bool:
    """Poll until every key exists or the deadline passes; True when all are there."""
    pause = 0.02
    while True:
        if not names or store.check(list(names)):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
        pause = min(pause * 2, 0.5)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")
