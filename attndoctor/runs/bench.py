"""`bench`: time every backend the rules say can run a config (in the isolated worker) and recommend the fastest,
with the code that selects it, beside what the framework picks by default.

The FLOP count, the throughput figures and the recommendation are pure functions (no torch, unit-tested on any
machine); `run_bench` is the orchestration: rules → worker (attndoctor_kernels, imported lazily) → BenchReport.

FLOP count (the convention of the FlashAttention papers and benchmarks, so figures compare with theirs):

    forward           = 2 · B · H · Sq · Skv · (D + Dv) · f      (Q·Kᵀ: 2·Sq·Skv·D, P·V: 2·Sq·Skv·Dv per head;
                                                                  with Dv = D this is 4·B·H·Sq·Skv·D)
    backward          = 2.5 · forward                             (five matmuls against the forward's two)
    forward+backward  = 3.5 · forward

H counts query heads (GQA and MQA do the same matmuls per query head; fewer key/value heads move fewer bytes).
f is the fraction of (query, key) pairs the mask lets through: 1 without a mask; exactly 1/2 for a causal mask
with Sq == Skv (the usual convention, rather than (S+1)/(2S)); for a causal mask with Sq != Skv or a sliding window,
the exact count of allowed pairs over Sq·Skv, with the mask's alignment (top-left for `causal`, bottom-right for
`causal-bottom-right` and for windows). Padding and arbitrary masks count as dense (full lengths). TFLOP/s =
FLOP / time; % of peak = TFLOP/s over the GPU's dense tensor-core peak for the dtype (attndoctor/data/gpus.toml).

Bytes moved (the least HBM traffic a kernel can do: every tensor read or written once; e = bytes per element of the
dtype, Hk = key/value heads, so a decode step's K/V cache is the 2nd and 3rd terms):

    forward           = e · (B·H·Sq·D + B·Hk·Skv·D + B·Hk·Skv·Dv + B·H·Sq·Dv)          (Q, K, V read; O written)
                        + 4 · B·H·Sq   when training                                  (the fp32 logsumexp written)
    backward          = e · (B·H·Sq·D + B·Hk·Skv·(D + Dv) + 2 · B·H·Sq·Dv)             (Q, K, V, O, dO read)
                        + 4 · B·H·Sq                                                  (logsumexp read)
                        + e · (B·H·Sq·D + B·Hk·Skv·(D + Dv))                          (dQ, dK, dV written)
    forward+backward  = forward + backward

Masks do not lower it (every K/V row is still read once) and kernels that re-read K/V per query tile or keep an
fp32 dQ accumulator move more: GB/s = bytes / time is a lower bound on the traffic achieved. % of HBM = GB/s over the
GPU's memory bandwidth (gpus.toml `bandwidth_gbs`, from the vendor's datasheet). The roofline bound: arithmetic
intensity (FLOP / byte) below the GPU's ridge point (peak FLOP/s / bandwidth) is memory-bound, at or above it
compute-bound; a memory-bound shape is judged by % of HBM, a compute-bound one by % of peak TFLOP/s.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from .._version import __version__
from ..config import AttentionConfig
from ..engine.install import environment_dict
from ..environment import Environment
from ..words import verdict_words

SCHEMA_VERSION = 1
FLOP_FORMULA = ("forward = 2*B*H*Sq*Skv*(D+Dv)*f; backward = 2.5*forward; forward+backward = 3.5*forward; "
                "H = query heads; f = 1/2 for causal with Sq == Skv, else the exact fraction of allowed (q, k) pairs "
                "for causal/window masks, 1 otherwise (padding and arbitrary masks count dense)")
BACKWARD_FACTOR = 2.5
NOISE_FLOOR = 0.02
"""Two timings closer than this (relative), or than their own interquartile spread, are a tie."""
MATH_SCORE_LIMIT = 1 << 30
"""sdpa-math materialises the (Sq x Skv) scores of every head: it is timed only when they take at most this many
bytes in fp32 (or when named with --backend)."""
CAUSAL_TOP_LEFT = ("causal", "padding-causal")
CAUSAL_BOTTOM_RIGHT = ("causal-bottom-right", "padding-causal-bottom-right")

DEFAULT_OPTIONS: dict[str, Any] = {"runs": 20, "max_runs": 100, "budget_ms": 100.0, "graphs": "auto", "sets": 0}
"""runs: least timed runs per measurement (the median is reported); max_runs and budget_ms: short calls get more
runs, up to about budget_ms of work; graphs: auto (capture CUDA graphs where the backend allows, else eager) or off;
sets: input sets rotated (0: enough to exceed the L2 cache three times, 2 to 8)."""


# ---------------------------------------------------------------- FLOPs (pure)


@dataclass(frozen=True)
class FlopCount:
    forward: float
    fraction: float

    @property
    def backward(self) -> float:
        return BACKWARD_FACTOR * self.forward

    @property
    def train(self) -> float:
        return self.forward + self.backward

    def to_dict(self) -> dict[str, float]:
        return {"forward": self.forward, "backward": self.backward, "forward_backward": self.train,
                "mask_fraction": self.fraction}


def _allowed_pairs(sq: int, skv: int, lo_offset: int | None, hi_offset: int | None) -> int:
    """Pairs (i, j), 0 <= i < sq, 0 <= j < skv, with i + lo_offset <= j <= i + hi_offset (None: unbounded)."""
    total = 0
    for i in range(sq):
        lo = 0 if lo_offset is None else max(0, i + lo_offset)
        hi = skv - 1 if hi_offset is None else min(skv - 1, i + hi_offset)
        if hi >= lo:
            total += hi - lo + 1
    return total


def mask_fraction(seqlen_q: int, seqlen_kv: int, mask: str = "none",
                  window: Sequence[int] | None = None) -> float:
    """The fraction f of (query, key) pairs counted (module docstring)."""
    mask = mask or "none"
    left, right = (int(window[0]), int(window[1])) if window else (-1, -1)
    causal = mask in CAUSAL_TOP_LEFT or mask in CAUSAL_BOTTOM_RIGHT
    if not causal and left < 0 and right < 0:
        return 1.0
    if causal and left < 0 and seqlen_q == seqlen_kv:
        return 0.5
    shift = 0 if mask in CAUSAL_TOP_LEFT else seqlen_kv - seqlen_q  # windows align bottom-right without causal
    hi = shift if causal else (None if right < 0 else shift + right)
    if causal and right >= 0:
        hi = shift + min(right, 0)
    lo = None if left < 0 else shift - left
    return _allowed_pairs(seqlen_q, seqlen_kv, lo, hi) / float(seqlen_q * seqlen_kv)


def attention_flops(config: Mapping[str, Any]) -> FlopCount:
    """The FLOP count of one attention call for a config dict (AttentionConfig.to_dict() with its shape known)."""
    b, h = int(config["batch"]), int(config["heads"])
    sq = int(config["seqlen_q"])
    skv = int(config.get("seqlen_kv") or sq)
    d = int(config["hdim"])
    dv = int(config.get("hdim_v") or d)
    f = mask_fraction(sq, skv, str(config.get("mask") or "none"), config.get("window"))
    return FlopCount(forward=2.0 * b * h * sq * skv * (d + dv) * f, fraction=f)


DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4, "fp8": 1}
BYTES_FORMULA = ("forward = e*(B*H*Sq*D + B*Hk*Skv*(D+Dv) + B*H*Sq*Dv) [+ 4*B*H*Sq logsumexp when training]; "
                 "backward = e*(B*H*Sq*D + B*Hk*Skv*(D+Dv) + 2*B*H*Sq*Dv) + 4*B*H*Sq + e*(B*H*Sq*D + "
                 "B*Hk*Skv*(D+Dv)); e = bytes per element; each tensor once (a lower bound)")


@dataclass(frozen=True)
class ByteCount:
    """The least HBM traffic of one attention call (module docstring), in bytes."""

    forward: float
    backward: float

    @property
    def train(self) -> float:
        return self.forward + self.backward

    def to_dict(self) -> dict[str, float]:
        return {"forward": self.forward, "backward": self.backward, "forward_backward": self.train}


def attention_bytes(config: Mapping[str, Any]) -> ByteCount:
    """The bytes one attention call must move for a config dict (Q, K, V, O; the K/V cache for decode; backward's
    reads of Q, K, V, O, dO and the logsumexp and writes of dQ, dK, dV)."""
    b, h = int(config["batch"]), int(config["heads"])
    hk = int(config.get("kv_heads") or h)
    sq = int(config["seqlen_q"])
    skv = int(config.get("seqlen_kv") or sq)
    d = int(config["hdim"])
    dv = int(config.get("hdim_v") or d)
    e = DTYPE_BYTES.get(str(config.get("dtype") or "bf16"), 2)
    q, o, kv, lse = b * h * sq * d, b * h * sq * dv, b * hk * skv * (d + dv), 4 * b * h * sq
    train = bool(config.get("train"))
    forward = e * (q + kv + o) + (lse if train else 0)
    backward = e * (q + kv + 2 * o) + lse + e * (q + kv)
    return ByteCount(forward=float(forward), backward=float(backward))


def roofline(flop: float, nbytes: float, peak_tflops: float | None, bandwidth_gbs: float | None) -> dict[str, Any]:
    """Arithmetic intensity (FLOP/byte), the GPU's ridge point and the bound it puts the call under: `memory` below
    the ridge, `compute` at or above it (None where the GPU's peak or bandwidth is unknown)."""
    intensity = flop / nbytes if nbytes else None
    ridge = (peak_tflops * 1e12) / (bandwidth_gbs * 1e9) if peak_tflops and bandwidth_gbs else None
    bound = None if intensity is None or ridge is None else ("memory" if intensity < ridge else "compute")
    return {"intensity": intensity, "ridge": ridge, "bound": bound}


def gbs(nbytes: float, ms: float | None) -> float | None:
    """GB/s (10^9 bytes per second) of `nbytes` moved in `ms` milliseconds."""
    if ms is None or ms <= 0:
        return None
    return nbytes / (ms * 1e-3) / 1e9


def tflops(flop: float, ms: float | None) -> float | None:
    """TFLOP/s of `flop` done in `ms` milliseconds."""
    if ms is None or ms <= 0:
        return None
    return flop / (ms * 1e-3) / 1e12


def peak_percent(achieved: float | None, peak: float | None) -> float | None:
    if achieved is None or not peak:
        return None
    return 100.0 * achieved / peak


# ---------------------------------------------------------------- recommendation (pure)


@dataclass(frozen=True)
class Recommendation:
    """The fastest backend measured, and how the framework's default pick compares with it."""

    backend: str | None
    ms: float | None = None
    select: str = ""
    default: str | None = None
    default_framework: str | None = None
    default_ms: float | None = None
    speedup: float | None = None
    """default_ms / ms: how many times faster the recommendation is than the default (1.0: it is the default)."""
    tie: tuple[str, ...] = ()
    """Other backends within the noise of the fastest."""
    default_within_noise: bool = False
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"backend": self.backend, "ms": self.ms, "select": self.select, "default": self.default,
                "default_framework": self.default_framework, "default_ms": self.default_ms,
                "speedup_vs_default": self.speedup, "tie": list(self.tie),
                "default_within_noise": self.default_within_noise, "note": self.note}


