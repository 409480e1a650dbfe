"""Where a `depends` verdict would run: per reference GPU, the releases of the deciding package that are not refused.

When the machine is not given, a verdict can depend on a dozen version and arch facts. Listing every condition is
true but not an answer; sweeping the one package that decides the backend on a few reference GPUs, with the other
packages at recent releases (or as given), says it the way a user asks: "te-fused: H100 with cuDNN ≥ 9.5".
"""

from typing import Any, NamedTuple, Protocol

from ..config import DTYPES, AttentionConfig, with_changes
from ..environment import Environment
from .releases import RECENT, RELEASES, flash_attn_for, ranges_text

REFERENCE_GPUS: tuple[str, ...] = ("A100", "L40S", "H100", "B200")
"""Ampere, Ada, Hopper, Blackwell: one GPU per architecture that attention backends tell apart."""
SWEEP: dict[str, tuple[str, ...]] = {
    "te-fused": ("cudnn", "te"), "cudnn-fe": ("cudnn", "cudnn_frontend"), "sdpa-cudnn": ("torch", "cudnn"),
    "te-flash": ("te", "flash_attn"), "te-unfused": ("te",), "sdpa-flash": ("torch",), "sdpa-efficient": ("torch",),
    "sdpa-math": ("torch",), "flash-attn-2": ("flash_attn",), "flash-attn-3": ("flash_attn_3",),
    "flash-attn-4": ("flash_attn_4",), "flex-attention": ("torch",),
}
"""For each backend, the packages whose version decides it, most deciding first: the first one not given is swept."""


class Judge(Protocol):
    """What a sweep needs of an evaluator: a backend's status for one config on one machine."""

    def quick_status(self, backend: Any, config: AttentionConfig, env: Environment, *, sweep: bool = False) -> str: ...


class Where(NamedTuple):
    """On one GPU: the swept package's releases that are not refused ('' when nothing needed sweeping)."""

    gpu: str
    sm: int
    swept: str
    versions: tuple[str, ...]
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"gpu": self.gpu, "sm": self.sm, "swept": self.swept, "versions": list(self.versions),
                "text": self.text}


def where_it_runs(evaluator: Judge, verdict: Any, config: AttentionConfig,
                  env: Environment) -> tuple[Where, ...]:
    """For a `depends` verdict: per reference GPU (or the given one), the releases that do not refuse the config."""
    if verdict.status != "depends":
        return ()
    backend = verdict.backend
    axis = next((p for p in SWEEP.get(backend.id, ()) if env.versions.get(p) is None), "")
    if axis and not RELEASES.get(axis):
        return ()  # no releases of it are modelled: nothing to say where it runs, and never "no release runs it"
    gpus = ((env.gpu,) if env.sm is not None else tuple(f"sm{sm}" for sm in env.archs) if getattr(env, "archs", None)
            else REFERENCE_GPUS)
    # An unknown dtype is split into its cases: no single rule sees that fp32 and fp16 are each refused elsewhere.
    variants = [config] if config.dtype is not None else [with_changes(config, {"dtype": d}) for d in DTYPES]
    out = []
    for gpu in gpus:
        base = env
        if env.sm is None:
            from ..environment import environment_from_flags

            base = environment_from_flags({"gpu": gpu}, base=env)
        # The other deciding packages are held at recent releases; packages that do not decide stay unknown.
        held = [p for p in SWEEP.get(backend.id, ()) if p != axis and base.versions.get(p) is None]
        for package in held:
            base = base.with_version(package, RECENT[package])
        releases = RELEASES.get(axis, ()) if axis else ("",)
        possible = []
        for version in releases:
            trial = _at_release(base, axis, version, "flash_attn" in held) if axis else base
            if any(evaluator.quick_status(backend, c, trial) in ("supported", "depends") for c in variants):
                possible.append(version)
        text = ranges_text(possible, releases) if axis else ("✓" if possible else "✗")
        out.append(Where(gpu=base.gpu or gpu, sm=base.sm or 0, swept=axis, versions=tuple(possible), text=text))
    return tuple(out)


def _at_release(env: Environment, axis: str, version: str, pair_flash_attn: bool) -> Environment:
    """The machine at one release of the swept package; a TE release with the newest flash-attn it accepts, where
    flash-attn was not given, so that the sweep does not trip over TE's own version check."""
    trial = env.with_version(axis, version)
    if axis == "te" and pair_flash_attn:
        trial = trial.with_version("flash_attn", flash_attn_for(version))
    return trial


