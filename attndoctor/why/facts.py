"""Facts in what surrounds an error: package lists, environment reports, nvidia-smi, wheel names, paths, and the
shared-memory figures inside messages. Each fact keeps the line it came from.

Formats, as the tools print them:
- `pip freeze` / `pip list --format=freeze`: `name==version`; `pip list`: `name   version` columns under a
  `Package  Version` header, or a header-less row whose version carries a CUDA label (`pip list | grep torch`:
  `torch   2.3.0+cu121`); conda: `name  version  build  channel`.
- `python -m torch.utils.collect_env` (torch/utils/collect_env.py, torch 2.13.0 wheel): `PyTorch version: ...`,
  `CUDA used to build PyTorch: ...`, `Python version: 3.11.9 (main, ...) [GCC ...] (64-bit runtime)`,
  `GPU models and configuration: GPU 0: ...` (one GPU per line when there are several), `Nvidia driver version:
  ...`, `cuDNN version: ...` or `Probably one of the following:` and libcudnn paths, and the package lists
  prefixed `[pip3] ` and `[conda] `. vLLM's collect_env (vllm/collect_env.py) adds `vLLM Version: ...`.
- `transformers env` (transformers/commands/env.py, 4.46.3): `- `transformers` version: ...`, `- Python version:
  ...`, `- PyTorch version (GPU?): 2.5.1+cu124 (True)`, `- GPU type: ...`.
- nvidia-smi: the banner `| NVIDIA-SMI 550.54.15   Driver Version: 550.54.15   CUDA Version: 12.4 |` and a row per
  GPU `|   0  NVIDIA GeForce RTX 4090        Off |`; `nvidia-smi -L`: `GPU 0: NAME (UUID: GPU-...)`.
- Wheel names (PEP 427): `name-version-pythontag-abitag-platform.whl`; flash-attn's release wheels carry the
  build in the local label: `flash_attn-2.7.3+cu12torch2.5cxx11abiFALSE-cp311-cp311-linux_x86_64.whl`.
- Triton's `out of resource: shared memory, Required: 147456, Hardware limit: 101376`, and ptxas's `uses too
  much shared data (0x24000 bytes, 0xc000 max)`.
"""

from __future__ import annotations

import re
from typing import Iterable, NamedTuple, Sequence

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ..errors import UsageError

STRUCTURED = 1
"""Priority of a fact a tool printed under its own label (beats loose words in free text, priority 0 and below)."""
DERIVED = 0
"""Priority of a fact read off another one (the CUDA in torch's `+cu124`, the Python a wheel was built for)."""

PACKAGES = {
    "torch": "torch", "flash-attn": "flash_attn", "flash-attn-3": "flash_attn_3", "flash-attn-4": "flash_attn_4",
    "nvidia-cutlass-dsl": "cutlass_dsl",
    "transformer-engine": "te", "transformer-engine-torch": "te", "transformer-engine-cu12": "te",
    "transformer-engine-cu13": "te", "nvidia-cudnn-cu11": "cudnn", "nvidia-cudnn-cu12": "cudnn",
    "nvidia-cudnn-cu13": "cudnn", "nvidia-cudnn-frontend": "cudnn_frontend", "triton": "triton",
    "pytorch-triton": "triton", "transformers": "transformers", "vllm": "vllm", "xformers": "xformers",
}
"""Distribution names (PEP 503 normalised) -> fact names; the engine's names where it has one."""

EXTRA_FACTS = ("python", "triton", "transformers", "vllm", "xformers", "smem_required", "smem_limit", "build_torch",
               "build_cuda", "build_abi", "driver_cuda")
"""Facts the engine does not read: shown with the others, carried in the JSON, never judged."""

MAX_INVALID_UTF8 = 8
"""A text with more undecodable bytes than this is not a log."""

