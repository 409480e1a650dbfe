"""`attndoctor fleet`, the pure part: which ranks of a job look alike, what differs, and whether the job fits.

Every rank of a distributed job probes its own machine and evaluates the same configs; this module compares the
answers. Nothing here imports torch or talks to the network (that is `fleet.dist`): each function takes plain
data, so all of it is tested without torch.

A rank's answer (its *payload*) is a JSON object:

    {"rank": 0, "local_rank": 0, "host": "node-1", "pid": 123, "launcher": "torchrun",
     "device": {"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-..."} or null,
     "environment": engine.install.environment_dict(...), "fingerprint": fingerprint(...),
     "results": [{"label": ..., "selected": {framework: {"backend": ..., "status": ...}},
                  "verdicts": {backend: status}}],
     "error": null or one line, "seconds": 1.2}
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from ..config import AttentionConfig
from ..environment import Environment
from ..errors import UsageError
from ..words import plural

SCHEMA_VERSION = 1

FINGERPRINT_VERSIONS = ("driver", "cuda", "torch", "cudnn", "cudnn_frontend", "flash_attn", "flash_attn_3",
                        "flash_attn_4", "cutlass_dsl", "te")
"""The version facts that must agree across ranks (`cudnn` is the cuDNN actually loaded)."""

FINGERPRINT_ENV_PREFIXES = ("NVTE_", "CUDNN_", "TORCH_CUDNN_SDPA_")
"""The variables that steer backend selection. CUDA_VISIBLE_DEVICES and PYTORCH_* are left out: the first differs
from rank to rank by design (one GPU each), the second steers the allocator, not the choice of kernel."""

FIELD_LABELS = {
    "gpu": "GPU", "sm": "compute capability", "cuda_available": "torch sees CUDA", "driver": "NVIDIA driver",
    "cuda": "CUDA (torch built with)", "torch": "PyTorch", "cudnn": "cuDNN (loaded)",
    "cudnn_frontend": "cudnn-frontend", "flash_attn": "flash-attn", "flash_attn_3": "flash-attn 3",
    "flash_attn_4": "flash-attn 4", "cutlass_dsl": "nvidia-cutlass-dsl", "te": "TransformerEngine",
}

FLEET_ENV_FILE = "ATTNDOCTOR_FLEET_ENV_FILE"
"""A rank that has this variable reads its environment from the JSON file it names (the `environment` object of
`check --format json`) instead of probing, with its own NVTE_* / CUDNN_* / TORCH_CUDNN_SDPA_* variables merged
over the file's: a what-if for tests and for rehearsing a fleet on machines without its GPUs."""


# ---------------------------------------------------------------- launch


@dataclass(frozen=True)
class Launch:
    """Where this process sits in the job, as the launcher told it."""

    launcher: str  # torchrun | env | slurm | single
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    master_addr: str | None = None
    master_port: int | None = None

    @property
    def distributed(self) -> bool:
        return self.launcher != "single"

    def to_dict(self) -> dict[str, Any]:
        return {"launcher": self.launcher, "rank": self.rank, "world_size": self.world_size,
                "local_rank": self.local_rank, "master_addr": self.master_addr, "master_port": self.master_port}


def launch_from_env(environ: Mapping[str, str]) -> Launch:
    """torchrun's RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/MASTER_PORT; else srun's SLURM_* variables; else a world
    of one. Raises UsageError for values that cannot be right."""
    if "RANK" in environ or "WORLD_SIZE" in environ:
        rank = _int_var(environ, "RANK")
        world = _int_var(environ, "WORLD_SIZE")
        local = _int_var(environ, "LOCAL_RANK", default=0)
        addr = environ.get("MASTER_ADDR") or None
        port = _int_var(environ, "MASTER_PORT", default=None)
        if world > 1 and (addr is None or port is None):
            raise UsageError("RANK and WORLD_SIZE are set but MASTER_ADDR or MASTER_PORT is not: start fleet with "
                             "torchrun, or export both")
        launcher = "torchrun" if "TORCHELASTIC_RUN_ID" in environ else "env"
        return _checked(Launch(launcher, rank, world, local, addr, port))
    tasks = environ.get("SLURM_STEP_NUM_TASKS") or environ.get("SLURM_NTASKS")
    if "SLURM_PROCID" in environ and tasks:
        rank = _int_var(environ, "SLURM_PROCID")
        world = _int_var({"SLURM_NTASKS": tasks}, "SLURM_NTASKS")
        local = _int_var(environ, "SLURM_LOCALID", default=0)
        nodelist = (environ.get("SLURM_STEP_NODELIST") or environ.get("SLURM_JOB_NODELIST")
                    or environ.get("SLURM_NODELIST") or "")
        addr = environ.get("MASTER_ADDR") or first_host(nodelist)
        port = _int_var(environ, "MASTER_PORT", default=None)
        if port is None:
            # every task of the step computes the same port; jobs sharing a node get different ones
            job = environ.get("SLURM_JOB_ID", "0")
            port = 20000 + (int(job) % 20000 if job.isdigit() else 0)
        if world > 1 and not addr:
            raise UsageError("srun: no MASTER_ADDR and no SLURM_STEP_NODELIST / SLURM_JOB_NODELIST to take "
                             "rank 0's host from; export MASTER_ADDR")
        return _checked(Launch("slurm", rank, world, local, addr, port))
    return Launch("single")


