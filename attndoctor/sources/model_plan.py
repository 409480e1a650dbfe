"""A model's per-layer plan, from the engine's per-kind results: what each kind runs on, and the model-level fix."""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple, Sequence

SLOW_PATHS = frozenset({"sdpa-math", "te-unfused"})
"""Backends that build the full S x S score matrix in memory instead of streaming it."""
SCORE_BYTES = 4
"""Bytes per score in PyTorch's math SDPA: it casts fp16/bf16 q, k, v to fp32 before the q @ k^T bmm (aten
_scaled_dot_product_attention_math, seen in a dispatch trace on torch 2.13) unless
torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(True) is set; its softmax writes a second buffer that size."""
SCORE_FORMULA = "batch x heads x seqlen_q x seqlen_kv x 4 bytes (fp32 scores)"


class KindPlan(NamedTuple):
    """One attention kind: its shape, its layers, and the backend each framework gives it."""

    label: str
    name: str
    layers: tuple[int, ...]
    shape: str
    notes: tuple[str, ...]
    runs: Mapping[str, tuple[str | None, str]]
    """framework -> (backend, selection status)"""
    score_bytes: int | None
    tower: str = ""
    fixes: Mapping[str, str] = {}
    """framework -> the smallest fix that lets one of its fused backends run this kind, where it runs a slow path"""
    when: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "name": self.name, "layers": list(self.layers), "layer_count": len(self.layers),
                "shape": self.shape, "notes": list(self.notes), "tower": self.tower or None, "when": self.when or None,
                "runs": [{"framework": f, "backend": b, "status": s, "fix": self.fixes.get(f)}
                         for f, (b, s) in self.runs.items()],
                "math_score_bytes": self.score_bytes}


class ModelFinding(NamedTuple):
    """One kind forcing its framework onto a slow path while the others run a fused kernel, and the way out."""

    framework: str
    kind: str
    backend: str
    others: tuple[str, ...]
    score_bytes: int | None
    text: str
    fix: str

    def to_dict(self) -> dict[str, Any]:
        return {"framework": self.framework, "kind": self.kind, "backend": self.backend, "others": list(self.others),
                "math_score_bytes": self.score_bytes, "score_formula": SCORE_FORMULA, "text": self.text,
                "fix": self.fix}


class ModelPlan(NamedTuple):
    """The plan of one model."""

    name: str
    file: str
    model_type: str
    layers: int | None
    kinds: tuple[KindPlan, ...]
    skipped: Mapping[str, tuple[int, ...]]
    skipped_origin: str
    notes: tuple[str, ...]
    findings: tuple[ModelFinding, ...]
    common: tuple[str, ...]
    """Backends that run every attention kind of the text model."""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "file": self.file, "model_type": self.model_type or None, "layers": self.layers,
                "kinds": [k.to_dict() for k in self.kinds],
                "skipped_layers": [{"kind": k, "layers": list(v), "from": self.skipped_origin}
                                   for k, v in self.skipped.items()],
                "notes": list(self.notes), "findings": [f.to_dict() for f in self.findings],
                "backends_for_every_kind": list(self.common), "score_formula": SCORE_FORMULA}


def score_bytes(config: Any) -> int | None:
    """The S x S score buffer of one unfused attention call: batch (1 when not given) x heads x Sq x Skv x 4."""
    if not (config.heads and config.seqlen_q and config.seqlen_kv):
        return None
    batch = 1 if config.batch is None else config.batch
    return batch * config.heads * config.seqlen_q * config.seqlen_kv * SCORE_BYTES


def _batch_words(batch: int | None) -> str:
    """The batch a score estimate used: an empty batch is 0, not the 1 assumed when none was given."""
    return "1 (not given)" if batch is None else str(batch)


def human_bytes(n: int | None) -> str:
    if n is None:
        return "unknown (seqlen or heads not given)"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit} ({n:,} bytes)"
    return f"{n} bytes"


def build_plans(readings: Sequence[Any], results: Sequence[Any]) -> list[ModelPlan]:
    """One plan per model read, from the results the engine gave its kinds (matched by config name and file)."""
    by_key = {(r.config.name, (r.config.source or ("",))[0]): r for r in results}
    plans = []
    for reading in readings:
        kinds: list[KindPlan] = []
        kind_results: list[tuple[Any, Any]] = []
        for kind in reading.kinds:
            result = by_key.get((kind.config.name, reading.file))
            if result is None:
                continue
            config = result.config
            runs = {s.framework: (s.backend, s.status) for s in result.selected}
            kinds.append(KindPlan(kind.label, config.name, kind.layers, config._replace(name="").label(),
                                  kind.notes, runs, score_bytes(config), kind.tower, _fused_fixes(result, runs),
                                  kind.when))
            kind_results.append((kinds[-1], result))
        text_kinds = [(k, r) for k, r in kind_results if not k.tower and not k.when]
        common = _common(text_kinds)
        findings = _findings(text_kinds, common)
        plans.append(ModelPlan(reading.name, reading.file, reading.model_type, reading.layers, tuple(kinds),
                               dict(reading.skipped), reading.skipped_origin, tuple(reading.notes), tuple(findings),
                               common))
    return plans