def recommend(times: Mapping[str, float], *, default: str | None = None, default_framework: str | None = None,
              spreads: Mapping[str, float] | None = None, selects: Mapping[str, str] | None = None,
              order: Sequence[str] = ()) -> Recommendation:
    """The fastest of `times` (backend -> median ms of the config's metric), compared with `default`.

    Ties on time go to the earlier backend of `order` (the catalogue's order). `spreads` (backend -> relative
    interquartile range) widen the noise band beyond NOISE_FLOOR: a backend within it of the fastest is listed
    in `tie`, and a default within it is `default_within_noise` (no change needed)."""
    spreads = spreads or {}
    selects = selects or {}
    valid = {b: float(t) for b, t in times.items() if t is not None and t > 0}
    if not valid:
        note = "no backend could be timed"
        return Recommendation(None, default=default, default_framework=default_framework, note=note)
    rank = {b: i for i, b in enumerate(order)}
    best = min(valid, key=lambda b: (valid[b], rank.get(b, len(rank)), b))
    best_ms = valid[best]

    def within(b: str) -> bool:
        band = max(NOISE_FLOOR, spreads.get(best, 0.0), spreads.get(b, 0.0))
        return valid[b] <= best_ms * (1.0 + band)

    tie = tuple(b for b in sorted(valid, key=lambda x: valid[x]) if b != best and within(b))
    default_ms = valid.get(default) if default else None
    speedup = default_ms / best_ms if default_ms else None
    within_noise = bool(default_ms) and default is not None and (default == best or within(default))
    if default is None:
        note = "no framework default could be named for this config"
    elif default_ms is None:
        note = f"the default ({default}) was not timed"
    elif default == best:
        note = f"the default ({default}) is the fastest"
    elif within_noise:
        note = f"the default ({default}) is within the noise of the fastest: no change needed"
    else:
        note = f"{best} is {speedup:.2f}x as fast as the default ({default})"
    return Recommendation(best, best_ms, selects.get(best, ""), default, default_framework, default_ms, speedup,
                          tie, within_noise, note)