_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_VERSION = r"v?\d+(?:\.\d+)*(?:(?:a|b|rc|\.post|\.dev)\d+)*(?:\+[A-Za-z0-9.]+)?"
_PIP_FREEZE = re.compile(rf"^\s*(?:\[(?:pip3?|conda)\]\s+)?(?P<name>{_NAME})\s*==\s*(?P<version>{_VERSION})\s*$")
_PIP_PAIR = re.compile(rf"^\s*(?P<name>{_NAME})\s{{2,}}(?P<version>{_VERSION}\+cu\d+[A-Za-z0-9.]*)\s*$")
"""A `pip list` row without its header (`pip list | grep torch`) whose version carries a CUDA label: its columns are
spaced by at least two blanks, and only that label is news (the plain version is read anyway)."""
_PIP_COLUMNS = re.compile(rf"^\s*(?:\[(?:pip3?|conda)\]\s+)?(?P<name>{_NAME})\s+(?P<version>{_VERSION})(?:\s+\S+)*\s*$")
_LABELLED = [
    (re.compile(r"^\s*PyTorch version:\s*(?P<v>\S+)"), "torch"),
    (re.compile(r"^\s*-\s*PyTorch version[^:]*:\s*(?P<v>\S+)"), "torch"),
    (re.compile(r"^\s*CUDA used to build PyTorch:\s*(?P<v>\d+\.\d+)"), "cuda"),
    (re.compile(r"^\s*Nvidia driver version:\s*(?P<v>\d+(?:\.\d+)+)", re.I), "driver"),
    (re.compile(r"^\s*cuDNN version:\s*(?P<v>\d+\.\d+(?:\.\d+)?)\s*$", re.I), "cudnn"),
    (re.compile(r"^\s*-?\s*Python version:\s*(?P<v>\d+\.\d+(?:\.\d+)?)"), "python"),
    (re.compile(r"^\s*vLLM Version:\s*(?P<v>\d+\.\d+\S*?)(?=@|\s|$)"), "vllm"),
    (re.compile(r"^\s*-\s*`?transformers`? version:\s*(?P<v>\S+)"), "transformers"),
    # the CUDA samples' deviceQuery: "  CUDA Capability Major/Minor version number:    8.6"
    (re.compile(r"^\s*CUDA Capability Major/Minor version number:\s*(?P<v>\d{1,2}\.\d)\s*$"), "gpu"),
]
_GPU_LINE = re.compile(r"^\s*(?:GPU models and configuration:\s*)?GPU \d+:\s*(?P<name>[^()]+?)\s*(?:\(UUID:.*)?$")
_NVIDIA_NAMED = re.compile(r"(?:NVIDIA (?:GeForce |Quadro |Tesla |TITAN |Jetson )?|\b(?:GeForce|Quadro|Jetson|TITAN) )"
                           r"[A-Za-z0-9][\w-]*(?: [\w-]+){0,5}")
"""A device name as torch.cuda.get_device_name and vendors' messages print it inside a sentence ("Your NVIDIA GeForce
RTX 2080 Ti GPU has compute capability 7.5"): the longest run of its words the GPU catalogue knows is the name."""
_NAME_WORDS = ("NVIDIA ", "GeForce ", "Quadro ", "Jetson ", "TITAN ")
_GPU_LABELLED = re.compile(r"^\s*-\s*GPU type:\s*(?P<name>.+?)\s*$")
_PIP_INSTALLED = re.compile(r"(?P<name>[A-Za-z][\w.\-]*?)-(?P<version>\d\S*)")
"""One distribution of pip's "Successfully installed torch-2.5.1+cu124 flash_attn-2.7.4.post1"."""
_SMI_BANNER = re.compile(r"Driver Version:\s*(?P<driver>\d+(?:\.\d+)+)(?:\s+CUDA Version:\s*(?P<cuda>\d+\.\d+))?")
_SMI_ROW = re.compile(r"^\|\s+\d+\s+(?P<name>(?:NVIDIA|Tesla|Quadro)\b.*?)\s+(?:On|Off)\s+\|")
_LIBCUDNN = re.compile(r"libcudnn\.so\.(?P<v>\d+\.\d+\.\d+)\b")
_WHEEL = re.compile(r"(?P<dist>[A-Za-z0-9_.]+?)-(?P<version>\d[^-\s/]*)-(?P<py>(?:cp|py)\d+)-[A-Za-z0-9_.]+-"
                    r"[A-Za-z0-9_.]+\.whl\b")
_PYTHON_PATH = re.compile(r"/python(?P<v>3\.\d+)/(?:site|dist)-packages\b")
_CPYTHON_SO = re.compile(r"\.cpython-(?P<v>3\d+)-[A-Za-z0-9_]+-linux-gnu\.so\b")
_SMEM_TRITON = re.compile(r"Required:\s*(?P<required>\d+),\s*Hardware limit:\s*(?P<limit>\d+)")
_SMEM_PTXAS = re.compile(r"uses too much shared data \((?P<required>0x[0-9a-fA-F]+) bytes, "
                         r"(?P<limit>0x[0-9a-fA-F]+) max\)")