def _common(kind_results: Sequence[tuple[KindPlan, Any]]) -> tuple[str, ...]:
    if not kind_results:
        return ()
    runs = None
    for _, result in kind_results:
        ok = {v.backend.id for v in result.all_verdicts if v.supported is True}
        runs = ok if runs is None else runs & ok
    order = [v.backend.id for v in kind_results[0][1].all_verdicts]
    return tuple(b for b in order if b in (runs or set()))


def _findings(kind_results: Sequence[tuple[KindPlan, Any]], common: Sequence[str]) -> list[ModelFinding]:
    if len(kind_results) < 2:
        return []
    out = []
    frameworks = list(kind_results[0][0].runs)
    for framework in frameworks:
        picked = {k.label: k.runs.get(framework, (None, "none")) for k, _ in kind_results}
        for kind, result in kind_results:
            backend, status = picked[kind.label]
            stuck = backend is None and status in ("none", "fails", "wrong-results")
            if not stuck and (backend not in SLOW_PATHS or status != "selected"):
                continue
            others = tuple(sorted({b for label, (b, s) in picked.items()
                                   if label != kind.label and b and b not in SLOW_PATHS and s == "selected"}))
            if not others:
                continue
            if stuck:
                out.append(_stuck(framework, kind, result, others, common))
                continue
            fixes = ([kind.fixes[framework]] if framework in kind.fixes else []) + _moves(kind, result, others, common)
            layers = len(kind.layers)
            held = (f"{backend} holds an S x S score buffer of {human_bytes(kind.score_bytes)} per call "
                    f"({SCORE_FORMULA}, batch {_batch_words(result.config.batch)})" if backend == "sdpa-math"
                    else f"{backend} builds the full S x S score matrix in memory")
            text = (f"under {framework}, the {kind.label} layers{f' ({layers})' if layers else ''} fall to {backend} "
                    f"while the others run {', '.join(others)}: {held}")
            out.append(ModelFinding(framework, kind.label, backend, others, kind.score_bytes, text,
                                    "; or ".join(fixes) if fixes else "no fix in the rules: pad or split the "
                                    "head dim, or run these layers on another framework"))
    return out


def _moves(kind: KindPlan, result: Any, others: Sequence[str], common: Sequence[str]) -> list[str]:
    """The fixes that move a kind onto the fused backends the other kinds run, then onto one that runs them all."""
    fixes = []
    for b in others:
        verdict = next((v for v in result.all_verdicts if v.backend.id == b), None)
        if verdict is not None and verdict.fix is not None:
            fixes.append(f"{verdict.fix.describe()} (lets {b} run the {kind.label} layers)")
    runs_all = [b for b in common if b not in SLOW_PATHS]
    if runs_all:
        fixes.append(f"run every layer on {' or '.join(runs_all[:3])}, which run every attention kind of this model")
    return fixes


def _stuck(framework: str, kind: KindPlan, result: Any, others: Sequence[str], common: Sequence[str]) -> ModelFinding:
    """A kind no backend of the framework runs while the other kinds run: the model cannot run on it as it is."""
    fixes = _moves(kind, result, others, common)
    text = (f"under {framework}, no backend runs the {kind.label} layers ({len(kind.layers)}) while the others run "
            f"{', '.join(others)}: the model does not run on {framework} as configured")
    return ModelFinding(framework, kind.label, "", tuple(others), None, text,
                        "; or ".join(fixes) if fixes else "no fix in the rules for these layers under " + framework)


def _fused_fixes(result: Any, runs: Mapping[str, tuple[str | None, str]]) -> dict[str, str]:
    """Per framework that runs this kind on a slow path (or on none), the first fused backend's smallest fix."""
    out = {}
    for framework, (backend, status) in runs.items():
        if backend not in SLOW_PATHS and not (backend is None and status in ("none", "fails")):
            continue
        for verdict in result.all_verdicts:
            if verdict.backend.framework == framework and verdict.backend.id not in SLOW_PATHS and verdict.fix:
                out[framework] = f"{verdict.fix.describe()} (lets {verdict.backend.id} run it)"
                break
    return out