def default_pick(selections: Iterable[Any], measured: Iterable[str]) -> tuple[str | None, str | None]:
    """(framework, backend) of the default to compare against: PyTorch's pick when it names one, else the first
    framework whose pick was measured."""
    picks = [(s.framework, s.backend) for s in selections if s.status == "selected" and s.backend]
    for framework, backend in picks:
        if framework == "pytorch":
            return framework, backend
    seen = set(measured)
    for framework, backend in picks:
        if backend in seen:
            return framework, backend
    return (picks[0] if picks else (None, None))


# ---------------------------------------------------------------- results


@dataclass
class ConfigBench:
    """One config: its FLOPs, the backends timed (worker results with throughput added), the ones not timed and
    why, the frameworks' default picks, and the recommendation."""

    config: AttentionConfig
    flops: FlopCount
    measurements: list[dict[str, Any]]
    not_run: list[dict[str, str]]
    selections: list[dict[str, Any]]
    recommendation: Recommendation
    defaults: tuple[str, ...] = ()
    bytes: ByteCount | None = None
    roofline: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per metric (forward, forward_backward): intensity, ridge and bound (roofline())."""

    @property
    def bound(self) -> str | None:
        """compute | memory for the config's metric (None where the GPU's figures are unknown)."""
        return (self.roofline.get(self.metric) or {}).get("bound")

    @property
    def metric(self) -> str:
        return "forward_backward" if self.config.train else "forward"

    def to_dict(self) -> dict[str, Any]:
        return {"config": self.config.to_dict(), "label": self.config.label(), "defaults": list(self.defaults),
                "metric": self.metric, "flops": self.flops.to_dict(),
                "bytes": self.bytes.to_dict() if self.bytes else None, "roofline": self.roofline,
                "bound": self.bound, "measurements": self.measurements,
                "not_run": self.not_run, "selected": self.selections,
                "recommendation": self.recommendation.to_dict()}


@dataclass
class BenchReport:
    environment: Environment
    results: list[ConfigBench]
    gpu: dict[str, Any]
    options: dict[str, Any]
    seed: int
    wall_s: float = 0.0
    worker_info: dict[str, Any] = field(default_factory=dict)
    inventory: dict[str, dict[str, Any]] = field(default_factory=dict)
    device: str = "cuda"

    @property
    def untimed(self) -> list[ConfigBench]:
        return [r for r in self.results if r.recommendation.backend is None]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "attndoctor", "version": __version__},
            "command": "bench",
            "environment": environment_dict(self.environment),
            "device": self.device,
            "worker": self.worker_info,
            "gpu": self.gpu,
            "flop_formula": FLOP_FORMULA,
            "bytes_formula": BYTES_FORMULA,
            "options": self.options,
            "seed": self.seed,
            "backends": self.inventory,
            "results": [r.to_dict() for r in self.results],
            "summary": {"configs": len(self.results), "untimed": len(self.untimed), "wall_s": round(self.wall_s, 2),
                        "recommended": _count(r.recommendation.backend for r in self.results)},
        }


def _count(items: Iterable[str | None]) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        if item:
            out[item] = out.get(item, 0) + 1
    return out


def gpu_facts(name: str | None) -> dict[str, Any]:
    """The GPU's catalogue entry as bench reports it (dense peaks per dtype)."""
    from ..gpus import lookup_gpu

    spec = lookup_gpu(name) if name else None
    if spec is None:
        return {"name": name, "catalogue": None, "peak_tflops": {}}
    return {"name": name, "catalogue": spec.name,
            "peak_tflops": {d: spec.tflops(d) for d in ("bf16", "fp16", "fp8") if spec.tflops(d)},
            "bandwidth_gbs": spec.bandwidth_gbs}


