"""The picker's verdict tables: the engine's answers over a lattice of machines and configs, stored as index tables."""

from __future__ import annotations

import itertools
import os
from typing import Any, Iterable, Mapping, Sequence

from ..config import make_config
from ..environment import environment_from_flags
from ..gpus import gpu_catalogue, normalize_gpu_name
from ..engine import expr
from ..engine.evaluate import Evaluator
from ..engine.rules import BLOCKING, RuleBase

STACKS: tuple[tuple[str, str, dict[str, str]], ...] = (
    ("newest", "newest modelled releases", {
        "torch": "2.15.0", "cuda": "13.0", "cudnn": "9.26.0", "flash_attn": "2.8.3", "flash_attn_3": "3.0.0",
        "flash_attn_4": "4.0.0b36", "cudnn_frontend": "1.32.0", "te": "2.20"}),
    ("2024", "torch 2.5 era (torch 2.5.1 pins cuDNN 9.1.0)", {
        "torch": "2.5.1", "cuda": "12.4", "cudnn": "9.1.0", "flash_attn": "2.7.4", "flash_attn_3": "3.0.0",
        "flash_attn_4": "4.0.0b36", "cudnn_frontend": "1.8.0", "te": "1.13"}),
)
"""Version stacks the picker offers: whole environments as images and pip pins ship them, the newest modelled first.
A stack, not each package on its own: each stack costs the engine about 40 s of one core (docs/site.md)."""

BASE_CONFIG: dict[str, Any] = {"batch": 4, "heads": 32, "kv_heads": 32, "seqlen": 4096, "layout": "bshd"}
"""The shape every picker config shares; the picker varies what follows."""

DTYPES = ("bf16", "fp16", "fp32", "fp8")
MODES = (("train", True), ("inference", False))
HDIMS = (64, 96, 128, 192, 256)
FEATURES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("none", "no extra feature", {}),
    ("gqa", "GQA (32 query heads, 8 KV heads)", {"kv_heads": 8}),
    ("causal", "causal mask (top-left)", {"mask": "causal"}),
    ("window", "sliding window (1024 left, causal)", {"mask": "causal", "window": [1024, 0]}),
    ("softcap", "logit softcap 30", {"softcap": 30.0}),
    ("sinks", "attention sinks", {"sinks": True}),
    ("padding", "padding mask", {"mask": "padding"}),
    ("alibi", "ALiBi bias", {"bias": "alibi"}),
    ("dropout", "dropout 0.1", {"dropout": 0.1}),
    ("paged", "paged KV cache", {"paged_kv": True}),
    ("cp", "context parallelism (cp=2)", {"cp": 2}),
)
"""One feature at a time over BASE_CONFIG; fp8 is a dtype."""


def config_values(dtype: str, train: bool, hdim: int, feature: str) -> dict[str, Any]:
    """The config fields of one lattice point, as `explain` flags would give them."""
    delta = next(d for key, _, d in FEATURES if key == feature)
    return {**BASE_CONFIG, "dtype": dtype, "train": train, "hdim": hdim, **delta}


FEATURE_FLAGS: dict[str, tuple[str, ...]] = {
    "none": (), "gqa": ("--kv-heads", "8"), "causal": ("--mask", "causal"),
    "window": ("--mask", "causal", "--window", "1024,0"), "softcap": ("--softcap", "30"), "sinks": ("--sinks",),
    "padding": ("--mask", "padding"), "alibi": ("--bias", "alibi"), "dropout": ("--dropout", "0.1"),
    "paged": ("--paged-kv",), "cp": ("--cp", "2"),
}
"""Each feature as `explain` flags (the page shows the command; the tests run it)."""


def explain_args(gpu: str, stack: str, dtype: str, mode: str, hdim: int, feature: str) -> list[str]:
    """`attndoctor explain` arguments that ask the engine about one lattice point."""
    versions = next(v for key, _, v in STACKS if key == stack)
    args = ["--gpu", gpu]
    for package, version in versions.items():
        args += [f"--{package.replace('_', '-')}", version]
    flags = FEATURE_FLAGS[feature]
    if "--kv-heads" not in flags:
        flags = ("--kv-heads", str(BASE_CONFIG["kv_heads"]), *flags)
    args += ["--batch", str(BASE_CONFIG["batch"]), "--heads", str(BASE_CONFIG["heads"]),
             "--seqlen", str(BASE_CONFIG["seqlen"]), "--layout", BASE_CONFIG["layout"], "--hdim", str(hdim),
             "--dtype", dtype, "--train" if mode == "train" else "--infer", *flags]
    return args


def lattice_configs() -> list[tuple[tuple[str, bool, int, str], Any]]:
    """Every config of the lattice in index order: dtype, mode, head dim, feature (the last varies fastest)."""
    out = []
    for dtype, (_, train), hdim, (feature, _, _) in itertools.product(DTYPES, MODES, HDIMS, FEATURES):
        out.append(((dtype, train, hdim, feature), make_config(config_values(dtype, train, hdim, feature))))
    return out


def sm_classes(base: RuleBase) -> list[list[int]]:
    """The catalogue's compute capabilities grouped where no rule tells them apart (each rule's condition, with sm
    given, leaves the same residue)."""
    sms = sorted({g.sm for g in gpu_catalogue()})
    reading = [r for r in base.rules if "sm" in r.names]
    groups: dict[tuple[str, ...], list[int]] = {}
    for sm in sms:
        key = tuple(expr.render(expr.residual(r.predicate, {"sm": sm})) for r in reading)
        groups.setdefault(key, []).append(sm)
    return list(groups.values())


