"""Installed attention packages: versions from their metadata (nothing imported), then whether each imports."""

from __future__ import annotations

import importlib.metadata as metadata
import importlib.util

from ..environment import ABSENT, PACKAGE_LABELS, Environment
from ._run import MARKER, note, run_python

DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "torch": ("torch",),
    "flash_attn": ("flash-attn", "flash_attn"),
    "flash_attn_3": ("flash-attn-3", "flash_attn_3", "flashattn-hopper"),
    "flash_attn_4": ("flash-attn-4",),
    "cutlass_dsl": ("nvidia-cutlass-dsl",),
    "cudnn_frontend": ("nvidia-cudnn-frontend",),
    "te": ("transformer-engine", "transformer_engine", "transformer-engine-torch"),
}
"""Version fact -> the distribution names that provide it, first found wins."""

MODULE_ONLY = {"flash_attn_3": "flash_attn_interface"}
"""Facts whose top-level module alone shows the package is there (FA3 built from source has no metadata)."""

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
