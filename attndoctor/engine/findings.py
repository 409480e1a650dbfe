"""Findings: a rule's, with its message filled in from the facts, and the machine's own (a package missing or
broken, a release the rules do not model, no GPU)."""

import functools
import re
from typing import Any, Iterable, Sequence

from ..environment import ABSENT, PACKAGE_LABELS, TORCH_CUDA_LABEL, Environment, install_hint, parse_version, place
from .facts import BETA
from .results import OUTSIDE, Finding
from .rule_model import Backend, Horizon, Rule
from .states import Effect, Surface


class _Formatter(dict):  # type: ignore[type-arg]
    """Fills a placeholder no fact names with "?"."""

    def __missing__(self, key: str) -> str:
        return "?"


@functools.lru_cache(maxsize=1024)
def placeholders(message: str) -> tuple[str, ...]:
    return tuple(re.findall(r"{([^{}]*)}", message))


def message_of(rule: Rule, facts: dict[str, Any]) -> str:
    """The rule's message with facts filled in; its title when a fact it names is unknown."""
    names = placeholders(rule.message)
    if any(facts.get(n) is None for n in names):
        return rule.title
    return rule.message.format_map(_Formatter({n: str(facts[n]) for n in names}))


def make_finding(rule: Rule, applies: bool | None, facts: dict[str, Any], condition: str = "",
                 missing: tuple[str, ...] = (), message: str | None = None) -> Finding:
    """The finding a rule makes on these facts (`applies` None: it may apply; `condition`: what it still asks)."""
    return Finding(id=rule.id, effect=rule.effect, surfaces=rule.surfaces, title=rule.title,
                   message=message_of(rule, facts) if message is None else message, symptom=rule.symptom,
                   fixes=rule.fixes, references=rule.references, applies=applies, condition=condition, missing=missing,
                   evidence=rule.evidence, data=rule.data, workaround=rule.workaround, fixed_in=rule.fixed_in,
                   advisory=rule.advisory)


BUILTIN_REFERENCE = ("attndoctor: backend requirements in rules/backends.toml",)
DRIVER_MINIMUM: dict[int, str] = {11: "450.80.02", 12: "525", 13: "580"}
"""CUDA major release -> the oldest driver that runs it (minor releases through minor version compatibility): NVIDIA's
Linux numbers; a Windows driver of a branch carries a higher one (527.41 for 12.x), so this can miss a too-old Windows
driver but never refuses a good one. CUDA 11.0 itself shipped with 450.36.06 (DRIVER_EXCEPTIONS)."""
DRIVER_EXCEPTIONS: dict[tuple[int, int], str] = {(11, 0): "450.36.06"}
DRIVER_REFERENCES = (
    "https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html (Table 1: CUDA 13.x >= 580, "
    "12.x >= 525, 11.x >= 450; 450.80.02 on Linux for the whole 11.x family)",
    "pytorch/pytorch c10/cuda/CUDAFunctions.cpp: 'The NVIDIA driver on your system is too old (found version ...)'",
    "https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html (newer CUDA on older data-center "
    "drivers through the cuda-compat package: why this stays a note, not a refusal)",
)


def driver_too_old(cuda: Any, driver: Any) -> str:
    """The oldest driver that runs `cuda` when `driver` is older, else ''. A "driver" below 100 is the CUDA version the
    driver runs, as nvidia-smi's banner prints it (12.2): then only a newer CUDA major release is too new for it, and
    what it needs is that release (13.0)."""
    if driver.major < 100:
        return f"{cuda.major}.0" if cuda.major > driver.major else ""
    need = DRIVER_EXCEPTIONS.get((cuda.major, cuda.minor)) or DRIVER_MINIMUM.get(cuda.major)
    return need if need and driver < parse_version(need) else ""