def annotate(result: Mapping[str, Any], flops: FlopCount, peak: float | None, nbytes: ByteCount | None = None,
             bandwidth: float | None = None) -> dict[str, Any]:
    """A worker's bench result with TFLOP/s and % of peak, GB/s and % of HBM bandwidth added to `forward` and
    `forward_backward`."""
    out = {k: v for k, v in result.items() if k not in ("train", "details", "restart")}
    for key, src, flop, moved in (("forward", "forward", flops.forward, nbytes.forward if nbytes else None),
                                  ("forward_backward", "train", flops.train, nbytes.train if nbytes else None)):
        stats = result.get(src)
        if not stats:
            out[key] = None
            continue
        stats = dict(stats)
        stats["tflops"] = tflops(flop, stats.get("median_ms"))
        stats["peak_pct"] = peak_percent(stats["tflops"], peak)
        if moved is not None:
            stats["gbs"] = gbs(moved, stats.get("median_ms"))
            stats["hbm_pct"] = peak_percent(stats["gbs"], bandwidth)
        out[key] = stats
    out["details"] = {k: v for k, v in (result.get("details") or {}).items() if k != "traceback"}
    return out


def metric_ms(measurement: Mapping[str, Any], metric: str) -> float | None:
    stats = measurement.get(metric) if measurement.get("outcome") == "ok" else None
    return None if not stats else stats.get("median_ms")


