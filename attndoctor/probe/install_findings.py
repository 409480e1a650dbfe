"""Broken installs as findings: an inspected extension judged against a GPU and the installed torch (wrong GPU
architectures, torch symbols it needs that torch does not export), each with its fix in users' words."""

from __future__ import annotations

import shutil
import subprocess
from typing import Any, Iterable, Mapping

from ..environment import Environment
from .binaries import TARGETS, probe_binaries


def _archs(values: Iterable[int]) -> str:
    values = list(values)
    return ", ".join(f"sm{v}" for v in values) if values else "none"


def runs_on(entry: Mapping[str, Any], sm: int) -> tuple[bool | None, bool]:
    """(whether the entry's device code runs on compute capability `sm`, whether only through PTX JIT); None when
    it has no device code."""
    from .torch_info import arch_supported  # noqa: PLC0415

    sass, ptx = list(entry.get("sass") or []), list(entry.get("ptx") or [])
    if not entry.get("device_code") or not (sass or ptx):
        return None, False
    native = arch_supported(sm, [f"sm_{a}" for a in sass]) if sass else False
    if native:
        return True, False
    jit = arch_supported(sm, [f"compute_{a}" for a in ptx]) if ptx else False
    return bool(jit), bool(jit)


def entry_findings(entry: Mapping[str, Any], *, sm: int | None, gpu: str | None,
                   torch_version: str | None = None) -> list[dict[str, str]]:
    """What is wrong with one inspected shared object on GPU `sm`, each with its fix, in users' words."""
    target = next((t for t in TARGETS if t.key == entry.get("package")), None)
    label = entry.get("label") or entry.get("package") or "?"
    name = f"{label} {entry['version']}" if entry.get("version") else str(label)
    file = entry.get("file") or "?"
    pip = target.pip if target else str(label)
    out: list[dict[str, str]] = []
    if entry.get("error"):
        out.append({"kind": "unreadable", "severity": "warning",
                    "message": f"{name}: {file} cannot be read as a shared object ({entry['error']}): the "
                               "install is damaged or incomplete",
                    "fix": f"pip install --force-reinstall --no-deps {pip}"})
        return out
    if sm is not None:
        runs, jit = runs_on(entry, sm)
        where = f"{gpu} (sm{sm})" if gpu and gpu != f"sm{sm}" else f"sm{sm}"
        carried = f"SASS {_archs(entry.get('sass') or [])}; PTX {_archs(entry.get('ptx') or [])}"
        hint = (target.arch_hint if target else "rebuild it for sm{sm}").format(sm=sm, cc=f"{sm // 10}.{sm % 10}")
        if runs is False:
            out.append({"kind": "arch", "severity": "error",
                        "message": f"{name} carries no sm{sm} kernels ({carried} in {file}): 'no kernel image is "
                                   f"available for execution on the device' on {where}",
                        "fix": f"install a {label} wheel built for sm{sm}, or build it from source: {hint}"})
        elif runs and jit:
            out.append({"kind": "arch", "severity": "warning",
                        "message": f"{name} has no sm{sm} machine code ({carried} in {file}): on {where} the driver "
                                   "compiles its PTX at first use, which can take minutes and is redone whenever "
                                   "the driver's JIT cache is cold",
                        "fix": f"install a {label} wheel built for sm{sm}, or build it from source: {hint}"})
    if entry.get("abi") == "unresolved":
        symbols = list(entry.get("unresolved") or [])
        shown = symbols[0] if symbols else "?"
        readable = demangle(shown)
        more = int(entry.get("unresolved_count") or len(symbols)) - 1
        torch = f"torch {torch_version}" if torch_version else "the installed torch"
        out.append({"kind": "abi", "severity": "error",
                    "message": f"{name} was built against another torch: {file} needs symbols {torch} does not "
                               f"export, so importing it fails with 'undefined symbol: {shown}'"
                               + (f" ({readable})" if readable != shown else "")
                               + (f" and {more} more" if more > 0 else ""),
                    "fix": f"install the {label} wheel built for {torch}, or build it from source against it: "
                           f"pip install --no-build-isolation --no-cache-dir --force-reinstall {pip}"})
    return out


def demangle(name: str) -> str:
    """The C++ name behind a mangled symbol when c++filt is at hand (it is where a compiler is); else the name."""
    tool = shutil.which("c++filt")
    if not tool or not name.startswith("_Z"):
        return name
    try:
        done = subprocess.run([tool, name], capture_output=True, text=True, timeout=2, check=False)
    except (OSError, subprocess.SubprocessError):
        return name
    text = done.stdout.strip()
    return text if done.returncode == 0 and text else name


def annotate(env: Environment) -> None:
    """Attach to each inspected binary its findings on env's GPU, and add them to env's notes."""
    torch_version = env.versions.get("torch")
    entries = []
    for entry in env.binaries or []:
        found = entry_findings(entry, sm=env.sm, gpu=env.gpu, torch_version=torch_version)
        entries.append({**entry, "findings": found})
        for f in found:
            if entry.get("package") == "torch" and f["kind"] == "arch" and env.api.get("torch.arch_supported") is False:
                continue  # the probe's cross-check already says so, from torch's own arch list
            # not note(): its 400-character clip would cut the fix off; a finding's length is bounded by its parts
            message = f"{f['message']}; fix: {f['fix']}"
            env.notes.append({"kind": "binary", "severity": f["severity"], "message": message})
    if env.binaries is not None:
        env.binaries = entries


def reannotate(env: Environment) -> None:
    """Judge binaries read on another machine (an env file) against the GPU a what-if names."""
    env.notes = [n for n in env.notes if n.get("kind") != "binary"]
    annotate(env)


def inspect_installed(env: Environment | None = None, *, use_cache: bool = True) -> list[dict[str, str]]:
    """The broken-install findings for `env` (its inspected binaries against its GPU), inspecting this machine's
    binaries when `env` has none; for `why` and other callers. Never raises."""
    env = env if env is not None else Environment(source="probe")
    entries = env.binaries if env.binaries is not None else probe_binaries(use_cache=use_cache)
    out: list[dict[str, str]] = []
    for entry in entries:
        for f in entry_findings(entry, sm=env.sm, gpu=env.gpu, torch_version=env.versions.get("torch")):
            out.append({**f, "package": str(entry.get("package")), "file": str(entry.get("file"))})
    return out
