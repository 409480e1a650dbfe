"""`verify`: run the real kernels (through attndoctor_kernels, in a worker process) and lay what they did beside
what the rules said. Also what the observation replay shares with it: defaults for unknown shape fields, the
environment each backend's rules are evaluated in, and when an observation agrees with a verdict.

The engine never imports this module's kernel side: `run_verify` imports attndoctor_kernels lazily.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator, Mapping, Sequence

from .._version import __version__
from ..config import AttentionConfig, make_config
from ..engine.install import environment_dict
from ..engine.states import Outcome, Status
from ..environment import TE_SWITCHES, Environment
from ..errors import UsageError

SCHEMA_VERSION = 1

DEFAULTS: dict[str, Any] = {"batch": 2, "heads": 8, "seqlen_q": 256, "hdim": 64, "dtype": "bf16", "train": False,
                            "layout": "bshd"}
"""What verify runs when a shape field is unknown: small, documented, and said in the output. kv_heads follows
heads, seqlen_kv follows seqlen_q and hdim_v follows hdim, as in the config itself."""

OBSERVED = tuple(Outcome)
FAILED = ("rejected", "api-mismatch", "crashed", "not-installed")

RAN_CLEAN = frozenset({"ok"})
WRONG = frozenset({"wrong-results"})
REFUSED = frozenset(FAILED)
"""The outcomes a prediction is judged on (out-of-memory and skipped say nothing about support)."""
_CONFIRMED_BY: dict[str, frozenset[str]] = {
    "supported": RAN_CLEAN,
    # a known bug bites only on the data its advisory names: a clean run and a wrong one both agree with it
    "known-bug": RAN_CLEAN | WRONG,
    "unsupported": REFUSED,
    "api-mismatch": REFUSED,
    "wrong-results": WRONG,
    "not-installed": frozenset({"not-installed"}),
}
"""For each predicted status, the observed outcomes that confirm it; every other judged outcome contradicts it."""
_AGREE: dict[str, dict[str, str]] = {
    predicted: {outcome: "confirmed" if outcome in confirming else "contradicted"
                for outcome in sorted(RAN_CLEAN | WRONG | REFUSED)}
    for predicted, confirming in _CONFIRMED_BY.items()
}
DISAGREEMENTS = ("contradicted", "undecided")


def agreement(outcome: str, predicted: str) -> str:
    """confirmed | contradicted | undecided (the rules said `depends` on a probed machine, whose facts are all
    known, or the machine's versions lie outside what they model) | inconclusive (out of memory, or a case the runners do not build: says nothing about support)."""
    if outcome in (Outcome.OUT_OF_MEMORY, Outcome.SKIPPED):
        return "inconclusive"
    if predicted in (Status.DEPENDS, Status.OUTSIDE_RULES):
        return "undecided"
    return _AGREE.get(predicted, {}).get(outcome, "contradicted")


def disagrees(outcome: str, predicted: str) -> bool:
    return agreement(outcome, predicted) in DISAGREEMENTS


def fill_defaults(config: AttentionConfig) -> tuple[AttentionConfig, tuple[str, ...]]:
    """The config with DEFAULTS in place of unknown shape fields, and the names of the fields filled."""
    values = config.to_dict()
    filled = []
    for key, value in DEFAULTS.items():
        if values.get(key) is None:
            values[key] = value
            filled.append(key)
            if key == "heads" and values.get("kv_heads") is None:
                values["kv_heads"] = value
            if key == "hdim" and values.get("hdim_v") is None:
                values["hdim_v"] = value
            if key == "seqlen_q" and values.get("seqlen_kv") is None:
                values["seqlen_kv"] = value
    if not filled:
        return config, ()
    return make_config(values), tuple(filled)


def backend_environment(env: Environment, backend: str) -> Environment:
    """The environment the rules for `backend` are evaluated in: the machine, with the switches its runner sets."""
    for name, value in TE_SWITCHES.get(backend, {}).items():
        env = env.with_env_var(name, value)
    return env


def recorded_environment(env: Environment) -> dict[str, Any]:
    """The environment as an observation records it: as reports write it, without GPU serial ids."""
    data = environment_dict(env)
    data["gpus"] = [{k: v for k, v in g.items() if k != "uuid"} for g in data.get("gpus", [])]
    return data


# ---------------------------------------------------------------- observations


@dataclass
class Observation:
    """One backend run on one config, beside the engine's verdict for it."""

    config: AttentionConfig
    backend: str
    outcome: str
    predicted: str
    agreement: str
    result: dict[str, Any] = field(default_factory=dict)
    rules: tuple[str, ...] = ()
    defaults: tuple[str, ...] = ()
    baseline_error: float | None = None

    @property
    def error(self) -> str:
        return str(self.result.get("error") or "")

    @property
    def rel_error(self) -> float | None:
        value = self.result.get("rel_error")
        if value == "inf":
            return float("inf")
        return None if value is None else float(value)

    @property
    def ms(self) -> float | None:
        value = self.result.get("ms")
        return None if value is None else float(value)

    def record(self, environment: Mapping[str, Any], seed: int) -> dict[str, Any]:
        """The JSON line `verify --record` writes."""
        r = self.result
        return {
            "schema_version": SCHEMA_VERSION,
            "attndoctor": __version__,
            "environment": environment,
            "config": self.config.to_dict(),
            "defaults": list(self.defaults),
            "backend": self.backend,
            "outcome": self.outcome,
            "predicted": self.predicted,
            "agreement": self.agreement,
            "rules": list(self.rules),
            "error": self.error,
            "expressible": r.get("expressible", True),
            "phase": r.get("phase", ""),
            "rel_error": r.get("rel_error"),
            "errors": r.get("errors", {}),
            "tolerance": r.get("tolerance"),
            "baseline_error": self.baseline_error,
            "ms": r.get("ms"),
            "ms_forward": r.get("ms_forward"),
            "ms_backward": r.get("ms_backward"),
            "ms_first": r.get("ms_first"),
            "ms_setup": r.get("ms_setup"),
            "round_trip_ms": r.get("round_trip_ms"),
            "library_version": r.get("version", ""),
            "details": {k: v for k, v in (r.get("details") or {}).items() if k != "traceback"},
            "warnings": r.get("warnings", []),
            "seed": seed,
        }

    def to_dict(self) -> dict[str, Any]:
        return {"config": self.config.to_dict(), "label": self.config.label(), "backend": self.backend,
                "outcome": self.outcome, "predicted": self.predicted, "agreement": self.agreement,
                "rules": list(self.rules), "error": self.error, "rel_error": self.result.get("rel_error"),
                "errors": self.result.get("errors", {}), "tolerance": self.result.get("tolerance"),
                "baseline_error": self.baseline_error, "ms": self.ms, "phase": self.result.get("phase", ""),
                "expressible": self.result.get("expressible", True), "defaults": list(self.defaults)}


@dataclass
class VerifyReport:
    """Everything verify saw: the machine, the backends it found, one observation per (config, backend)."""

    environment: Environment
    observations: list[Observation]
    inventory: dict[str, dict[str, Any]]
    backends: list[str]
    configs: list[AttentionConfig]
    defaults: dict[str, tuple[str, ...]]
    seed: int
    wall_s: float = 0.0
    worker_starts: int = 0
    worker_info: dict[str, Any] = field(default_factory=dict)
    record_path: str | None = None

    @property
    def disagreements(self) -> list[Observation]:
        return [o for o in self.observations if o.agreement in DISAGREEMENTS]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for o in self.observations:
            out[o.agreement] = out.get(o.agreement, 0) + 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "attndoctor", "version": __version__},
            "command": "verify",
            "environment": environment_dict(self.environment),
            "backends": {b: self.inventory.get(b, {}) for b in self.backends},
            "defaults": {"values": DEFAULTS, "filled": {k: list(v) for k, v in self.defaults.items() if v}},
            "seed": self.seed,
            "observations": [o.to_dict() for o in self.observations],
            "summary": {"observations": len(self.observations), "agreement": self.counts(),
                        "wall_s": round(self.wall_s, 2), "worker_starts": self.worker_starts},
            "record": self.record_path,
        }


