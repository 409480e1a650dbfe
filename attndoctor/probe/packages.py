"""Installed attention packages: versions from their metadata (nothing imported), then whether each imports."""

from __future__ import annotations

import importlib.metadata as metadata
import importlib.util
from pathlib import Path

from packaging.version import InvalidVersion, Version

from ..environment import ABSENT, PACKAGE_LABELS, Environment
from ._run import MARKER, note, run_python

DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "torch": ("torch",),
    "flash_attn": ("flash-attn", "flash_attn"),
    "flash_attn_3": ("flash-attn-3", "flash_attn_3", "flashattn-hopper"),
    "flash_attn_4": ("flash-attn-4", "flash-attn4"),
    "cutlass_dsl": ("nvidia-cutlass-dsl",),
    "cudnn_frontend": ("nvidia-cudnn-frontend",),
    "te": ("transformer-engine", "transformer_engine", "transformer-engine-torch"),
}
"""Version fact -> the distribution names that provide it, first found wins (flash-attn4: flash_attn/cute's
pyproject.toml name at Dao-AILab/flash-attention fa4-v4.0.0.beta0 .. beta2, whose source installs carry it)."""

MODULE_ONLY = {"flash_attn_3": "flash_attn_interface"}
"""Facts whose top-level module alone shows the package is there (FA3 built from source has no metadata)."""

CUTE_PREVIEW = ("flash-attn-cute", "flash-attn")
"""Distributions that carry flash_attn.cute before the flash-attn-4 betas, first found wins: flash_attn/cute's own
pyproject.toml names flash-attn-cute 0.1.0 (Dao-AILab/flash-attention v2.8.3), and flash-attn packs flash_attn.cute
from 2.8.3 on (its setup.py excludes it only from #2282, after every 2.8.3 release)."""

IMPORT_CHECKS: tuple[tuple[str, str], ...] = (
    ("flash_attn", "flash_attn"),
    ("flash_attn_3", "flash_attn_interface"),
    ("flash_attn_4", "flash_attn.cute"),
    ("cudnn_frontend", "cudnn"),
    ("te", "transformer_engine.pytorch"),
)
"""(version fact, module to import) for every installed package; torch has its own probe."""

IMPORT_SNIPPET = r"""
import importlib, sys
importlib.import_module(sys.argv[1])
print(MARKER + "{}")
""".replace("MARKER", repr(MARKER))


def distribution_version(*names: str) -> str | None:
    """The version of the first of `names` that is installed, read from its metadata; None if none is."""
    for name in names:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        except Exception:  # noqa: BLE001 - a malformed dist-info is as good as none
            continue
        if version:
            return str(version)
    return None


def module_present(name: str) -> bool:
    """Whether a top-level module can be found, without importing it."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError, AttributeError):
        return False


def cute_present() -> bool:
    """Whether flash_attn/cute/__init__.py is installed, found without importing flash_attn."""
    try:
        spec = importlib.util.find_spec("flash_attn")
        locations = list(spec.submodule_search_locations or ()) if spec is not None else []
        return any(Path(location, "cute", "__init__.py").is_file() for location in locations)
    except Exception:  # noqa: BLE001 - a broken flash_attn install is one without the preview
        return False


def _carries_cute(name: str) -> bool:
    """Whether an installed distribution may hold flash_attn.cute: not when its top_level.txt names only other modules
    (PyPI's flash-attn-cute 0.0.1 is a placeholder whose only module is flash_attn_cute)."""
    try:
        top_level = metadata.distribution(name).read_text("top_level.txt")
    except Exception:  # noqa: BLE001 - unreadable metadata tells nothing either way
        return True
    return top_level is None or "flash_attn" in top_level.split()


def _cute_preview(env: Environment) -> None:
    """Record flash_attn.cute that comes without flash-attn-4 under the version of the package that carries it; with
    no package to name, leave its version unknown so that its import is still checked."""
    found = {name: distribution_version(name) for name in CUTE_PREVIEW}
    carriers = [(name, version) for name, version in found.items() if version is not None and _carries_cute(name)]
    if found["flash-attn-cute"] is not None and ("flash-attn-cute", found["flash-attn-cute"]) not in carriers:
        env.notes.append(note("package", "info", f"flash-attn-cute {found['flash-attn-cute']} is installed but holds "
                              "no flash_attn.cute (a placeholder)"))
    if not cute_present():
        return
    if not carriers:
        del env.versions["flash_attn_4"]
        env.notes.append(note("package", "info", "flash-attn 4 is importable as flash_attn.cute but no package "
                              "metadata names it: its version is unknown"))
        return
    name, version = carriers[0][0], _public(carriers[0][1])
    env.versions["flash_attn_4"] = version
    env.notes.append(note("package", "info", f"flash_attn.cute comes with {name} {version}, the preview before the "
                          f"flash-attn-4 betas: flash-attn 4 is read as {version}, older than every beta the rules "
                          "model (pip install flash-attn-4 for a beta)"))


def _public(version: str) -> str:
    """The version without its local label, as `--env-file` reads a flash-attn 4 version that is not 4.x back."""
    try:
        return Version(version).public
    except InvalidVersion:
        return version


def package_versions() -> Environment:
    """A partial Environment: versions of torch and the attention packages, ABSENT when not installed."""
    env = Environment(source="probe")
    for fact, names in DISTRIBUTIONS.items():
        version = distribution_version(*names)
        if version is not None:
            env.versions[fact] = version
        elif fact == "torch" and module_present("torch"):
            pass  # importable without metadata (a source build): the torch probe reads its version
        elif fact in MODULE_ONLY and module_present(MODULE_ONLY[fact]):
            env.notes.append(note("package", "info", f"{PACKAGE_LABELS[fact]} is importable as "
                                  f"{MODULE_ONLY[fact]} but has no package metadata: its version is unknown"))
        elif fact == "flash_attn_4":
            env.versions[fact] = ABSENT
            _cute_preview(env)
        else:
            env.versions[fact] = ABSENT
    return env


def check_import(fact: str, module: str, timeout: float, *, version: str | None = None) -> Environment:
    """Import `module` in a subprocess; a partial Environment with import_errors[fact] and a note on failure."""
    env = Environment(source="probe")
    label = PACKAGE_LABELS.get(fact, fact) + (f" {version}" if version and version != ABSENT else "")
    result = run_python(IMPORT_SNIPPET, [module], timeout=timeout)
    if result.timed_out:
        env.notes.append(note("import", "warning", f"import {module} did not finish within {timeout:.0f} s; "
                              f"whether {label} works is unknown"))
        return env
    if result.payload() is not None:
        return env
    if result.error:
        env.notes.append(note("import", "warning", f"could not run Python to try `import {module}`: {result.error}"))
        return env
    line = result.failure()
    env.import_errors[fact] = line
    hint = ""
    if "undefined symbol" in line:
        hint = " (its compiled extension was built against another torch or CUDA: reinstall it for this torch)"
    env.notes.append(note("import", "error", f"{label} is installed but `import {module}` fails: {line}{hint}"))
    return env
