"""`verify --stress`: every config and backend on inputs built to reach the regimes where accepted calls go wrong
(kernels/stress.py), judged on the output and every gradient: against float64, and against the other backends on the
same inputs. A finding that no advisory explains is new, and comes with a script that reproduces it.

The engine never imports this module's kernel side: the probes run in the kernel worker.
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from .._version import __version__
from ..config import AttentionConfig, make_config
from ..engine.install import environment_dict
from ..environment import Environment

REGIMES = ("low-lse", "dominant-key", "masked-rows", "fp16-large", "grad-out-strides")
"""The data regimes, named as the advisories' data conditions they can decide (engine.rules.DATA_CONDITIONS)."""
CAP = {"batch": 1, "heads": 4, "seqlen": 1024}
"""Stress shapes are the config's, smaller: what breaks in these regimes is the head dim, dtype, mask and the
sequence length modulo the kernels' tiles, not the batch or the head count."""
REFERENCE_GRADE = "sdpa-math"
"""Computes in higher precision than the fused kernels: on ill-conditioned inputs they all trail it alike, so it is no
peer to stand apart from."""
APART = 10.0
"""A backend's error stands apart when it is this many times the median of the others' on the same inputs."""
TILE = 128


def stress_variants(config: AttentionConfig) -> list[AttentionConfig]:
    """The config at stress size, at its own length (capped), at the nearest length = 64 mod 128 below it, and one
    past it: lengths that end inside a kernel tile."""
    heads = config.heads or 8
    kv_heads = config.kv_heads or heads
    group = max(1, heads // kv_heads)
    kv = max(1, min(kv_heads, CAP["heads"] // group or 1))
    lq = min(config.seqlen_q or 256, CAP["seqlen"])
    lk = min(config.seqlen_kv or lq, CAP["seqlen"])
    lengths = [lk, max(64, (lk - 64) // TILE * TILE + 64), lk + 1]
    out = []
    for n in dict.fromkeys(lengths):
        q = n if (config.seqlen_q or lq) == (config.seqlen_kv or lq) else lq
        values = {**config.to_dict(), "batch": min(config.batch or 1, CAP["batch"]), "heads": kv * group,
                  "kv_heads": kv, "seqlen_q": q, "seqlen_kv": n}
        values.pop("origin", None)
        out.append(make_config(values)._replace(name=f"{config.name or config.label()} @ {q}x{n}"))
    return out


def plan_cases(variants: Sequence[AttentionConfig]) -> list[tuple[int, str]]:
    """(variant index, regime) in the order the worker runs them: the cases that share their inputs (train and
    infer of one shape, in one regime) next to each other, so that the worker builds the data and the float64
    reference once for them; each case still runs every backend. Outcomes do not depend on this order."""
    groups: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for index, config in enumerate(variants):
        shape = {k: v for k, v in config.to_dict().items() if k not in ("name", "train")}
        for regime in REGIMES:
            groups.setdefault((json.dumps(shape, sort_keys=True, default=str), regime), []).append((index, regime))
    return [case for group in groups.values() for case in group]


@dataclass
class StressFinding:
    """One backend that went wrong on one regime, and whether an advisory already says so."""

    config: AttentionConfig
    regime: str
    backend: str
    kind: str  # non-finite | apart | crashed | convention
    detail: str
    explained_by: tuple[str, ...] = ()
    repro: str = ""

    @property
    def new(self) -> bool:
        return not self.explained_by

    def to_dict(self) -> dict[str, Any]:
        return {"config": self.config.to_dict(), "label": self.config.label(), "regime": self.regime,
                "backend": self.backend, "kind": self.kind, "detail": self.detail,
                "explained_by": list(self.explained_by), "new": self.new, "repro": self.repro}


@dataclass
class StressReport:
    """Everything the stress run saw."""

    environment: Environment
    backends: list[str]
    findings: list[StressFinding]
    probes: int
    shared: int
    """(config, regime) cases where every backend that ran was off the reference alike: ill-conditioned, no finding."""
    conventions: dict[str, dict[str, str]] = field(default_factory=dict)
    """For the masked-rows regime: per config, what each backend writes in rows that attend to nothing."""
    wall_s: float = 0.0
    seed: int = 0
    record_path: str | None = None

    @property
    def new(self) -> list[StressFinding]:
        return [f for f in self.findings if f.new]

    def to_dict(self) -> dict[str, Any]:
        return {"schema_version": 1, "tool": {"name": "attndoctor", "version": __version__},
                "command": "verify --stress", "environment": environment_dict(self.environment), "backends": self.backends,
                "regimes": list(REGIMES), "probes": self.probes, "shared": self.shared, "seed": self.seed,
                "wall_s": round(self.wall_s, 2), "conventions": self.conventions,
                "findings": [f.to_dict() for f in self.findings], "new": len(self.new)}


def judge(results: dict[str, dict[str, Any]]) -> tuple[list[tuple[str, str, str]], bool]:
    """(backend, kind, detail) for each backend that went wrong on one case, and whether the case was shared (every
    backend over tolerance alike: the inputs are ill-conditioned, which is nobody's bug)."""
    ran = {b: r for b, r in results.items() if r.get("outcome") in ("ok", "wrong-results")}
    out: list[tuple[str, str, str]] = []
    for b, r in results.items():
        if r.get("outcome") == "crashed":
            out.append((b, "crashed", str(r.get("error") or "")[:300]))
    errors = {b: {k: float(v) for k, v in (r.get("errors") or {}).items()} for b, r in ran.items()}
    over = {b for b, r in ran.items() if r.get("outcome") == "wrong-results"}
    shared = len(ran) > 1 and over == set(ran) and not any(
        v == float("inf") for e in errors.values() for v in e.values())
    for b in ran:
        bad = [k for k, v in errors[b].items() if v == float("inf")]
        if bad:
            out.append((b, "non-finite", f"non-finite {', '.join(bad)} where the float64 reference is finite"))
            continue
        if b not in over or shared:
            continue
        tolerance = float(ran[b].get("tolerance") or 0.0)
        for name, value in errors[b].items():
            others = [errors[o][name] for o in ran if o not in (b, REFERENCE_GRADE) and name in errors[o]
                      and errors[o][name] != float("inf")]
            if not others:
                continue
            typical = statistics.median(others)
            if value > tolerance and value > APART * max(typical, tolerance / APART):
                out.append((b, "apart", f"{name} error {value:.2g} against {typical:.2g} for the other backends"))
                break
    return out, shared


def masked_row_conventions(results: dict[str, dict[str, Any]],
                           frameworks: dict[str, str]) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
    """What each backend wrote in rows that attend to nothing, and the PyTorch backends that differ from its math
    backend there (one framework's kernels should agree on what such a row means)."""
    seen = {b: str((r.get("details") or {}).get("masked_rows") or "") for b, r in results.items()
            if r.get("outcome") in ("ok", "wrong-results")}
    math = seen.get(REFERENCE_GRADE)
    differ = [(b, "convention", f"writes {written} in rows that attend to nothing; {REFERENCE_GRADE} writes {math}")
              for b, written in seen.items()
              if math and written and written != math and frameworks.get(b) == frameworks.get(REFERENCE_GRADE)]
    return seen, differ


def explained_by(evaluator: Any, backend: Any, config: AttentionConfig, env: Environment, regime: str) -> tuple[str, ...]:
    """The advisories (and wrong-results rules) that predict this backend going wrong here."""
    from ..engine.evaluate import build_facts

    verdict = evaluator.verdict(backend, config, env, facts=build_facts(config, env), search_fix=False)
    return tuple(f.id for f in verdict.findings if f.applies is True and f.effect == "wrong-results"
                 and (regime in f.data or not f.data))


def repro_script(config: AttentionConfig, regime: str, backend: str) -> str:
    """A script to paste into an upstream issue: the inputs of the regime, the backend forced, NaN and error counts."""
    kernels = {"sdpa-flash": "FLASH_ATTENTION", "sdpa-efficient": "EFFICIENT_ATTENTION",
               "sdpa-cudnn": "CUDNN_ATTENTION", "sdpa-math": "MATH"}
    if backend not in kernels:
        flags = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in config.to_dict().items()
                         if k in ("batch", "heads", "kv_heads", "seqlen_q", "seqlen_kv", "hdim", "hdim_v", "dtype",
                                  "mask") and v is not None)
        train = "--train" if config.train else "--infer"
        return f"attndoctor verify --stress --backend {backend} {flags} {train}"
    dtype = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}.get(config.dtype or "bf16", "bfloat16")
    b, h, hk = config.batch or 1, config.heads or 1, config.kv_heads or config.heads or 1
    lq, lk, d = config.seqlen_q or 1, config.seqlen_kv or 1, config.hdim or 64
    dv = config.hdim_v or d
    shape = {"low-lse": "u = torch.randn(D, device='cuda'); u /= u.norm(); a = (100.0 * D ** 0.5) ** 0.5\n"
                        "q = (a * u + 0.05 * torch.randn(B, H, Lq, D, device='cuda')).to(dt)\n"
                        "k = (-a * u + 0.05 * torch.randn(B, Hk, Lk, D, device='cuda')).to(dt)\n",
             "dominant-key": "u = torch.randn(D, device='cuda'); u /= u.norm()\n"
                             "q = (torch.randn(B, H, Lq, D, device='cuda') + 4 * u).to(dt)\n"
                             "k = torch.randn(B, Hk, Lk, D, device='cuda'); k[:, :, 0] = 30 * D ** 0.5 / 4 * u\n"
                             "k = k.to(dt)\n"}.get(regime, "q = torch.randn(B, H, Lq, D, device='cuda', dtype=dt)\n"
                                                           "k = torch.randn(B, Hk, Lk, D, device='cuda', dtype=dt)\n")
    v_line = ("v = (torch.randn(B, Hk, Lk, Dv, device='cuda').clamp(-2, 2) * 3e4).to(dt)\n" if regime == "fp16-large"
              else "v = torch.randn(B, Hk, Lk, Dv, device='cuda', dtype=dt)\n")
    masked = config.mask in ("arbitrary", "padding", "padding-causal")
    mask = ("mask = torch.rand(B, 1, Lq, Lk, device='cuda') < 0.7\n"
            "mask[..., torch.arange(Lq), torch.arange(Lq) % Lk] = True\n" if masked else "mask = None\n")
    if regime == "masked-rows":
        mask += "mask[:, :, 3::7, :] = False  # rows that attend to nothing\n"
    causal = "True" if config.mask in ("causal", "causal-bottom-right") else "False"
    backward = ("g = torch.randn_like(out)\n" + ("g = g.transpose(-1, -2).contiguous().transpose(-1, -2)\n"
                                                  if regime == "grad-out-strides" else "")
                + "out.backward(g)\nfor name, t in (('dq', q.grad), ('dk', k.grad), ('dv', v.grad)):\n"
                  "    print(name, 'non-finite:', int((~torch.isfinite(t)).sum()))\n") if config.train else ""
    return (f"# attndoctor verify --stress: {backend} on {config.label()}, regime {regime}\n"
            f"import torch\nimport torch.nn.functional as F\nfrom torch.nn.attention import SDPBackend, sdpa_kernel\n\n"
            f"torch.manual_seed(0)\nB, H, Hk, Lq, Lk, D, Dv = {b}, {h}, {hk}, {lq}, {lk}, {d}, {dv}\n"
            f"dt = torch.{dtype}\n{shape}{v_line}{mask}"
            f"q, k, v = (t.requires_grad_({str(bool(config.train))}) for t in (q, k, v))\n"
            f"with sdpa_kernel(SDPBackend.{kernels[backend]}):\n"
            f"    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal={causal}, "
            f"enable_gqa={str(h != hk)})\n"
            f"print('out non-finite:', int((~torch.isfinite(out)).sum()))\n{backward}")


ProgressFn = Callable[[int, int, str], None]


def _record_line(environment: Mapping[str, Any], config: AttentionConfig, backend_id: str, regime: str,
                 result: Mapping[str, Any], seed: int) -> str:
    """One probe as a --record line (the traceback left out: the record is for replay, not debugging)."""
    return json.dumps({"schema_version": 1, "attndoctor": __version__, "environment": environment,
                       "config": config.to_dict(), "backend": backend_id, "regime": regime,
                       "outcome": result.get("outcome"), "errors": result.get("errors", {}),
                       "tolerance": result.get("tolerance"),
                       "details": {k: v for k, v in (result.get("details") or {}).items() if k != "traceback"},
                       "error": result.get("error", ""), "seed": seed}, default=str)


def run_stress(configs: Sequence[AttentionConfig], env: Environment, *, backends: Sequence[str] | None = None,
               timeout: float = 120.0, seed: int | None = None, record: str | None = None,
               rules_dir: str | None = None, device: str = "cuda", progress: ProgressFn | None = None,
               runner_modules: Iterable[str] = (), supervisor: Any = None, ignore: Iterable[str] = (),
               jobs: int | None = None) -> StressReport:
    """Probe every (stress variant, regime, backend) in the kernel workers and judge each case across backends."""
    import random

    from ..engine.evaluate import Evaluator
    from ..engine.rules import load_rulebase
    from .parallel import ProbePool, default_jobs, probe_bytes
    from .verification import (backend_environment, fill_defaults, kernel_worker, recorded_environment,
                               resolve_jobs, shape_key)

    base = load_rulebase(rules_dir)
    ids = list(base.backend_ids)
    base.check_backend_ids(backends)
    evaluator = Evaluator(base, ignore=ignore)
    by_id = {b.id: b for b in base.backends}
    seed = random.SystemRandom().randrange(1, 2**31 - 1) if seed is None else int(seed)
    variants = [v for c in configs for v in stress_variants(fill_defaults(c)[0])]
    started = time.monotonic()
    findings: list[StressFinding] = []
    conventions: dict[str, dict[str, str]] = {}
    probes = shared = 0
    lines: list[str] = []
    environment = recorded_environment(env)
    with kernel_worker(supervisor, device=device, timeout=timeout, runner_modules=runner_modules,
                       backends=backends or ids, command="verify --stress",
                       jobs=default_jobs(device) if jobs is None else jobs) as (sup, inventory):
        run = list(backends) if backends else [b for b in ids if inventory.get(b, {}).get("installed")]
        total = len(variants) * len(REGIMES) * len(run)
        ran: dict[tuple[int, str], list[dict[str, Any]]] = {}
        cases = plan_cases(variants)
        shapes = [variants[index].to_dict() for index, _ in cases]

        def starting(g: int, i: int, n: int) -> None:
            if progress:
                index, regime = cases[g]
                progress(n, total, f"{variants[index].name} · {regime} · {run[i]}")

        pool = ProbePool(sup, resolve_jobs(jobs, device, sup))
        groups = [[{"backend": b, "config": shape, "seed": seed, "regime": regime} for b in run]
                  for shape, (_, regime) in zip(shapes, cases)]
        for g, results in pool.run(groups, [shape_key(s) for s in shapes], [probe_bytes(s) for s in shapes],
                                   before=starting):
            ran[cases[g]] = results
        for index, config in enumerate(variants):
            for regime in REGIMES:
                results: dict[str, dict[str, Any]] = {}
                for backend_id, result in zip(run, ran[index, regime]):
                    if result.get("outcome") == "skipped":
                        continue
                    probes += 1
                    results[backend_id] = result
                    lines.append(_record_line(environment, config, backend_id, regime, result, seed))
                if not results:
                    continue
                wrong, was_shared = judge(results)
                shared += was_shared
                if regime == "masked-rows":
                    seen, differ = masked_row_conventions(results, {b: by_id[b].framework for b in results})
                    if seen:
                        conventions[config.name] = seen
                    wrong.extend(differ)
                for b, kind, detail in wrong:
                    b_env = backend_environment(env, b)
                    known = explained_by(evaluator, by_id[b], config, b_env, regime)
                    findings.append(StressFinding(config=config, regime=regime, backend=b, kind=kind, detail=detail,
                                                  explained_by=known,
                                                  repro="" if known else repro_script(config, regime, b)))
        if progress:
            progress(total, total, "done")
    if record:
        from ..console.output import output_stream

        with output_stream(record, what="--record") as stream:
            stream.write("\n".join(lines) + ("\n" if lines else ""))
    return StressReport(environment=env, backends=run, findings=findings, probes=probes, shared=shared,
                        conventions=conventions, wall_s=time.monotonic() - started, seed=seed, record_path=record)