# ---------------------------------------------------------------- the run

ProgressFn = Callable[[int, int, str], None]


def _not_run_reason(verdict: Any) -> str:
    if verdict.status == "not-installed":
        return "not installed"
    if verdict.status == "depends":
        return f"the rules cannot decide (depends on {', '.join(verdict.missing) or 'unknown facts'})"
    blocking = verdict.blocking(True)
    said = f"the rules say it {verdict_words(verdict.status, 'this config')}"
    return f"{said}: {blocking[0].id}: {blocking[0].message}" if blocking else said


def _backends_to_time(evaluator: Any, by_id: Mapping[str, Any], filled: AttentionConfig, env: Environment,
                      candidates: Sequence[str], named: Sequence[str],
                      inventory: Mapping[str, Any]) -> tuple[list[str], list[dict[str, str]]]:
    """The backends worth timing on a config (installed, supported by the rules, not the reference kernel at a size
    whose scores would not fit), and why each other one is not run."""
    from ..engine.evaluate import build_facts
    from .verification import backend_environment

    run: list[str] = []
    skipped: list[dict[str, str]] = []
    for backend_id in candidates:
        if not inventory.get(backend_id, {}).get("installed"):
            if named:
                skipped.append({"backend": backend_id, "reason": "not installed here"})
            continue
        b_env = backend_environment(env, backend_id)
        verdict = evaluator.verdict(by_id[backend_id], filled, b_env, facts=build_facts(filled, b_env),
                                    search_fix=False)
        if verdict.status != "supported":
            skipped.append({"backend": backend_id, "reason": _not_run_reason(verdict)})
            continue
        c = filled
        batch = 1 if c.batch is None else c.batch
        scores = 4 * batch * (c.heads or 1) * (c.seqlen_q or 1) * (c.seqlen_kv or c.seqlen_q or 1)
        if backend_id == "sdpa-math" and backend_id not in named and scores > MATH_SCORE_LIMIT:
            skipped.append({"backend": backend_id, "reason": f"reference kernel: its scores would take "
                            f"{scores / 2**30:.1f} GiB (name it with --backend to time it)"})
            continue
        run.append(backend_id)
    return run, skipped


def _time_once(sup: Any, backend_id: str, config: dict[str, Any], *, seed: int, options: Mapping[str, Any],
               timeout: float) -> dict[str, Any]:
    """One backend timed on one config; a crash under CUDA graphs is retried eagerly, and the result says so."""
    raw = sup.bench(backend_id, config, seed=seed, options=options, timeout=timeout)
    if raw.get("outcome") == "crashed" and options.get("graphs") != "off":
        retry = sup.bench(backend_id, config, seed=seed, options={**options, "graphs": "off"}, timeout=timeout)
        if retry.get("outcome") == "ok":
            retry["mode_note"] = f"timed eagerly after a crash with CUDA graphs: {raw.get('error', '')}"
        raw = retry
    return raw


