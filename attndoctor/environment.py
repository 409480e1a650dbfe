"""The machine a config would run on: GPU, library versions, API facts and switches, known or unknown."""

import re
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple

from packaging.version import InvalidVersion, Version

from .errors import UsageError

ABSENT = "absent"
"""A package version that is known not to be installed (as opposed to unknown, which is None)."""

PACKAGES = ("torch", "cuda", "cudnn", "flash_attn", "flash_attn_3", "flash_attn_4", "cutlass_dsl", "cudnn_frontend",
            "te", "driver")
"""Version facts; `cuda` is the CUDA runtime torch was built with, `cudnn` the cuDNN actually loaded, `cutlass_dsl`
the nvidia-cutlass-dsl (CuTe DSL) runtime that flash-attn 4 and FA3's CuTe paths compile their kernels with."""

PACKAGE_LABELS = {
    "torch": "PyTorch", "cuda": "CUDA", "cudnn": "cuDNN", "flash_attn": "flash-attn",
    "flash_attn_3": "flash-attn 3", "flash_attn_4": "flash-attn 4", "cutlass_dsl": "nvidia-cutlass-dsl",
    "cudnn_frontend": "cudnn-frontend",
    "te": "TransformerEngine", "driver": "NVIDIA driver",
}
PIP_NAMES = {
    "torch": "torch", "cudnn": "nvidia-cudnn-cu12", "flash_attn": "flash-attn", "flash_attn_4": "flash-attn-4",
    "cutlass_dsl": "nvidia-cutlass-dsl", "cudnn_frontend": "nvidia-cudnn-frontend", "te": "transformer-engine[pytorch]",
}
"""Packages pip can install by name. flash-attn 3 is not on PyPI: it is built from the repository's hopper/ folder."""
BUILD_HINTS = {
    "flash_attn_3": "build it from the flash-attention repository's hopper/ folder: git clone "
                    "https://github.com/Dao-AILab/flash-attention && cd flash-attention/hopper && "
                    "python setup.py install",
}
REPORT_SCHEMA_VERSION = 1
"""The version of the `explain`/`check --format json` document, whose `environment` object is what env files hold."""
BINARY_NOTE = "binary"
"""The kind of the notes that install findings add to a report (engine/install.py): derived, so never read back."""
ENV_PREFIXES = ("NVTE_", "CUDNN_", "TORCH_CUDNN_SDPA_", "CUDA_VISIBLE_DEVICES", "PYTORCH_")
TE_SWITCHES: dict[str, dict[str, str]] = {
    "te-flash": {"NVTE_FLASH_ATTN": "1", "NVTE_FUSED_ATTN": "0", "NVTE_UNFUSED_ATTN": "0"},
    "te-fused": {"NVTE_FLASH_ATTN": "0", "NVTE_FUSED_ATTN": "1", "NVTE_UNFUSED_ATTN": "0"},
    "te-unfused": {"NVTE_FLASH_ATTN": "0", "NVTE_FUSED_ATTN": "0", "NVTE_UNFUSED_ATTN": "1"},
}
"""The NVTE_* switches that force one TransformerEngine backend: the TE runners set them, and verify evaluates the
rules for a TE backend with them, so that the prediction is about the run that happened."""


def install_hint(package: str, spec: str = "") -> str:
    """A command that installs a package (at `spec`, e.g. '>=2.7.3'), quoted so that zsh and bash take it as is."""
    if package in BUILD_HINTS:
        return BUILD_HINTS[package]
    pip = PIP_NAMES.get(package)
    if pip is None:
        return f"install {PACKAGE_LABELS.get(package, package)}"
    requirement = f"{pip}{spec}"
    return f"pip install '{requirement}'" if any(c in requirement for c in "[]<>=!~*") else f"pip install {requirement}"