ARCHS: tuple[int, ...] = (60, 61, 70, 75, 80, 86, 87, 89, 90, 100, 103, 110, 120, 121)
"""Every compute capability the rules tell apart: an unknown GPU is each of them in turn."""


def no_release_runs(evaluator: Judge, verdict: Any, config: AttentionConfig, env: Environment) -> tuple[str, str] | None:
    """For a `depends` verdict: ("unsupported", why) when no release of the deciding package the rules model runs
    the config with the facts given (on the given GPU, or on any GPU when none is given), whatever the facts nobody
    gave are; ("supported", why) when every one of them runs it; None when they disagree. A release counts as
    refusing or running only where the rules decide it outright, so a fact left open never decides the verdict."""
    from ..environment import PACKAGE_LABELS

    backend = verdict.backend
    axis = next((p for p in SWEEP.get(backend.id, ()) if env.versions.get(p) is None), "")
    if (axis and not RELEASES.get(axis)) or (not axis and env.sm is not None):
        return None
    family = getattr(env, "archs", None) or ARCHS
    releases = RELEASES[axis] if axis else ("",)
    seen: set[str] = set()
    for trial in _trials(env, axis, family):
        status = evaluator.quick_status(backend, config, trial, sweep=True)
        seen.add("depends" if status == "depends" else "supported" if status == "supported" else "refused")
        if "depends" in seen or len(seen) > 1:
            return None
    where = (f"{env.gpu} (sm{env.sm})" if env.sm is not None else f"any {env.gpu} GPU" if getattr(env, "archs", None)
             else f"any GPU (sm{ARCHS[0]} to sm{ARCHS[-1]})")
    label = PACKAGE_LABELS.get(axis, axis)
    span = releases[0] if len(releases) == 1 else f"{releases[0]} to {releases[-1]}"
    horizon = f" (releases after {releases[-1]} are not modelled)" if axis else ""
    if seen == {"supported"}:
        said = f"every {label} release the rules model ({span})" if axis else "it"
        return "supported", f"{said} runs it on {where}{horizon}"
    if not axis:
        return "unsupported", f"it does not run on {where} with the facts given; the conditions below refuse it on each"
    return "unsupported", (f"no {label} release the rules model ({span}) runs it on {where}; the conditions below "
                           f"refuse it at each one{horizon}")


_TRIALS: dict[tuple[int, str], tuple[Environment, tuple[Environment, ...]]] = {}
"""The machines a sweep tries, made once per machine and package: the same objects for every config keep the
evaluator's per-machine caches warm across a batch."""


def _trials(env: Environment, axis: str, family: tuple[int, ...]) -> tuple[Environment, ...]:
    """Each GPU (the given one, or each of the family) at each release of `axis`, newest release first."""
    from ..environment import environment_from_flags

    key = (id(env), axis)
    found = _TRIALS.get(key)
    if found is None or found[0] is not env:
        if len(_TRIALS) > 64:
            _TRIALS.clear()
        machines = [env] if env.sm is not None else [environment_from_flags({"gpu": f"sm{sm}"}, base=env)
                                                     for sm in family]
        pair = env.versions.get("flash_attn") is None
        trials = tuple(_at_release(m, axis, v, pair) if axis else m for m in machines
                       for v in (reversed(RELEASES[axis]) if axis else ("",)))
        found = _TRIALS[key] = (env, trials)
    return found[1]


def describe_where(places: tuple[Where, ...]) -> str:
    """One line: 'runs on H100 SXM: cudnn ≥9.5 · B200: cudnn ≥9.11 · not on A100 80GB, L40S'."""
    runs = [p for p in places if p.text != "✗"]
    never = [p.gpu for p in places if p.text == "✗"]
    if not runs:
        where = ", ".join(never[:-1]) + (" or " if len(never) > 1 else "") + never[-1] if never else "any GPU"
        swept = places[0].swept if places else ""
        return f"with the facts given, no {swept} release runs it on {where}" if swept else f"does not run on {where}"
    parts = [f"{p.gpu}" + (f": {p.swept} {p.text}" if p.swept and p.text != "✓" else "") for p in runs]
    line = "runs on " + " · ".join(parts)
    if never:
        line += " · not on " + ", ".join(never)
    return line