def _beta_outside(horizon: Horizon, facts: dict[str, Any]) -> str:
    """'older' or 'newer' for a flash-attn 4 beta outside the horizon's betas: versions read every beta as 4.0.0."""
    beta = facts.get("flash_attn_4_beta")
    oldest, newest = re.match(BETA, horizon.oldest), re.match(BETA, horizon.newest)
    if horizon.package != "flash_attn_4" or beta is None or not oldest or not newest:
        return ""
    return "older" if beta < int(oldest.group(1)) else "newer" if beta > int(newest.group(1)) else ""


def builtin_findings(backend: Backend, env: Environment, facts: dict[str, Any],
                     horizons: Sequence[Horizon] = ()) -> Iterable[Finding]:
    """Facts about the machine itself: a backend's package missing or broken, a version the rules do not model, or no
    GPU at all."""
    for horizon in horizons:
        version = facts.get(horizon.package)
        if backend.id not in horizon.backends or version is None or version == ABSENT:
            continue
        side = horizon.outside(version) or _beta_outside(horizon, facts)
        if side:
            label = PACKAGE_LABELS.get(horizon.package, horizon.package)
            if horizon.package == "flash_attn_4" and "flash_attn_4_beta" in facts:
                version = f"4.0.0b{facts['flash_attn_4_beta']}"
            span = f"{horizon.oldest} to {horizon.newest}"
            yield _builtin(OUTSIDE, Effect.INFO, Surface.DISPATCH,
                           f"{label} {version} lies outside the releases the rules model",
                           f"{label} {version} is {side} than every release the rules about {backend.id} were read "
                           f"at ({span}): attndoctor claims nothing for it", "", horizon.references)
    cuda, driver = facts.get("cuda"), facts.get("driver")
    built = env.source == "probe" or TORCH_CUDA_LABEL.search(str(env.versions.get("torch") or ""))
    need = driver_too_old(cuda, driver) if built and cuda not in (None, ABSENT) and driver not in (None, ABSENT) else ""
    if need:
        yield _builtin("AD-DRIVER-OLDER-THAN-CUDA", Effect.INFO, Surface.RUNTIME,
                       f"the NVIDIA driver is older than CUDA {cuda.major}.x needs",
                       "this runs only with CUDA's forward-compatibility package (cuda-compat: data-center GPUs, part "
                       f"of NGC containers): NVIDIA driver {env.versions.get('driver', driver)} is older than {need}, the "
                       f"oldest that runs CUDA {cuda.major}.x (torch is built with CUDA {cuda}), and without it torch "
                       "cannot initialise CUDA; upgrade the driver, or install a torch built for the CUDA this driver "
                       "runs (nvidia-smi prints it)",
                       "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version "
                       "12020); torch.cuda.is_available() is False", DRIVER_REFERENCES)
    for package in backend.requires:
        if facts.get(package) == ABSENT:
            label = PACKAGE_LABELS.get(package, package)
            yield _builtin("AD-NOT-INSTALLED", Effect.UNSUPPORTED, Surface.DISPATCH, f"{label} is not installed",
                           f"{label} is not installed {place(env.source)} ({install_hint(package)})",
                           f"ModuleNotFoundError ({label})")
        elif package in env.import_errors:
            label = PACKAGE_LABELS.get(package, package)
            yield _builtin("AD-IMPORT-FAILS", Effect.UNSUPPORTED, Surface.RUNTIME,
                           f"{label} is installed but does not import",
                           f"{label} fails to import: {env.import_errors[package]}", env.import_errors[package])
    if env.no_gpu and not backend.cpu:
        where = place(env.source)
        yield _builtin("AD-NO-GPU", Effect.UNSUPPORTED, Surface.DISPATCH, f"no CUDA GPU {where}",
                       f"no NVIDIA GPU {where} (NVML found none)", "RuntimeError: No CUDA GPUs are available")


def _builtin(ident: str, effect: Effect, surfaces: Surface, title: str, message: str, symptom: str,
             references: Sequence[str] = BUILTIN_REFERENCE) -> Finding:
    """A finding of attndoctor's own that applies outright and has no fix."""
    return Finding(id=ident, effect=effect, surfaces=surfaces, title=title, message=message, symptom=symptom,
                   fixes=(), references=tuple(references), applies=True)