_TRIGGERS = ("==", "[pip", "[conda]", "ersion", "GPU ", "\n|", "libcudnn.so.", ".whl", "/python3.", ".cpython-3",
             "Hardware limit", "shared data", "get_device_", "Package", "+cu", "Successfully installed ", *_NAME_WORDS)
"""Words some form cannot match without; `\n|` is a line that starts with `|` (an nvidia-smi row)."""
_CAPABILITY_CALL = re.compile(r"get_device_capability\(")
_CAPABILITY_TUPLE = re.compile(r"^\s*(?:\S.*?[=:]\s*)?\((?P<major>\d{1,2}),\s*(?P<minor>\d)\)\s*$")
_DEVICE_NAME_CALL = re.compile(r"get_device_name\(")
_QUOTED = re.compile(r"""^\s*(?:\S.*?[=:]\s*)?['"](?P<name>[^'"]+)['"]\s*$""")
_LOCAL_CUDA = re.compile(r"^cu(?P<digits>\d{2,3})")
_BUILD = re.compile(r"^cu(?P<cuda>\d+)torch(?P<torch>\d+\.\d+)cxx11abi(?P<abi>true|false)$", re.I)


class TextFact(NamedTuple):
    """One fact, the 1-based line it came from, the form that gave it, and how much it counts."""

    field: str
    value: object
    line: int
    form: str
    priority: int


def check_text(data: bytes | str, where: str) -> str:
    """The text of a log, or UsageError with one line when it is a binary file rather than text."""
    if isinstance(data, bytes):
        if b"\x00" in data[:1 << 20]:
            raise UsageError(f"{where}: not a text (NUL bytes); give the log or the error message")
        text = data.decode("utf-8", errors="replace")
        if text.count("\ufffd") - data.decode("utf-8", errors="ignore").count("\ufffd") > MAX_INVALID_UTF8:
            raise UsageError(f"{where}: not a text (not UTF-8); give the log or the error message")
    else:
        text = data
        if "\x00" in text[:1 << 20]:
            raise UsageError(f"{where}: not a text (NUL bytes); give the log or the error message")
    sample = text[:1 << 16]
    if sample:
        odd = sum(1 for ch in sample if not (ch.isprintable() or ch in "\n\r\t\f\v\x1b"))
        if odd * 2 > len(sample):
            raise UsageError(f"{where}: not a text (mostly unprintable); give the log or the error message")
    return text


def read_facts(lines: Sequence[str]) -> list[TextFact]:
    """Every fact the package lists, environment reports, nvidia-smi output, wheel names and paths in `lines` give;
    a fact repeated with the same value is kept once, at its first line."""
    out: list[TextFact] = []
    seen: set[tuple[str, str, int]] = set()
    for number, in_pip_list, after_call in _candidates(lines):
        for fact in _line_facts(lines[number - 1], number, lines, in_pip_list, after_call):
            key = (fact.field, repr(fact.value), fact.priority)
            if key not in seen:
                seen.add(key)
                out.append(fact)
    return out


def _candidates(lines: Sequence[str]) -> list[tuple[int, bool, bool]]:
    """(line number, inside a `pip list` table, within two lines of a get_device_* call) for each line holding a
    word some form needs: one scan of the whole text instead of every form on every line of a long log."""
    from bisect import bisect_right

    joined = "\n".join(lines)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    wanted: dict[int, tuple[bool, bool]] = {}
    for literal in _TRIGGERS:
        at = joined.find(literal)
        while at >= 0:
            index = bisect_right(starts, at + (literal[0] == "\n")) - 1
            if literal == "Package":
                _pip_table(lines, index, wanted)
            elif literal == "get_device_":
                for row in range(index, min(index + 3, len(lines))):
                    wanted[row] = (wanted.get(row, (False, False))[0], True)
            else:
                wanted.setdefault(index, (False, False))
            at = joined.find(literal, starts[index + 1]) if index + 1 < len(starts) else -1
    if lines and lines[0].startswith("|"):
        wanted.setdefault(0, (False, False))
    return [(i + 1, *wanted[i]) for i in sorted(wanted)]


def _pip_table(lines: Sequence[str], index: int, wanted: dict[int, tuple[bool, bool]]) -> None:
    """Mark the rows of a `pip list` table whose `Package  Version` header is at `index`."""
    if not re.match(r"^\s*Package\s+Version\b", lines[index]):
        return
    row = index + 1
    while row < len(lines) and lines[row].strip():
        if not re.fullmatch(r"\s*-+\s+-+(?:\s+-+)*\s*", lines[row]):
            wanted[row] = (True, wanted.get(row, (False, False))[1])
        row += 1