# ---------------------------------------------------------------- preconditions


def torch_installed() -> bool:
    return importlib.util.find_spec("torch") is not None


def require_gpu(env: Environment, command: str = "verify") -> None:
    """verify and bench need torch and a CUDA GPU that torch can use; one line otherwise (exit 2)."""
    if not torch_installed():
        raise UsageError(f"{command} runs the real kernels and needs PyTorch, which is not installed here "
                         "(use `attndoctor check` or `explain` on this machine)")
    if "torch" in env.import_errors:
        raise UsageError(f"{command} needs PyTorch, which does not import here: {env.import_errors['torch']}")
    if env.no_gpu:
        raise UsageError(f"{command} runs the real kernels and needs an NVIDIA GPU; this machine has none "
                         "(use `attndoctor check` or `explain`)")
    if env.torch_cuda_available is False:
        raise UsageError(f"{command} needs a GPU that torch can use, but torch.cuda.is_available() is False here")


def verify_device(env: Environment, command: str = "verify") -> str:
    """The device verify (or bench) runs on: cuda (checked: exit 2 without torch or a GPU), or what
    ATTNDOCTOR_VERIFY_DEVICE says (cpu runs torch's CPU kernels: for tests and debugging)."""
    import os

    device = os.environ.get("ATTNDOCTOR_VERIFY_DEVICE", "cuda")
    if device == "cuda":
        require_gpu(env, command)
    elif not torch_installed():
        raise UsageError(f"{command} runs the real kernels and needs PyTorch, which is not installed here")
    return device


