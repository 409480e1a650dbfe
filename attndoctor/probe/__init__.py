"""Probe this machine: GPUs, torch, cuDNN, attention packages, their APIs and switches -> Environment.

`probe()` never raises: whatever fails becomes a note. Independent steps run at once in daemon threads, each
subprocess under a timeout, so a missing torch costs well under two seconds and a present one about its import
time.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from ..environment import ABSENT, Environment, parse_version
from ..gpus import arch_supported
from ..words import plural
from ._run import Part, note
from .api import probe_api
from .binaries import probe_binaries
from .cudnn_lib import probe_cudnn_library
from .envvars import probe_env_vars
from .nvml import probe_nvml
from .packages import IMPORT_CHECKS, check_import, package_versions
from .torch_info import probe_torch

__all__ = ["probe"]

NVML_HEAD_START = 2.0
"""Seconds the other steps wait for NVML, whose answer lets the torch step skip CUDA initialisation."""

_SUBPROCESS_MARGIN = 0.5
"""Seconds a subprocess's timeout stays below the probe's, so that the step reports its own timeout."""


def probe(timeout: float = 20.0, *, use_cache: bool = True) -> Environment:
    """Facts about this machine; `timeout` bounds the whole probe, in seconds; `use_cache` allows torch's build
    facts to come from the cache while torch is unchanged. Never raises."""
    env = Environment(source="probe")
    try:
        _probe(env, float(timeout), use_cache)
    except Exception as exc:  # noqa: BLE001 - the last line of defence: a probe bug is a note, not a traceback
        env.notes.append(note("probe", "error", f"the probe failed: {type(exc).__name__}: {exc}"))
    env.source = "probe"
    return env


def _probe(env: Environment, timeout: float, use_cache: bool) -> None:
    timeout = max(timeout, 0.5)
    deadline = time.monotonic() + timeout
    sub = max(0.25, timeout - _SUBPROCESS_MARGIN)

    packages = _guard(env, "packages", package_versions)
    versions = dict(packages.versions) if packages is not None else {}

    # NVML answers in milliseconds; when it names the GPU, the torch step need not create a CUDA context (the
    # slowest part of asking torch about the device).
    nvml = Part("nvml", probe_nvml).start()
    nvml.wait(min(deadline, time.monotonic() + NVML_HEAD_START))
    nvml_knows_gpu = nvml.done and nvml.error is None and nvml.result is not None and nvml.result[0].sm is not None
    parts = [
        nvml,
        Part("torch", lambda: probe_torch(sub, installed_version=versions.get("torch"),
                                          query_device=not nvml_knows_gpu, use_cache=use_cache)),
        Part("cudnn", lambda: probe_cudnn_library(sub)),
        Part("api", lambda: probe_api(versions)),
        Part("binaries", lambda: probe_binaries(use_cache=use_cache)),
    ]
    for fact, module in IMPORT_CHECKS:
        # package_versions leaves a fact out only when the module is there without metadata: check it too.
        if packages is None or versions.get(fact) == ABSENT:
            continue
        parts.append(Part(f"import {module}", _import_job(fact, module, sub, versions.get(fact))))
    for part in parts[1:]:
        part.start()

    results: dict[str, Any] = {}
    for part in parts:
        if not part.wait(deadline):
            env.notes.append(note("timeout", "warning", f"probe step '{part.name}' did not finish within "
                                  f"{timeout:.0f} s; its facts are unknown"))
        elif part.error is not None:
            env.notes.append(note("probe", "error", f"probe step '{part.name}' failed: "
                                  f"{type(part.error).__name__}: {part.error}"))
        else:
            results[part.name] = part.result

    if packages is not None:
        _merge(env, packages)
    cuda_driver = None
    if "nvml" in results:
        nvml_env, cuda_driver = results["nvml"]
        _merge(env, nvml_env)
    if "torch" in results:
        _merge_torch(env, results["torch"])
    if "cudnn" in results and env.versions.get("cudnn") is None:
        _merge(env, results["cudnn"])
    for part in parts:
        if part.name.startswith("import ") and part.name in results:
            _merge(env, results[part.name])
    if "api" in results:
        _merge(env, results["api"])
    if "binaries" in results:
        env.binaries = results["binaries"]
    env_vars = _guard(env, "env vars", probe_env_vars)
    if env_vars is not None:
        _merge(env, env_vars)
    env.no_gpu = bool("nvml" in results and results["nvml"][0].no_gpu and env.gpu is None)
    _guard(env, "cross-checks", lambda: _cross_check(env, cuda_driver))


def _import_job(fact: str, module: str, timeout: float, version: str | None) -> Callable[[], Environment]:
    return lambda: check_import(fact, module, timeout, version=version)


def _guard(env: Environment, what: str, fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001
        env.notes.append(note("probe", "error", f"probe step '{what}' failed: {type(exc).__name__}: {exc}"))
        return None


def _merge(dst: Environment, src: Environment) -> None:
    """Add a step's partial Environment; a step's known fact replaces an unknown one, never a known one, except
    for versions, where the later (better-informed) step wins."""
    dst.versions.update(src.versions)
    dst.import_errors.update(src.import_errors)
    dst.api.update(src.api)
    dst.env_vars.update(src.env_vars)
    dst.notes.extend(src.notes)
    if src.gpus and not dst.gpus:
        dst.gpus = list(src.gpus)
    for name in ("gpu", "sm", "torch_arch_list", "torch_cuda_available", "cudnn_compiled"):
        if getattr(dst, name) is None and getattr(src, name) is not None:
            setattr(dst, name, getattr(src, name))


def _merge_torch(dst: Environment, src: Environment) -> None:
    if dst.gpu is None and src.gpu is not None:
        dst.notes.append(note("gpu", "info", f"GPU {src.gpu} found through torch (NVML did not report it)"))
    _merge(dst, src)


def _cross_check(env: Environment, cuda_driver: str | None) -> None:
    """Facts that only show when two steps' results are put side by side."""
    torch_version = env.versions.get("torch")
    has_torch = torch_version not in (None, ABSENT) and "torch" not in env.import_errors
    cuda = env.versions.get("cuda")
    if has_torch and env.sm is not None and env.torch_arch_list:
        ok = arch_supported(env.sm, env.torch_arch_list)
        if ok is not None:
            env.api["torch.arch_supported"] = ok
        if ok is False:
            env.notes.append(note("torch", "error", f"torch {torch_version} has no kernels for sm{env.sm} "
                                  f"({env.gpu}): it was built for {' '.join(env.torch_arch_list)}; install a "
                                  "build for this GPU"))
    if has_torch and cuda not in (None, ABSENT) and cuda_driver:
        try:
            built, runs = parse_version(cuda), parse_version(cuda_driver)
        except Exception:  # noqa: BLE001 - odd version text: say nothing rather than something wrong
            built = runs = None
        if built is not None and runs is not None:
            if built.major > runs.major:
                env.notes.append(note("driver", "error", f"torch {torch_version} is built with CUDA {cuda} but "
                                      f"driver {env.versions.get('driver')} runs CUDA {cuda_driver} at most: "
                                      "CUDA will not initialise; upgrade the driver or install a torch built "
                                      f"for CUDA {runs.major}.x"))
            elif built > runs:
                env.notes.append(note("driver", "warning", f"torch {torch_version} is built with CUDA {cuda}, "
                                      f"newer than the driver's CUDA {cuda_driver}: it runs through CUDA minor "
                                      "version compatibility, without PTX JIT"))
    if has_torch and env.torch_cuda_available is False and env.gpus and cuda not in (None, ABSENT):
        env.notes.append(note("torch", "error", f"torch.cuda.is_available() is False although NVML sees "
                              f"{plural(len(env.gpus), 'GPU')}: CUDA does not initialise for torch"))