def _line_facts(line: str, number: int, lines: Sequence[str], in_pip_list: bool,
                after_call: bool) -> Iterable[TextFact]:
    """The facts of one line; each form is tried only on a line holding a word it cannot match without."""
    listed = _listed(line, in_pip_list)
    if listed is not None:
        for name, version in listed:
            yield from _package(name, version, number, "package-list")
        return
    if "ersion" in line:
        for pattern, field in _LABELLED:
            found = pattern.match(line)
            if found:
                if field == "torch":
                    yield from _package("torch", found.group("v"), number, "environment-report")
                elif field == "python":
                    yield TextFact("python", _minor(found.group("v")), number, "environment-report", STRUCTURED)
                else:
                    yield TextFact(field, found.group("v"), number, "environment-report", STRUCTURED)
                return
    if "GPU " in line:
        gpu = _GPU_LINE.match(line) or _GPU_LABELLED.match(line)
        if gpu and not gpu.group("name").endswith("..."):
            yield TextFact("gpu", gpu.group("name"), number, "environment-report", STRUCTURED)
            return
    if any(word in line for word in _NAME_WORDS):
        name = _device_name(line)
        if name:
            yield TextFact("gpu", name, number, "device-name", STRUCTURED)
            return
    if "Driver Version" in line:
        banner = _SMI_BANNER.search(line)
        if banner:
            yield TextFact("driver", banner.group("driver"), number, "nvidia-smi", STRUCTURED)
            if banner.group("cuda"):
                yield TextFact("driver_cuda", banner.group("cuda"), number, "nvidia-smi", STRUCTURED)
            return
    if line.startswith("|"):
        row = _SMI_ROW.match(line)
        if row and not row.group("name").endswith("..."):
            yield TextFact("gpu", row.group("name"), number, "nvidia-smi", STRUCTURED)
            return
    if "libcudnn.so." in line:
        cudnn = _LIBCUDNN.search(line)
        if cudnn:
            # collect_env lists every libcudnn it finds ("it's hard to tell which one is being used")
            yield TextFact("cudnn", cudnn.group("v"), number, "environment-report", DERIVED)
    if ".whl" in line and "not a supported wheel" not in line:  # pip refused that wheel: it is not what runs
        for wheel in _WHEEL.finditer(line):
            yield from _wheel(wheel, number)
    if "/python3." in line:
        for path in _PYTHON_PATH.finditer(line):
            yield TextFact("python", path.group("v"), number, "path", DERIVED)
    if ".cpython-3" in line:
        for so in _CPYTHON_SO.finditer(line):
            digits = so.group("v")
            yield TextFact("python", f"{digits[0]}.{digits[1:]}", number, "path", DERIVED)
    if "Hardware limit" in line or "shared data" in line:
        for pattern in (_SMEM_TRITON, _SMEM_PTXAS):
            smem = pattern.search(line)
            if smem:
                yield TextFact("smem_required", int(smem.group("required"), 0), number, "message", STRUCTURED)
                yield TextFact("smem_limit", int(smem.group("limit"), 0), number, "message", STRUCTURED)
    if after_call:
        before = _previous(lines, number)
        tuple_ = _CAPABILITY_TUPLE.match(line)
        if tuple_ and (_CAPABILITY_CALL.search(line) or (before and _CAPABILITY_CALL.search(before))):
            yield TextFact("gpu", f"{tuple_.group('major')}.{tuple_.group('minor')}", number, "python-print",
                           STRUCTURED)
        quoted = _QUOTED.match(line)
        if quoted and before and _DEVICE_NAME_CALL.search(before):
            yield TextFact("gpu", quoted.group("name"), number, "python-print", STRUCTURED)


def _listed(line: str, in_pip_list: bool) -> list[tuple[str, str]] | None:
    """(name, version) of the packages a package-list line names (pip freeze, pip list, pip's "Successfully
    installed ..."); None for a line of another kind."""
    if "==" in line or in_pip_list or line.lstrip().startswith(("[pip", "[conda]")):
        match = _PIP_FREEZE.match(line)
        if match is None and not ("==" in line and not in_pip_list and not line.lstrip().startswith("[")):
            match = _PIP_COLUMNS.match(line)
        if match:
            return [(match.group("name"), match.group("version"))]
    if "+cu" in line:
        match = _PIP_PAIR.match(line)
        if match:
            return [(match.group("name"), match.group("version"))]
    if "Successfully installed " in line:
        return [(m.group("name"), m.group("version")) for m in map(_PIP_INSTALLED.fullmatch,
                line.split("Successfully installed ", 1)[1].split()) if m]
    return None


