"""Install findings: the compiled extensions a probe read, judged against a GPU and a torch release (no code for the
GPU, torch symbols torch does not export, a damaged file), each with its fix in users' words. They follow from the
binaries as read whenever asked, so another GPU or torch (a what-if) judges the same files afresh."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..environment import BINARY_NOTE, Environment
from ..extensions import TARGETS
from ..gpus import arch_supported
from .states import InstallKind, Severity


@dataclass(frozen=True)
class InstallFinding:
    """What is wrong with one inspected shared object on a GPU, with its fix."""

    kind: InstallKind
    severity: Severity
    message: str
    fix: str
    package: str
    label: str
    file: str

    def to_dict(self) -> dict[str, str]:
        """As `environment.binaries[].findings` lists it."""
        return {"kind": self.kind, "severity": self.severity, "message": self.message, "fix": self.fix}

    def note(self) -> dict[str, str]:
        """As `environment.notes` lists it (kind binary), its fix after the message."""
        # not the probe's note(): its 400-character clip would cut the fix off; a finding's length is bounded
        return {"kind": BINARY_NOTE, "severity": self.severity, "message": f"{self.message}; fix: {self.fix}"}


def _archs(values: Iterable[int]) -> str:
    values = list(values)
    return ", ".join(f"sm{v}" for v in values) if values else "none"


def runs_on(entry: Mapping[str, Any], sm: int) -> tuple[bool | None, bool]:
    """(whether the entry's device code runs on compute capability `sm`, whether only through PTX JIT); None when
    it has no device code."""
    sass, ptx = list(entry.get("sass") or []), list(entry.get("ptx") or [])
    if not entry.get("device_code") or not (sass or ptx):
        return None, False
    native = arch_supported(sm, [f"sm_{a}" for a in sass]) if sass else False
    if native:
        return True, False
    jit = arch_supported(sm, [f"compute_{a}" for a in ptx]) if ptx else False
    return bool(jit), bool(jit)


def binary_findings(entry: Mapping[str, Any], *, sm: int | None, gpu: str | None,
                    torch_version: str | None = None) -> tuple[InstallFinding, ...]:
    """What is wrong with one inspected shared object on GPU `sm` beside `torch_version`, each with its fix."""
    target = next((t for t in TARGETS if t.key == entry.get("package")), None)
    label = str(entry.get("label") or entry.get("package") or "?")
    name = f"{label} {entry['version']}" if entry.get("version") else label
    file = entry.get("file") or "?"
    pip = target.pip if target else label

    def found(kind: InstallKind, severity: Severity, message: str, fix: str) -> InstallFinding:
        return InstallFinding(kind=kind, severity=severity, message=message, fix=fix,
                              package=str(entry.get("package")), label=label, file=str(entry.get("file")))

    if entry.get("error"):
        return (found(InstallKind.UNREADABLE, Severity.WARNING,
                      f"{name}: {file} cannot be read as a shared object ({entry['error']}): the install is damaged "
                      "or incomplete", f"pip install --force-reinstall --no-deps {pip}"),)
    out: list[InstallFinding] = []
    if sm is not None:
        runs, jit = runs_on(entry, sm)
        where = f"{gpu} (sm{sm})" if gpu and gpu != f"sm{sm}" else f"sm{sm}"
        carried = f"SASS {_archs(entry.get('sass') or [])}; PTX {_archs(entry.get('ptx') or [])}"
        hint = (target.arch_hint if target else "rebuild it for sm{sm}").format(sm=sm, cc=f"{sm // 10}.{sm % 10}")
        fix = f"install a {label} wheel built for sm{sm}, or build it from source: {hint}"
        if runs is False:
            out.append(found(InstallKind.ARCH, Severity.ERROR,
                             f"{name} carries no sm{sm} kernels ({carried} in {file}): 'no kernel image is available "
                             f"for execution on the device' on {where}", fix))
        elif runs and jit:
            out.append(found(InstallKind.ARCH, Severity.WARNING,
                             f"{name} has no sm{sm} machine code ({carried} in {file}): on {where} the driver compiles "
                             "its PTX at first use, which can take minutes and is redone whenever the driver's JIT "
                             "cache is cold", fix))
    if entry.get("abi") == "unresolved":
        symbols = list(entry.get("unresolved") or [])
        shown = symbols[0] if symbols else "?"
        readable = next(iter(entry.get("unresolved_demangled") or []), shown)
        more = int(entry.get("unresolved_count") or len(symbols)) - 1
        torch = f"torch {torch_version}" if torch_version else "the installed torch"
        out.append(found(InstallKind.ABI, Severity.ERROR,
                         f"{name} was built against another torch: {file} needs symbols {torch} does not export, so "
                         f"importing it fails with 'undefined symbol: {shown}'"
                         + (f" ({readable})" if readable != shown else "")
                         + (f" and {more} more" if more > 0 else ""),
                         f"install the {label} wheel built for {torch}, or build it from source against it: "
                         f"pip install --no-build-isolation --no-cache-dir --force-reinstall {pip}"))
    return tuple(out)


def judge_binaries(env: Environment) -> tuple[tuple[Mapping[str, Any], tuple[InstallFinding, ...]], ...]:
    """Each binary the environment carries, as read, with its findings on the environment's GPU and torch."""
    torch_version = env.versions.get("torch")
    return tuple((entry, binary_findings(entry, sm=env.sm, gpu=env.gpu, torch_version=torch_version))
                 for entry in env.binaries or ())


def install_findings(env: Environment) -> tuple[InstallFinding, ...]:
    """Every finding about the environment's binaries, in the order they were read; none when it carries none."""
    return tuple(f for _entry, found in judge_binaries(env) for f in found)


def install_notes(env: Environment, found: Iterable[InstallFinding] | None = None) -> list[dict[str, str]]:
    """The findings (`found`, else the environment's) as the environment's notes list them (kind binary)."""
    # torch's own missing arch is left out where the probe's cross-check already says so, from torch's arch list
    torch_said = env.api.get("torch.arch_supported") is False
    return [f.note() for f in (install_findings(env) if found is None else found)
            if not (torch_said and f.package == "torch" and f.kind is InstallKind.ARCH)]


def environment_dict(env: Environment) -> dict[str, Any]:
    """The environment as reports write it: the facts read, each binary with its findings, the findings as notes."""
    data = env.to_dict()
    judged = judge_binaries(env)
    if env.binaries is not None:
        data["binaries"] = [{**entry, "findings": [f.to_dict() for f in found]} for entry, found in judged]
    data["notes"] = data["notes"] + install_notes(env, (f for _entry, found in judged for f in found))
    return data