def place(source: str) -> str:
    """Where an environment's facts come from, as words: this machine, the env file's, or a described one."""
    if source == "probe":
        return "on this machine"
    if source.startswith("env-file:"):
        return f"in the environment described by {source.split(':', 1)[1]}"
    return "on that machine"


def parse_version(value: Any, *, what: str = "version", strict: bool = False) -> Version:
    """A PEP 440 version; pre-release, dev and local parts count as their release (NGC's 2.5.0a0+nv24.10 is 2.5.0).

    Post-releases are kept: TransformerEngine's accepted flash-attn range ends at 2.8.3, and 2.8.3.post1 lies
    outside it.
    """
    text = str(value).strip()
    try:
        parsed = Version(text)
    except InvalidVersion:
        match = None if strict else re.match(r"^\s*(\d+(?:\.\d+){0,3})", text)
        if not match:
            raise UsageError(f"{what}: {text!r} is not a version; expected e.g. 9.5.0 or 2.11.0+cu130") from None
        parsed = Version(match.group(1))
    if parsed.post is None:
        return Version(parsed.base_version)
    return Version(f"{parsed.base_version}.post{parsed.post}")


CUDNN_FACTS = ("cudnn", "cudnn_compiled")


def as_compared(fact: str, version: Version) -> Version:
    """A version as its library compares it: cuDNN as major*10000+minor*100+patch, so 9.22.0.44 is 9.22.0."""
    if fact in CUDNN_FACTS and len(version.release) > 3:
        return Version(".".join(map(str, version.release[:3])))
    return version


class GpuInfo(NamedTuple):
    """One visible GPU as the probe saw it."""

    index: int
    name: str
    sm: int | None
    memory_mib: int | None = None
    mig: bool = False
    uuid: str = ""


class Environment:
    """Facts about a machine; a fact that is None is unknown, a version equal to ABSENT is known absent."""

    def __init__(self, source: str = "what-if", gpu: str | None = None, sm: int | None = None,
                 gpus: list[GpuInfo] | None = None, versions: dict[str, str] | None = None,
                 import_errors: dict[str, str] | None = None, api: dict[str, bool] | None = None,
                 env_vars: dict[str, str] | None = None, torch_arch_list: list[str] | None = None,
                 torch_cuda_available: bool | None = None, cudnn_compiled: str | None = None, no_gpu: bool = False,
                 notes: list[dict[str, str]] | None = None, binaries: list[dict[str, Any]] | None = None,
                 archs: tuple[int, ...] | None = None) -> None:
        self.source = source
        self.gpu = gpu
        self.sm = sm
        self.gpus: list[GpuInfo] = [] if gpus is None else gpus
        self.versions: dict[str, str] = {} if versions is None else versions
        self.import_errors: dict[str, str] = {} if import_errors is None else import_errors
        self.api: dict[str, bool] = {} if api is None else api
        self.env_vars: dict[str, str] = {} if env_vars is None else env_vars
        self.torch_arch_list = torch_arch_list
        self.torch_cuda_available = torch_cuda_available
        self.cudnn_compiled = cudnn_compiled
        self.no_gpu = no_gpu
        self.notes: list[dict[str, str]] = [] if notes is None else notes
        self.binaries = binaries
        """Compiled extensions as the probe read them (probe/binaries.py): archs, ABI status; None: not read. Their
        findings follow from them and the GPU (engine/install.py)."""
        self.archs = archs
        """The compute capabilities the GPU may have when only its architecture is known ('Blackwell'); sm is None."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Environment) and vars(self) == vars(other)

    def __repr__(self) -> str:
        return f"Environment({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"

    def replace(self, **changes: Any) -> "Environment":
        """A copy with some facts replaced."""
        return Environment(**{**vars(self), **changes})

    def version(self, package: str) -> Version | str | None:
        """The package's version, ABSENT, or None when unknown."""
        value = self.versions.get(package)
        if value is None or value == ABSENT:
            return value
        return parse_version(value, what=package)

    def with_version(self, package: str, value: str | None) -> "Environment":
        """A copy with one version fact replaced (used to try a fix)."""
        versions = dict(self.versions)
        if value is None:
            versions.pop(package, None)
        else:
            versions[package] = value
        return self.replace(versions=versions)

    def with_env_var(self, name: str, value: str | None) -> "Environment":
        """A copy with one environment variable set or unset."""
        env_vars = dict(self.env_vars)
        if value is None:
            env_vars.pop(name, None)
        else:
            env_vars[name] = value
        return self.replace(env_vars=env_vars)

    def to_dict(self) -> dict[str, Any]:
        """The facts as read, as JSON; reports write engine.install.environment_dict, which adds the install findings,
        and `explain --env-file` reads either back."""
        return {
            "source": self.source,
            "gpu": self.gpu,
            "sm": self.sm,
            "gpus": [g._asdict() for g in self.gpus],
            "versions": dict(sorted(self.versions.items())),
            "import_errors": dict(self.import_errors),
            "api": dict(sorted(self.api.items())),
            "env_vars": dict(sorted(self.env_vars.items())),
            "torch_arch_list": self.torch_arch_list,
            "torch_cuda_available": self.torch_cuda_available,
            "cudnn_compiled": self.cudnn_compiled,
            "no_gpu": self.no_gpu,
            "notes": list(self.notes),
            **({"binaries": list(self.binaries)} if self.binaries is not None else {}),
        }