# ---------------------------------------------------------------- the run


@contextlib.contextmanager
def kernel_worker(supervisor: Any, *, device: str, timeout: float, runner_modules: Iterable[str],
                  backends: Sequence[str], command: str, jobs: int = 1) -> Iterator[tuple[Any, dict[str, Any]]]:
    """The worker that runs the kernels, and what it finds installed; one started here is closed here, one passed
    in stays the caller's."""
    from attndoctor_kernels.supervisor import Supervisor, WorkerError

    from .parallel import worker_env

    sup = supervisor or Supervisor(device=device, timeout=timeout, runner_modules=runner_modules,
                                   env=worker_env(jobs))
    try:
        try:
            inventory = sup.inventory(backends)
        except WorkerError as exc:
            raise UsageError(f"{command} could not start its worker on {device}: {exc}") from None
        yield sup, inventory
    finally:
        if supervisor is None:
            sup.close()


ProgressFn = Callable[[int, int, str], None]


def probe_all(sup: Any, items: Sequence[Mapping[str, Any]],
              before: Callable[[int], None] | None = None) -> list[dict[str, Any]]:
    """Every probe of `items` in one request to the worker (one at a time where the worker has no batches)."""
    many = getattr(sup, "probes", None)
    if many is not None:
        return list(many(items, before=before))
    out = []
    for i, item in enumerate(items):
        if before:
            before(i)
        out.append(sup.probe(item["backend"], item["config"], seed=item.get("seed", 0),
                             repeats=item.get("repeats", 0), **({"regime": item["regime"]} if item.get("regime")
                                                                else {})))
    return out


def _record_stream(record: str | None) -> IO[str] | None:
    """The --record file opened for writing (its folder made), or None; a path that cannot be written is a usage
    error."""
    if not record:
        return None
    from ..inputs import output_opener

    try:
        Path(record).parent.mkdir(parents=True, exist_ok=True)
        return open(record, "w", encoding="utf-8", opener=output_opener("--record"))
    except OSError as exc:
        raise UsageError(f"--record: cannot write {record} ({exc.strerror})") from None