def _int_var(environ: Mapping[str, str], name: str, default: Any = ...) -> Any:
    value = environ.get(name)
    if value is None or value.strip() == "":
        if default is ...:
            raise UsageError(f"{name} is not set")
        return default
    try:
        return int(value.strip())
    except ValueError:
        raise UsageError(f"{name}={value!r}: expected a whole number") from None


def _checked(launch: Launch) -> Launch:
    if launch.world_size < 1 or not 0 <= launch.rank < launch.world_size:
        raise UsageError(f"rank {launch.rank} does not fit a world of {launch.world_size}")
    if launch.local_rank < 0:
        raise UsageError(f"local rank {launch.local_rank} is negative")
    if launch.master_port is not None and not 0 < launch.master_port < 65536:
        raise UsageError(f"MASTER_PORT {launch.master_port} is not a port")
    return launch


def first_host(nodelist: str) -> str | None:
    """The first host of a Slurm host list: 'gpu[003-007,9],login1' → 'gpu003'."""
    text = nodelist.strip()
    if not text:
        return None
    depth, end = 0, len(text)
    for i, ch in enumerate(text):
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            end = i
            break
    item = text[:end]
    # each bracket group contributes its first value, zero padding kept
    return re.sub(r"\[([^\]]*)\]", lambda m: m.group(1).split(",")[0].split("-")[0], item) or None


# ---------------------------------------------------------------- one rank


def rank_device(env: Environment, local_rank: int) -> Any:
    """The GPU this rank uses: cuda:LOCAL_RANK among the visible GPUs (the first when fewer are visible, as with
    one GPU per task); None without GPUs."""
    if not env.gpus:
        return None
    return env.gpus[local_rank] if 0 <= local_rank < len(env.gpus) else env.gpus[0]


def environment_for_rank(env: Environment, local_rank: int) -> Environment:
    """The environment as this rank's GPU sees it: on a node of mixed GPUs each rank is checked on its own."""
    device = rank_device(env, local_rank)
    if device is None or device.index == (env.gpus[0].index if env.gpus else None):
        return env
    from ..gpus import lookup_gpu

    spec = lookup_gpu(device.name)
    gpu = spec.name if spec is not None else device.name
    sm = device.sm if device.sm is not None else (spec.sm if spec is not None else env.sm)
    return env.replace(gpu=gpu, sm=sm)


def fingerprint(env: Environment) -> dict[str, Any]:
    """What must be the same on every rank for every rank to pick the same kernels. Unknown facts are None."""
    versions = {k: _plain(env.versions.get(k)) for k in FINGERPRINT_VERSIONS}
    variables = {k: v for k, v in sorted(env.env_vars.items()) if k.startswith(FINGERPRINT_ENV_PREFIXES)}
    return {"gpu": env.gpu if env.gpu else ("none" if env.no_gpu else None), "sm": env.sm,
            "cuda_available": env.torch_cuda_available, **versions, "env": variables}


def _plain(value: Any) -> Any:
    return None if value is None else str(value)


def summarize_result(result: Any) -> dict[str, Any]:
    """One config's answer on one rank, reduced to what ranks must agree on (a ConfigResult in, plain data out)."""
    return {
        "label": result.config.label(),
        "selected": {s.framework: {"backend": s.backend, "status": s.status} for s in result.selected},
        "verdicts": {v.backend.id: v.status for v in result.all_verdicts},
    }


# ---------------------------------------------------------------- comparing ranks


def _flat(fp: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in fp.items() if k != "env"}
    out.update({f"env.{k}": v for k, v in (fp.get("env") or {}).items()})
    return out


def group_name(index: int) -> str:
    return chr(ord("A") + index) if index < 26 else f"G{index + 1}"