def environment_from_dict(data: Any, *, where: str = "env file") -> Environment:
    """Read the `environment` object of a `check --format json` report (or the whole report)."""
    if isinstance(data, Mapping) and "schema_version" in data and data["schema_version"] != REPORT_SCHEMA_VERSION:
        raise UsageError(f"{where}: schema_version {data['schema_version']!r} is not one this attndoctor reads "
                         f"({REPORT_SCHEMA_VERSION}); write the file again with this version's `check --format json`")
    if isinstance(data, Mapping) and "environment" in data and isinstance(data["environment"], Mapping):
        data = data["environment"]
    if not isinstance(data, Mapping):
        raise UsageError(f"{where}: expected a JSON object with an 'environment' object")
    known = {"source", "gpu", "sm", "gpus", "versions", "import_errors", "api", "env_vars", "torch_arch_list",
             "torch_cuda_available", "cudnn_compiled", "no_gpu", "notes", "binaries"}
    extra = sorted(set(data) - known)
    if extra:
        raise UsageError(f"{where}: unknown environment key {extra[0]!r}; accepted: {', '.join(sorted(known))}")
    try:
        sm = data.get("sm")
        if sm is not None and (isinstance(sm, bool) or not isinstance(sm, int) or not 10 <= sm <= 200):
            raise UsageError(f"{where}: sm: expected a compute capability such as 90, got {sm!r}")
        versions = _str_map(data.get("versions", {}), "versions", where)
        for package, value in versions.items():
            if package not in PACKAGES:
                raise UsageError(f"{where}: versions: unknown package {package!r}; accepted: {', '.join(PACKAGES)}")
            if value != ABSENT:
                parse_version(value, what=f"{where}: versions.{package}", strict=True)
        gpus = []
        for i, g in enumerate(data.get("gpus") or []):
            if not isinstance(g, Mapping) or not isinstance(g.get("name"), str):
                raise UsageError(f"{where}: gpus[{i}]: expected an object with a name")
            gpus.append(GpuInfo(index=int(g.get("index", i)), name=g["name"], sm=g.get("sm"),
                                memory_mib=g.get("memory_mib"), mig=bool(g.get("mig", False)),
                                uuid=str(g.get("uuid", ""))))
        api = data.get("api") or {}
        if not isinstance(api, Mapping) or not all(isinstance(v, bool) for v in api.values()):
            raise UsageError(f"{where}: api: expected an object of true/false facts")
        arch = data.get("torch_arch_list")
        if arch is not None and (not isinstance(arch, list) or not all(isinstance(a, str) for a in arch)):
            raise UsageError(f"{where}: torch_arch_list: expected a list of names such as sm_90")
        gpu = data.get("gpu")
        if gpu is not None and not isinstance(gpu, str):
            raise UsageError(f"{where}: gpu: expected a name, got {gpu!r}")
        if gpu is not None and sm is None:
            from .gpus import resolve_gpu

            try:
                gpu, sm = resolve_gpu(gpu)
            except UsageError as exc:
                raise UsageError(f"{where}: gpu: {exc}, or give its sm (compute capability) beside it") from None
        notes = data.get("notes") or []
        if not isinstance(notes, list):
            raise UsageError(f"{where}: notes: expected a list")
        binaries = _binaries(data.get("binaries"), where)
        return Environment(
            source=str(data.get("source") or "env-file"),
            gpu=gpu,
            sm=sm,
            gpus=gpus,
            versions=versions,
            import_errors=_str_map(data.get("import_errors", {}), "import_errors", where),
            api=dict(api),
            env_vars=_str_map(data.get("env_vars", {}), "env_vars", where),
            torch_arch_list=arch,
            torch_cuda_available=data.get("torch_cuda_available"),
            cudnn_compiled=data.get("cudnn_compiled"),
            no_gpu=bool(data.get("no_gpu", False)),
            notes=[n for n in notes if isinstance(n, Mapping) and n.get("kind") != BINARY_NOTE],
            binaries=binaries,
        )
    except (TypeError, ValueError) as exc:
        if isinstance(exc, UsageError):
            raise
        raise UsageError(f"{where}: malformed environment ({exc})") from None


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _wholes(value: Any) -> bool:
    return isinstance(value, list) and all(_whole(a) for a in value)