def reason(verdict: Mapping[str, Any]) -> list[list[str]]:
    """What a verdict's status rests on, as (rule id, message) pairs: read from `explain --format json`'s verdict
    object, so the site and explain are compared on the same terms."""
    status = verdict["status"]
    if status == "supported":
        return []
    out = []
    for f in verdict["findings"]:
        if f["applies"] is False:
            continue
        if f["effect"] in BLOCKING or status in ("outside-rules", "not-installed"):
            out.append([f["rule"], f["message"]])
    return out[:6]


def fix_text(verdict: Mapping[str, Any]) -> str:
    """The smallest fix explain shows, as text."""
    fix = verdict.get("fix")
    return fix["text"] if fix else ""


def environment_values(sm: int, versions: Mapping[str, str]) -> dict[str, Any]:
    """What-if facts for one machine of the lattice."""
    return {"gpu": f"sm{sm}", **versions}


class _Interner:
    def __init__(self) -> None:
        self.items: list[Any] = []
        self.index: dict[Any, int] = {}

    def __call__(self, value: Any) -> int:
        key = repr(value)
        found = self.index.get(key)
        if found is None:
            found = self.index[key] = len(self.items)
            self.items.append(value)
        return found


def _evaluate_class(args: tuple[str | None, int]) -> list[list[list[dict[str, Any]]]]:
    """Verdict dicts on one compute capability: [config][stack] -> one per backend, in the rule base's order."""
    rules_dir, sm = args
    from ..engine.rules import load_rulebase

    evaluator = Evaluator(load_rulebase(rules_dir), batch=True)
    envs = [environment_from_flags(environment_values(sm, versions)) for _, _, versions in STACKS]
    configs = [config for _, config in lattice_configs()]
    # One machine at a time: the evaluator shares verdicts between the configs of one machine only.
    per_env = [[[v.to_dict() for v in evaluator.evaluate(config, env).verdicts] for config in configs] for env in envs]
    return [[answers[i] for answers in per_env] for i in range(len(configs))]


def build_tables(base: RuleBase, rules_dir: str | None = None, workers: int | None = None) -> dict[str, Any]:
    """The picker's data: axes, the GPU list, per-backend verdict-id arrays (run-length coded) and the tables the
    ids point into."""
    # One table per compute capability even where the rules' conditions agree: messages name the sm.
    classes = [[sm] for group in sm_classes(base) for sm in group]
    backend_ids = list(base.backend_ids)
    jobs = [(rules_dir, group[0]) for group in classes]
    workers = workers or min(len(jobs), os.cpu_count() or 1)
    if workers > 1:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(workers) as pool:
            per_class = pool.map(_evaluate_class, jobs, chunksize=1)
    else:
        per_class = [_evaluate_class(job) for job in jobs]
    messages, rules_seen, fixes, verdicts, statuses = _Interner(), _Interner(), _Interner(), _Interner(), _Interner()
    ids: dict[str, list[int]] = {b: [] for b in backend_ids}
    for cls in per_class:
        for per_stack in cls:
            for answers in per_stack:
                for v in answers:
                    why = tuple((rules_seen(r), messages(m)) for r, m in reason(v))
                    fix = fixes(fix_text(v)) if v.get("fix") else -1
                    ids[v["backend"]].append(verdicts((statuses(v["status"]), why, fix)))
    gpus = []
    for g in gpu_catalogue():
        cls_index = next((i for i, group in enumerate(classes) if g.sm in group), None)
        if cls_index is not None:
            keys = sorted({normalize_gpu_name(a) for a in (g.name, *g.aliases)} - {""})
            gpus.append([g.name, g.sm, g.arch, cls_index, keys])
    return {
        "axes": {"dtype": list(DTYPES), "mode": [m for m, _ in MODES], "hdim": list(HDIMS),
                 "feature": [[k, label] for k, label, _ in FEATURES]},
        "base_config": BASE_CONFIG,
        "feature_flags": {k: " ".join(v) for k, v in FEATURE_FLAGS.items()},
        "stacks": [[key, label, versions] for key, label, versions in STACKS],
        "classes": classes,
        "gpus": gpus,
        "backends": [[b, base.backend(b).framework, base.backend(b).label] for b in backend_ids],
        "statuses": statuses.items,
        "rules": rules_seen.items,
        "messages": messages.items,
        "fixes": fixes.items,
        "verdicts": [[s, [list(p) for p in why], f] for s, why, f in verdicts.items],
        "tables": {b: _rle(v) for b, v in ids.items()},
    }


def _rle(ids: Iterable[int]) -> list[int]:
    """[value, count, value, count, ...]."""
    out: list[int] = []
    for value in ids:
        if out and out[-2] == value:
            out[-1] += 1
        else:
            out.extend((value, 1))
    return out


def table_index(data: Mapping[str, Any], cls: int, dtype: str, mode: str, hdim: int, feature: str,
                stack: str) -> int:
    """Where one lattice point's verdict id sits in a backend's decoded table (the page computes the same)."""
    axes = data["axes"]
    features = [k for k, _ in axes["feature"]]
    config = ((axes["dtype"].index(dtype) * len(axes["mode"]) + axes["mode"].index(mode)) * len(axes["hdim"])
              + axes["hdim"].index(hdim)) * len(features) + features.index(feature)
    n_configs = len(axes["dtype"]) * len(axes["mode"]) * len(axes["hdim"]) * len(features)
    stacks = [key for key, _, _ in data["stacks"]]
    return (cls * n_configs + config) * len(stacks) + stacks.index(stack)


def decode(rle: Sequence[int]) -> list[int]:
    """The run-length coded table, expanded."""
    out: list[int] = []
    for i in range(0, len(rle), 2):
        out.extend([rle[i]] * rle[i + 1])
    return out