def group_ranks(payloads: Iterable[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Ranks grouped by identical fingerprint (groups in order of their lowest rank), and each field whose value
    differs between groups with the value of every group (None: unknown, or the variable is unset)."""
    groups: list[dict[str, Any]] = []
    by_key: dict[tuple, dict[str, Any]] = {}
    for p in sorted(payloads, key=lambda p: p["rank"]):
        fp = p.get("fingerprint") or {}
        key = tuple(sorted((k, repr(v)) for k, v in _flat(fp).items()))
        group = by_key.get(key)
        if group is None:
            group = {"id": group_name(len(groups)), "ranks": [], "hosts": [], "fingerprint": fp,
                     "environment": p.get("environment")}
            by_key[key] = group
            groups.append(group)
        group["ranks"].append(p["rank"])
        if p.get("host") and p["host"] not in group["hosts"]:
            group["hosts"].append(p["host"])
    differences: list[dict[str, Any]] = []
    if len(groups) > 1:
        flats = [_flat(g["fingerprint"]) for g in groups]
        fields = list(dict.fromkeys(k for f in flats for k in f))
        for name in fields:
            values = {g["id"]: f.get(name) for g, f in zip(groups, flats)}
            if len({repr(v) for v in values.values()}) > 1:
                label = name[4:] if name.startswith("env.") else FIELD_LABELS.get(name, name)
                differences.append({"field": name, "label": label, "values": values})
    return groups, differences


def _by_value(values: Mapping[int, Any]) -> list[dict[str, Any]]:
    """{rank: value} → [{"value": v, "ranks": [...]}] ordered by lowest rank."""
    out: dict[str, dict[str, Any]] = {}
    for rank in sorted(values):
        key = repr(values[rank])
        out.setdefault(key, {"value": values[rank], "ranks": []})["ranks"].append(rank)
    return list(out.values())


def compare_selections(payloads: Sequence[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Where the ranks' answers differ: the backend each framework selects (`selected`: the job would run
    different kernels on different ranks), the per-backend verdicts (`verdicts`: shown, not gated on their own),
    and the configs themselves (`configs`: ranks that evaluated different configs, e.g. a --model path that reads
    differently on one node)."""
    answered = [p for p in payloads if not p.get("error")]
    out: dict[str, list[dict[str, Any]]] = {"selected": [], "verdicts": [], "configs": []}
    if len(answered) < 2:
        return out
    labels = {p["rank"]: [r["label"] for r in p.get("results", [])] for p in answered}
    if len({tuple(v) for v in labels.values()}) > 1:
        out["configs"] = [{"ranks": g["ranks"], "labels": g["value"]} for g in _by_value(labels)]
        return out
    first = answered[0]
    for i, result in enumerate(first.get("results", [])):
        label = result["label"]
        frameworks = list(dict.fromkeys(f for p in answered for f in p["results"][i]["selected"]))
        for fw in frameworks:
            values = {p["rank"]: _selection(p["results"][i]["selected"].get(fw)) for p in answered}
            split = _by_value(values)
            if len(split) > 1:
                out["selected"].append({"config": label, "index": i, "framework": fw,
                                        "values": [{**g["value"], "ranks": g["ranks"]} for g in split]})
        backends = list(dict.fromkeys(b for p in answered for b in p["results"][i]["verdicts"]))
        for backend in backends:
            values = {p["rank"]: p["results"][i]["verdicts"].get(backend) for p in answered}
            split = _by_value(values)
            if len(split) > 1:
                out["verdicts"].append({"config": label, "index": i, "backend": backend,
                                        "values": [{"status": g["value"], "ranks": g["ranks"]} for g in split]})
    return out


def _selection(value: Mapping[str, Any] | None) -> dict[str, Any]:
    if not value:
        return {"backend": None, "status": "none"}
    return {"backend": value.get("backend"), "status": value.get("status")}


# ---------------------------------------------------------------- context parallel


def cp_fit(configs: Sequence[AttentionConfig], world_size: int) -> list[dict[str, Any]]:
    """For each context-parallel config (cp > 1): does it fit a world of `world_size` ranks?

    - cp must divide the world size (the rest of the world is data/tensor parallel);
    - the total sequence length must be divisible by 2·cp: load-balanced context parallelism cuts every sequence
      into 2·cp chunks and gives rank i chunks i and 2·cp-1-i (TransformerEngine, Megatron);
    - with cp_comm a2a, query and key/value heads must be divisible by cp (the all-to-all scatters heads).

    `fits` is True, False, or None when a length or head count it needs was not given.
    """
    out = []
    for config in configs:
        if config.cp <= 1:
            continue
        cp = config.cp
        problems: list[str] = []
        unknown: list[str] = []
        if world_size % cp:
            problems.append(f"cp={cp} does not divide the world size {world_size}")
        chunks = 2 * cp
        lengths = [("seqlen_q", config.seqlen_q)]
        if config.seqlen_kv is not None and config.seqlen_kv != config.seqlen_q:
            lengths.append(("seqlen_kv", config.seqlen_kv))
        for name, value in lengths:
            if value is None:
                unknown.append(name)
            elif value % chunks:
                padded = -(-value // chunks) * chunks
                problems.append(f"{name} {value} is not divisible by 2·cp = {chunks} (pad to {padded})")
        if config.cp_comm == "a2a":
            for name, value in (("heads", config.heads), ("kv_heads", config.kv_heads or config.heads)):
                if value is None:
                    unknown.append(name)
                elif value % cp:
                    problems.append(f"{name} {value} is not divisible by cp={cp} (a2a scatters heads)")
        fits = False if problems else (None if unknown else True)
        out.append({"config": config.label(), "cp": cp, "cp_comm": config.cp_comm, "world_size": world_size,
                    "other_parallel": world_size // cp if world_size % cp == 0 else None,
                    "seqlen_q": config.seqlen_q, "seqlen_kv": config.seqlen_kv, "fits": fits,
                    "problems": problems, "unknown": sorted(set(unknown))})
    return out


# ---------------------------------------------------------------- the whole answer


def decide(*, mismatches: Mapping[str, Sequence[Any]], cp: Sequence[Mapping[str, Any]],
           missing: Sequence[int], errors: Mapping[int, str]) -> tuple[int, list[str]]:
    """The exit code and one line per reason: 2 when a rank could not evaluate (bad input there), 1 when the
    selected backends differ, ranks evaluated different configs, a context-parallel config does not fit the world,
    or a rank did not answer in time; else 0."""
    reasons = []
    for rank, message in sorted(errors.items()):
        reasons.append(f"rank {rank} could not evaluate: {message}")
    if missing:
        reasons.append(f"{plural(len(missing), 'rank')} did not answer in time: {compact_ranks(missing)}")
    if mismatches.get("configs"):
        reasons.append("the ranks evaluated different configs")
    for m in mismatches.get("selected", ()):
        picks = "; ".join(f"{v['backend'] or 'nothing'} ({v['status']}) on ranks {compact_ranks(v['ranks'])}"
                          for v in m["values"])
        reasons.append(f"{m['config']}: {m['framework']} selects different backends: {picks}")
    for f in cp:
        if f["fits"] is False:
            reasons.append(f"{f['config']}: does not fit the world: {'; '.join(f['problems'])}")
    if errors:
        return 2, reasons
    return (1 if reasons else 0), reasons


def fleet_document(*, launch: Mapping[str, Any], payloads: Sequence[Mapping[str, Any] | None],
                   configs: Sequence[AttentionConfig], seconds: float | None = None,
                   rank_timeout: float | None = None, transport: str = "") -> dict[str, Any]:
    """The fleet report as plain data (`--format json`), from every rank's payload (None: did not answer)."""
    from .._version import __version__

    world = len(payloads)
    missing = [r for r, p in enumerate(payloads) if p is None]
    answered = [p for p in payloads if p is not None]
    errors = {p["rank"]: p["error"] for p in answered if p.get("error")}
    groups, differences = group_ranks(answered)
    rank_group = {r: g["id"] for g in groups for r in g["ranks"]}
    mismatches = compare_selections(answered)
    cp = cp_fit(configs, world)
    code, reasons = decide(mismatches=mismatches, cp=cp, missing=missing, errors=errors)
    ranks = []
    for r, p in enumerate(payloads):
        if p is None:
            ranks.append({"rank": r, "answered": False})
            continue
        ranks.append({"rank": r, "answered": True, "group": rank_group.get(r), "local_rank": p.get("local_rank"),
                      "host": p.get("host"), "pid": p.get("pid"), "device": p.get("device"),
                      "environment_source": (p.get("environment") or {}).get("source"),
                      "fingerprint": p.get("fingerprint"),
                      "selected": [res["selected"] for res in p.get("results", [])],
                      "error": p.get("error"), "seconds": p.get("seconds")})
    hosts = list(dict.fromkeys(p.get("host") for p in answered if p.get("host")))
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "attndoctor", "version": __version__},
        "command": "fleet",
        "world": {**dict(launch), "size": world, "answered": len(answered), "missing": missing, "hosts": hosts,
                  "rank_timeout": rank_timeout, "seconds": seconds, "transport": transport},
        "configs": [c.label() for c in configs],
        "ranks": ranks,
        "groups": groups,
        "differences": differences,
        "mismatches": mismatches,
        "context_parallel": cp,
        "gate": {"passed": code == 0, "exit_code": code, "reasons": reasons},
    }


def compact_ranks(ranks: Iterable[int]) -> str:
    """[0, 1, 2, 5, 7, 8] → '0-2,5,7-8'."""
    items = sorted(set(ranks))
    parts: list[str] = []
    i = 0
    while i < len(items):
        j = i
        while j + 1 < len(items) and items[j + 1] == items[j] + 1:
            j += 1
        parts.append(str(items[i]) if i == j else f"{items[i]}-{items[j]}")
        i = j + 1
    return ",".join(parts)