def _previous(lines: Sequence[str], number: int) -> str | None:
    for index in range(number - 2, max(number - 4, -1), -1):
        if lines[index].strip():
            return lines[index]
    return None


def _package(name: str, raw: str, number: int, form: str) -> Iterable[TextFact]:
    """Facts of one installed distribution: its version (public part), and what its local label says of its build."""
    field = PACKAGES.get(canonicalize_name(name))
    if field is None:
        return
    try:
        version = Version(raw)
    except InvalidVersion:
        return
    value = version.public
    if field == "cudnn":
        value = ".".join(str(part) for part in version.release[:3])
    yield TextFact(field, value, number, form, STRUCTURED)
    local = version.local or ""
    if field == "torch":
        cuda = _LOCAL_CUDA.match(local)
        if cuda:
            yield TextFact("cuda", _cuda(cuda.group("digits")), number, form, DERIVED)
    else:
        yield from _build(local, number, form)


def _build(local: str, number: int, form: str) -> Iterable[TextFact]:
    """flash-attn's `+cu12torch2.5cxx11abiFALSE` (packaging lowers it and splits it at the dot)."""
    match = _BUILD.match(local)
    if match is None:
        return
    yield TextFact("build_cuda", _cuda(match.group("cuda")), number, form, STRUCTURED)
    yield TextFact("build_torch", match.group("torch"), number, form, STRUCTURED)
    yield TextFact("build_abi", match.group("abi").lower() == "true", number, form, STRUCTURED)


def _wheel(match: re.Match[str], number: int) -> Iterable[TextFact]:
    yield from _package(match.group("dist"), match.group("version"), number, "wheel-name")
    tag = match.group("py")
    if tag.startswith("cp") and len(tag) >= 4:
        yield TextFact("python", f"{tag[2]}.{tag[3:]}", number, "wheel-name", DERIVED)


def _device_name(line: str) -> str | None:
    """The first device name of a line that the GPU catalogue knows, whole."""
    for named in _NVIDIA_NAMED.finditer(line):
        if line.startswith(("...", "…"), named.end()):
            continue  # nvidia-smi before 530 cut long names: several GPUs fit what is left
        name = _catalogued_prefix(named.group(0))
        if name:
            return name
    return None


def _catalogued_prefix(text: str) -> str | None:
    """The longest leading run of words of `text` that names a GPU of the catalogue ("NVIDIA GeForce RTX 2080 Ti" of
    "NVIDIA GeForce RTX 2080 Ti GPU has"), or None."""
    from ..gpus import lookup_gpu

    words = text.split()
    for end in range(len(words), 1, -1):
        if lookup_gpu(" ".join(words[:end])) is not None:
            return " ".join(words[:end])
    return None


def _cuda(digits: str) -> str:
    """CUDA as a local label writes it: 124 -> 12.4, 118 -> 11.8, 12 -> 12."""
    return digits if len(digits) <= 2 else f"{digits[:-1]}.{digits[-1]}"


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def merge_facts(facts: dict, lines: Sequence[str], make: type, value_of, engine_fields: Iterable[str]) -> list[str]:
    """Add the facts of `lines` to a reading's `facts` (field -> `make(field, value, line, form, priority)`), the
    higher priority winning, then the first; engine fields go through `value_of` as catalogue facts do. Returns
    the values that could not be used, each with its line."""
    engine = set(engine_fields)
    ignored: list[str] = []
    found = read_facts(lines)
    banners = {f.line for f in found if f.field == "driver_cuda"}
    cuda = facts.get("cuda")
    if cuda is not None and cuda.line in banners and cuda.priority < STRUCTURED:
        # nvidia-smi's "CUDA Version" is the newest CUDA the driver runs, not the CUDA torch was built with
        del facts["cuda"]
    for fact in found:
        value = fact.value
        if fact.field in engine:
            value = value_of(fact.field, value)
            if value is None:
                ignored.append(f"line {fact.line}: {fact.field} {fact.value!r} (not understood)")
                continue
        old = facts.get(fact.field)
        if old is None or fact.priority > old.priority:
            facts[fact.field] = make(fact.field, value, fact.line, fact.form, fact.priority)
    return ignored