def run_bench(configs: Sequence[AttentionConfig], env: Environment, *, backends: Sequence[str] | None = None,
              options: Mapping[str, Any] | None = None, seed: int | None = None, timeout: float = 300.0,
              rules_dir: str | None = None, device: str = "cuda", progress: ProgressFn | None = None,
              runner_modules: Iterable[str] = (), supervisor: Any = None) -> BenchReport:
    """Time every supported, installed backend on every config in one worker, and recommend per config."""
    import random

    from ..engine.evaluate import Evaluator
    from ..engine.rules import load_rulebase
    from .verification import fill_defaults, kernel_worker

    base = load_rulebase(rules_dir)
    ids = list(base.backend_ids)
    named = list(dict.fromkeys(backends or []))
    base.check_backend_ids(named)
    opts = {**DEFAULT_OPTIONS, **{k: v for k, v in (options or {}).items() if v is not None}}
    evaluator = Evaluator(base)
    by_id = {b.id: b for b in base.backends}
    seed = random.SystemRandom().randrange(1, 2**31 - 1) if seed is None else int(seed)
    started = time.monotonic()
    results: list[ConfigBench] = []
    with kernel_worker(supervisor, device=device, timeout=timeout, runner_modules=runner_modules,
                       backends=named or ids, command="bench") as (sup, inventory):
        info = dict(getattr(sup, "info", {}) or {})
        gpu = gpu_facts(info.get("gpu") or env.gpu)
        plan: list[tuple[AttentionConfig, tuple[str, ...], Any, list[str], list[dict[str, str]]]] = []
        for config in configs:
            filled, names = fill_defaults(config)
            result = evaluator.evaluate(filled, env)
            run, skipped = _backends_to_time(evaluator, by_id, filled, env, named or ids, named, inventory)
            plan.append((filled, names, result, run, skipped))
        total = sum(len(p[3]) for p in plan)
        done = 0
        for filled, names, result, run, skipped in plan:
            flops = attention_flops(filled.to_dict())
            moved = attention_bytes(filled.to_dict())
            peak = gpu.get("peak_tflops", {}).get(str(filled.dtype))
            bandwidth = gpu.get("bandwidth_gbs")
            bounds = {"forward": roofline(flops.forward, moved.forward, peak, bandwidth),
                      "forward_backward": roofline(flops.train, moved.train, peak, bandwidth)}
            measured: list[dict[str, Any]] = []
            for backend_id in run:
                if progress:
                    progress(done, total, f"{filled.name or filled.label()} · {backend_id}")
                raw = _time_once(sup, backend_id, filled.to_dict(), seed=seed, options=opts, timeout=timeout)
                measured.append(annotate(raw, flops, peak, moved, bandwidth))
                done += 1
            metric = "forward_backward" if filled.train else "forward"
            times = {m["backend"]: metric_ms(m, metric) for m in measured}
            spreads = {m["backend"]: (m.get(metric) or {}).get("iqr_rel", 0.0) for m in measured}
            framework, default = default_pick(result.selected, [b for b, t in times.items() if t])
            rec = recommend({b: t for b, t in times.items() if t}, default=default, default_framework=framework,
                            spreads=spreads, selects={b: by_id[b].select for b in by_id}, order=ids)
            for m in measured:
                m["recommended"] = m["backend"] == rec.backend
                m["default_for"] = [s.framework for s in result.selected if s.status == "selected"
                                    and s.backend == m["backend"]]
            results.append(ConfigBench(config=filled, flops=flops, measurements=measured, not_run=skipped,
                                       selections=[s.to_dict() for s in result.selected], recommendation=rec,
                                       defaults=names, bytes=moved,
                                       roofline=bounds if filled.train else {"forward": bounds["forward"]}))
        if progress:
            progress(total, total, "done")
    return BenchReport(environment=env, results=results, gpu=gpu, options=opts, seed=seed,
                       wall_s=time.monotonic() - started, worker_info=info, inventory=inventory, device=device)