def _texts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(a, str) for a in value)


_BINARY_FIELDS: dict[str, Callable[[Any], bool]] = {
    "sass": _wholes, "ptx": _wholes, "unresolved": _texts, "unresolved_demangled": _texts,
    "unresolved_count": lambda v: _whole(v) and v >= 0,
    "device_code": lambda v: isinstance(v, bool),
}
"""The fields of a binary entry that install findings compute with, and the values each may take (or null)."""


def _binaries(value: Any, where: str) -> list[dict[str, Any]] | None:
    """An env file's binaries as the probe read them: their findings are made again, so they are not read back."""
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(b, Mapping) for b in value):
        raise UsageError(f"{where}: binaries: expected a list of objects")
    for i, entry in enumerate(value):
        bad = next((k for k, ok in _BINARY_FIELDS.items() if entry.get(k) is not None and not ok(entry[k])), None)
        if bad is not None:
            raise UsageError(f"{where}: binaries[{i}].{bad}: unexpected value {entry[bad]!r}")
    return [{k: v for k, v in b.items() if k != "findings"} for b in value]


def _str_map(value: Any, key: str, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise UsageError(f"{where}: {key}: expected an object of text values")
    return dict(value)


def load_env_file(path: str | Path) -> Environment:
    """An Environment from another machine's `check --format json` output."""
    from ._json import loads_json
    from .inputs import describe, read_text

    p = Path(path)
    accepted = "expected the JSON of `attndoctor check --format json`"
    text = read_text(path, describe(path, "env file", accepted))
    data = loads_json(text, str(path), accepted)
    env = environment_from_dict(data, where=str(path))
    env.source = f"env-file:{p.name}"
    return env


WHAT_IF_KEYS = ("gpu", "sm", "env_vars", "api") + PACKAGES
"""What `explain` flags and rule examples may say about a machine."""


def environment_from_flags(values: Mapping[str, Any], *, source: str = "what-if",
                           base: Environment | None = None) -> Environment:
    """An Environment from what-if facts: gpu name or sm, package versions ('none' = not installed), env vars."""
    env = base.replace() if base else Environment(source=source)
    env.versions = dict(env.versions)
    env.env_vars = dict(env.env_vars)
    env.api = dict(env.api)
    given = [key for key, value in values.items() if value is not None]
    names = [key.replace("-", "_") for key in given]
    if len(set(names)) < len(names):
        a, b = next((a, b) for a in given for b in given if a < b and a.replace("-", "_") == b.replace("-", "_"))
        raise UsageError(f"{a!r} and {b!r} name the same fact; give one")
    for key, value in values.items():
        if value is None:
            continue
        name = key.replace("-", "_")
        if name == "gpu":
            from .gpus import resolve_gpu

            from .gpus import arch_family

            family = arch_family(str(value))
            if len(family) > 1:
                env.gpu, env.sm, env.archs = f"{str(value).strip()} (sm{family[0]} to sm{family[-1]})", None, family
            else:
                env.gpu, env.sm = resolve_gpu(str(value))
                env.archs = None
            env.no_gpu = False
        elif name == "sm":
            if isinstance(value, bool) or not isinstance(value, int) or not 10 <= value <= 200:
                raise UsageError(f"sm: expected a compute capability such as 90, got {value!r}")
            env.sm = value
        elif name in PACKAGES:
            text = str(value).strip()
            if text.lower() in ("none", "absent", "no", "-"):
                env.versions[name] = ABSENT
            elif SOURCE_BUILD.match(text):
                env.versions.pop(name, None)
                env.notes.append({"kind": "source-build", "severity": "info", "message": (
                    f"--{name.replace('_', '-')} {text}: a build from source at a commit; which release it matches is "
                    f"not known, so verdicts that depend on {PACKAGE_LABELS.get(name, name)} say so")})
            else:
                given = text
                text, remark = as_written(name, text)
                if remark:
                    env.notes.append({"kind": "version-remark", "severity": "info", "message": (
                        f"--{name.replace('_', '-')} {given}: read as {text}; the remark '{remark}' is not modelled "
                        "(the rules model the release's CUDA builds)")})
                if name == "cudnn":
                    text = cudnn_from_integer(text)
                parsed = parse_version(text, what=f"--{name.replace('_', '-')}", strict=True)
                # a flash-attn 4 beta keeps its number (advisories tell betas apart); other versions read as parsed
                # and flash-attn 2 its local label (TransformerEngine compares 2.8.3+cu128 as above 2.8.3); a cutlass-dsl
                # dev build (4.6.0.dev0) keeps its tag, since advisories tell it from the release; a driver reads as
                # NVIDIA and NVML write it (560.35.03, not 560.35.3); torch keeps its wheel label, as the probe does
                keep = ((name == "flash_attn_4" and parsed.release[:1] == (4,)) or (name in ("flash_attn", "torch")
                        and "+" in text) or name in ("cutlass_dsl", "driver"))
                env.versions[name] = text if keep else str(parsed)
        elif name == "env_vars":
            if not isinstance(value, Mapping):
                raise UsageError("env_vars: expected NAME=VALUE pairs")
            env.env_vars.update({str(k): str(v) for k, v in value.items()})
        elif name == "api":
            if not isinstance(value, Mapping) or not all(isinstance(v, bool) for v in value.values()):
                raise UsageError("api: expected an object of true/false facts")
            env.api.update(value)
        else:
            raise UsageError(f"unknown environment fact {key!r}; accepted: {', '.join(WHAT_IF_KEYS)} (a dash may stand "
                             "for an underscore)")
    built = TORCH_CUDA_LABEL.search(str(values.get("torch") or ""))
    if built:  # the wheel says which CUDA torch was built with; a --cuda beside it that differs names a toolkit
        env.versions["cuda"] = f"{int(built.group(1)[:-1])}.{built.group(1)[-1]}"
    return env


_NAMED = re.compile(r"^(?P<word>[A-Za-z][\w.\- ]*?)(?:\s+version)?\s*(?:==|:|\s)\s*(?P<rest>v?\d\S*(?:\s*\([^()]*\))?)$",
                    re.I)
_WHEEL = re.compile(r"^(?:.*/)?(?P<word>[A-Za-z][\w.]*)-(?P<rest>\d[^-]*)-(?:\d[^-]*-)?[^-]+-[^-]+-[^-]+\.whl$")
"""A wheel's file name: name-version[-build]-python-abi-platform.whl (PEP 427)."""
_INSTALLED = re.compile(r"^(?P<word>[A-Za-z][\w.\-]*?)-(?P<rest>\d\S*)$")
"""A distribution as pip names it installed ("Successfully installed flash_attn-2.7.4+cu12torch2.5cxx11abiFALSE")."""
_REMARK = re.compile(r"^(?P<version>\S+)\s*\((?P<remark>[^()]*)\)$")
_CUDA_TAG = re.compile(r"cu\d{3}", re.I)


def _package_word(word: str) -> str:
    """A package's name as people vary it: case, dashes, a lib or nvidia prefix, a -cu12 suffix, pip extras."""
    word = re.sub(r"[^a-z0-9]", "", word.lower().split("[")[0])
    return re.sub(r"cu\d+$", "", re.sub(r"^(?:lib|nvidia)", "", word))


def as_written(name: str, text: str) -> tuple[str, str]:
    """(version, the remark read past) for a version as people write it: past the package's own name before it
    (pip's torch==2.3.1 and flash_attn-2.7.4, "libtorch 2.5.1", collect_env's "PyTorch version: 2.3.1", a wheel's file
    name; a CUDA tag, cu124, for --cuda) and a remark
    in parentheses after it ("2.0.4 (ROCm)"); a CUDA tag there is torch's wheel label ("1.12 (cu116)" is 1.12+cu116,
    no remark). Text that does not read as a version that way is returned as given, with no remark."""
    tag = _CUDA_TAG.fullmatch(text) if name == "cuda" else None
    if tag:  # a wheel index's CUDA tag: cu124 is CUDA 12.4
        return f"{int(text[2:-1])}.{text[-1]}", ""
    found = _WHEEL.match(text) or _NAMED.match(text) or _INSTALLED.match(text)
    words = {_package_word(w) for w in (name, PIP_NAMES.get(name, ""), PACKAGE_LABELS.get(name, "")) if w}
    candidate = found.group("rest") if found and _package_word(found.group("word")) in words else text
    remark = ""
    parts = _REMARK.match(candidate)
    if parts:
        remark = parts.group("remark").strip()
        candidate = parts.group("version")
        if _CUDA_TAG.fullmatch(remark):
            if name == "torch" and "+" not in candidate:
                candidate = f"{candidate}+{remark.lower()}"
            remark = ""
    try:
        Version(candidate)
    except InvalidVersion:
        return text, ""
    return candidate, remark


SOURCE_BUILD = re.compile(r"^(?:\S*@)?(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}$")
"""A package built from a commit, as people give it: main@43950dd, git+https://...@43950dd, or the hash alone."""


def cudnn_from_integer(text: str) -> str:
    """torch.backends.cudnn.version()'s integer as a version (cudnn_version.h's CUDNN_VERSION: 9.x is major * 10000 +
    minor * 100 + patch, 90100 is 9.1.0; 8.x and 7.x major * 1000 + minor * 100 + patch, 8902 is 8.9.2); else as is."""
    if text.isdigit() and (len(text) == 5 and text[0] == "9" or len(text) == 4 and text[0] in "78"):
        number = int(text)
        major, rest = divmod(number, 10000 if len(text) == 5 else 1000)
        return f"{major}.{rest // 100}.{rest % 100}"
    return text


TORCH_CUDA_LABEL = re.compile(r"\+cu(\d{2,3})\b")
"""The CUDA a torch wheel is built with, from its local label: 2.9.0+cu128 is CUDA 12.8, 2.11.0+cu130 CUDA 13.0."""