def resolve_jobs(jobs: int | None, device: str, sup: Any) -> int:
    """The number of workers: `jobs`, or the default for the device; fewer where the GPU's memory is short."""
    from .parallel import default_jobs, fit_jobs

    wanted = default_jobs(device) if jobs is None else max(1, int(jobs))
    return fit_jobs(wanted, dict(getattr(sup, "info", {}) or {})) if wanted > 1 else 1


def shape_key(config: Mapping[str, Any]) -> str:
    """What makes a shape for the libraries' plans and compiles: the config without its name and train flag."""
    return json.dumps({k: v for k, v in config.items() if k not in ("name", "train", "origin")}, sort_keys=True,
                      default=str)


def _observe(config: AttentionConfig, names: tuple[str, ...], results: Iterable[tuple[str, Mapping[str, Any]]],
             env: Environment, evaluator: Any, backend_by_id: Mapping[str, Any]) -> list[Observation]:
    """One config's kernel results beside the rules' verdicts, each with the math kernel's error as its baseline."""
    from ..engine.evaluate import build_facts

    batch: list[Observation] = []
    for backend_id, result in results:
        b_env = backend_environment(env, backend_id)
        verdict = evaluator.verdict(backend_by_id[backend_id], config, b_env,
                                    facts=build_facts(config, b_env), search_fix=False)
        outcome = str(result.get("outcome", "crashed"))
        batch.append(Observation(config=config, backend=backend_id, outcome=outcome, predicted=verdict.status,
                                 agreement=agreement(outcome, verdict.status), result=result,
                                 rules=tuple(f.id for f in verdict.findings if f.blocking and f.applies is not False),
                                 defaults=names))
    math = next((o for o in batch if o.backend == "sdpa-math" and o.outcome == "ok"), None)
    for o in batch:
        if math is not None and o is not math:
            o.baseline_error = math.rel_error
    return batch


def run_verify(configs: Sequence[AttentionConfig], env: Environment, *, backends: Sequence[str] | None = None,
               timeout: float = 120.0, repeats: int = 3, seed: int | None = None, record: str | None = None,
               rules_dir: str | None = None, device: str = "cuda", progress: ProgressFn | None = None,
               config_done: Callable[[AttentionConfig, list[Observation]], None] | None = None,
               runner_modules: Iterable[str] = (), supervisor: Any = None, jobs: int | None = None) -> VerifyReport:
    """Run every (config, backend) probe in the kernel workers and compare with the rules. Records as it goes."""
    from ..engine.evaluate import Evaluator
    from ..engine.rules import load_rulebase
    from .parallel import FULL_SCORES, ProbePool, default_jobs, probe_bytes

    base = load_rulebase(rules_dir)
    ids = list(base.backend_ids)
    base.check_backend_ids(backends)
    evaluator = Evaluator(base)
    pairs = [fill_defaults(c) for c in configs]
    filled = [fc for fc, _ in pairs]
    filled_names = [names for _, names in pairs]
    defaults = {fc.name or fc.label(): names for fc, names in pairs if names}
    seed = random.SystemRandom().randrange(1, 2**31 - 1) if seed is None else int(seed)
    environment = recorded_environment(env)
    started = time.monotonic()
    stream = _record_stream(record)
    observations: list[Observation] = []
    with stream or contextlib.nullcontext(), kernel_worker(
            supervisor, device=device, timeout=timeout, runner_modules=runner_modules, backends=backends or ids,
            command="verify", jobs=default_jobs(device) if jobs is None else jobs) as (sup, inventory):
        run = list(backends) if backends else [b for b in ids if inventory.get(b, {}).get("installed")]
        total = len(filled) * len(run)
        backend_by_id = {b.id: b for b in base.backends}
        pool = ProbePool(sup, resolve_jobs(jobs, device, sup))
        # side by side, a config's backends that hold the whole score matrix form a group of their own, so that only
        # they run alone when the shape is too large to share the GPU
        parts: list[tuple[int, list[int]]] = []
        for c in range(len(filled)):
            split = [[i for i, b in enumerate(run) if (b in FULL_SCORES) == heavy] for heavy in (False, True)]
            parts.extend((c, idx) for idx in (split if pool.parallel else [list(range(len(run)))]) if idx or not run)
        groups = [[{"backend": run[i], "config": filled[c].to_dict(), "seed": seed, "repeats": repeats} for i in idx]
                  for c, idx in parts]
        keys = [shape_key(filled[c].to_dict()) for c, _ in parts]
        sizes = [probe_bytes(filled[c].to_dict(), any(run[i] in FULL_SCORES for i in idx)) for c, idx in parts]

        def starting(g: int, i: int, n: int) -> None:
            if progress:
                c, idx = parts[g]
                progress(n, total, f"{filled[c].name or filled[c].label()} · {run[idx[i]]}")

        collected: dict[int, dict[str, Any]] = {}
        for g, got in pool.run(groups, keys, sizes, before=starting):
            c, idx = parts[g]
            collected.update(zip(idx, got))
            if g + 1 < len(parts) and parts[g + 1][0] == c:
                continue
            results = [collected.pop(i) for i in range(len(run))]
            config = filled[c]
            batch = _observe(config, filled_names[c], zip(run, results), env, evaluator, backend_by_id)
            for o in batch:
                if stream is not None:
                    stream.write(json.dumps(o.record(environment, seed), default=str) + "\n")
            if stream is not None:
                stream.flush()
            observations.extend(batch)
            if config_done:
                config_done(config, batch)
        if progress:
            progress(total, total, "done")
        info = dict(getattr(sup, "info", {}) or {})
        starts = pool.starts
    return VerifyReport(environment=env, observations=observations, inventory=inventory, backends=run,
                        configs=filled, defaults=defaults, seed=seed, wall_s=time.monotonic() - started,
                        worker_starts=starts, worker_info=info, record_path=record)


# ---------------------------------------------------------------- replay


@dataclass(frozen=True)
class Replay:
    """One recorded observation evaluated again by today's engine."""

    source: str
    line: int
    backend: str
    outcome: str
    recorded: str
    predicted: str
    agreement: str
    config: AttentionConfig
    record: Mapping[str, Any]

    @property
    def disagrees(self) -> bool:
        return self.agreement in DISAGREEMENTS

    def describe(self) -> str:
        return (f"{self.source}:{self.line}: {self.backend} on {self.config.label()}: observed {self.outcome}, "
                f"rules now say {self.predicted} ({self.agreement}); error: {self.record.get('error') or '-'}")


def read_observations(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, record) for every JSON line of an observations file."""
    from .._json import loads_json
    from ..inputs import describe, read_text

    out = []
    for number, line in enumerate(read_text(path, describe(path, "observations file")).splitlines(), 1):
        if not line.strip():
            continue
        record = loads_json(line, f"{path}:{number}")
        if not isinstance(record, dict):
            raise UsageError(f"{path}:{number}: expected a JSON object")
        out.append((number, record))
    return out


def replay(paths: Iterable[str | Path], *, rules_dir: str | None = None) -> list[Replay]:
    """Evaluate every recorded observation with the current rules, no GPU needed."""
    from ..engine.evaluate import Evaluator
    from ..engine.rules import load_rulebase
    from ..environment import environment_from_dict

    base = load_rulebase(rules_dir)
    evaluator = Evaluator(base)
    backends = {b.id: b for b in base.backends}
    out = []
    for path in paths:
        for number, record in read_observations(path):
            where = f"{Path(path).name}:{number}"
            for key in ("environment", "config", "backend", "outcome"):
                if key not in record:
                    raise UsageError(f"{where}: observation lacks {key!r}")
            backend = record["backend"]
            if backend not in backends:
                raise UsageError(f"{where}: unknown backend {backend!r}")
            if record["outcome"] not in OBSERVED:
                raise UsageError(f"{where}: unknown outcome {record['outcome']!r}")
            env = backend_environment(environment_from_dict(record["environment"], where=where), backend)
            config = make_config(record["config"], where=where)
            verdict = evaluator.verdict(backends[backend], config, env, search_fix=False)
            out.append(Replay(source=Path(path).name, line=number, backend=backend, outcome=record["outcome"],
                              recorded=str(record.get("predicted", "")), predicted=verdict.status,
                              agreement=agreement(record["outcome"], verdict.status), config=config, record=record))
    return out


def stderr_progress(label: str = "verify") -> tuple[ProgressFn, Callable[[], None]]:
    """A progress bar on stderr when it is a terminal, otherwise a line every config; and a closer."""
    from ..console.output import shown

    if sys.stderr.isatty():
        from rich.console import Console
        from rich.markup import escape
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                       TextColumn("{task.description}"), console=Console(stderr=True), transient=True)
        bar.start()
        task = bar.add_task("", total=None)

        def update(done: int, total: int, what: str) -> None:
            bar.update(task, completed=done, total=total, description=escape(shown(what, newlines=False)))

        return update, bar.stop
    state = {"last": ""}

    def update_plain(done: int, total: int, what: str) -> None:
        if done == total:
            return
        config = shown(what.split(" · ")[0], newlines=False)
        if config != state["last"]:
            state["last"] = config
            sys.stderr.write(f"{label} [{done}/{total}] {config}\n")
            sys.stderr.flush()

    return update_plain, lambda: None


# ---------------------------------------------------------------- known gaps


@dataclass(frozen=True)
class KnownGap:
    """A disagreement accepted for now (tests/observations/known_gaps.toml), with the reason."""

    index: int
    backend: str
    reason: str
    outcome: str | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    environment: Mapping[str, Any] = field(default_factory=dict)

    def matches(self, item: Replay) -> bool:
        if item.backend != self.backend or (self.outcome is not None and item.outcome != self.outcome):
            return False
        values = item.config.to_dict()
        for key, want in self.config.items():
            have = values.get(key)
            if isinstance(want, list):
                if have not in want and list(have if isinstance(have, (list, tuple)) else [have]) != want:
                    return False
            elif have != want:
                return False
        env = item.record.get("environment", {})
        for key, want in self.environment.items():
            if key in ("gpu",):
                if not str(env.get("gpu") or "").startswith(str(want)):
                    return False
            elif key == "sm":
                if env.get("sm") != want:
                    return False
            else:
                have = str((env.get("versions") or {}).get(key) or "")
                if not (have == str(want) or have.startswith(f"{want}.") or have.startswith(f"{want}+")):
                    return False
        return True


def load_known_gaps(path: str | Path) -> list[KnownGap]:
    """The [[gap]] tables of a known-gaps file; each needs a backend and a reason."""
    from .._toml import loads_toml
    from ..inputs import describe, read_text

    p = Path(path)
    if not os.path.lexists(p):
        return []
    doc = loads_toml(read_text(p, describe(p, "known-gaps file")))
    out = []
    allowed = {"backend", "reason", "outcome", "config", "environment"}
    for i, entry in enumerate(doc.get("gap", []) or [], 1):
        where = f"{p.name} gap {i}"
        if not isinstance(entry, Mapping):
            raise UsageError(f"{where}: expected a table")
        extra = sorted(set(entry) - allowed)
        if extra:
            raise UsageError(f"{where}: unknown key {extra[0]!r}; accepted: {', '.join(sorted(allowed))}")
        if not entry.get("backend") or not str(entry.get("reason", "")).strip():
            raise UsageError(f"{where}: needs a backend and a reason")
        if entry.get("outcome") is not None and entry["outcome"] not in OBSERVED:
            raise UsageError(f"{where}: unknown outcome {entry['outcome']!r}")
        out.append(KnownGap(index=i, backend=str(entry["backend"]), reason=str(entry["reason"]),
                            outcome=entry.get("outcome"), config=dict(entry.get("config") or {}),
                            environment=dict(entry.get("environment") or {})))
    return out
