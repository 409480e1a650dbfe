"""The GPU catalogue (data/gpus.toml): names, compute capabilities, per-architecture limits, datasheet figures,
and name matching."""

import difflib
import functools
import re
from pathlib import Path
from typing import Iterable, NamedTuple

from ._toml import load_toml_file, loads_toml
from .errors import UsageError

_NUMBERS = ("memory_gib", "bf16_tflops", "fp16_tflops", "fp8_tflops", "bandwidth_gbs")
_ENTRY_KEYS = frozenset(("name", "aliases", "sm", "source", *_NUMBERS))
_SM_KEYS = frozenset(("sm", "arch", "smem_per_block_optin_kib", "source"))
ARCHES = ("Kepler", "Maxwell", "Pascal", "Volta", "Turing", "Ampere", "Ada", "Hopper", "Blackwell")
_NOISE_WORDS = re.compile(r"\b(nvidia|geforce|tesla)\b")
# What may follow a known name in a longer one, such as an NVML name we do not list ("NVIDIA B300 SXM6 AC"):
# form factor, memory size and type, edition words. Anything else ("L40" after "L4", "Laptop GPU") is no match.
_SUFFIX_OK = re.compile(r"^(?:sxm\d*|pcie|nvl\d*|hbm\d*e?|\d+gb?|gb|edition|workstation|ws|server|maxq|generation|"
                        r"ac|oem|d)+$")
_SM_TEXT = r"(?:sm|compute)[_\- ]?(\d{2,3})[af]?"
_SM_FORM = re.compile(rf"^{_SM_TEXT}$")
_CC_FORM = re.compile(r"^(\d{1,2})\.(\d)$")
_MEMORY = re.compile(r"(\d+)gb?")
_COUNT = re.compile(r"^\s*\d+\s*[x×*]\s*(?=\S)|(?<=\S)(?:\s+[x×]|\s*\*)\s*\d+\s*$|(?<=\d)[x×]\d{1,2}\b", re.I)
"""How many of the GPU a machine has, written before or after its name ("8x NVIDIA H100 80GB HBM3", "A100x8")."""
_SYSTEM = re.compile(r"^\s*(?:nvidia\s+)?[dh]gx[\s-]+(?=g?[a-z]\d)", re.I)
"""An NVIDIA system named by the GPU it holds ("DGX H100", "HGX B200"); not DGX Spark or Station, named otherwise."""
_MEMORY_FIRST = re.compile(r"^\s*(?P<size>\d+)\s*(?:gib|gb?)\s+(?P<name>[a-z].*)$", re.I)
"""Memory written before the name ("32G V100", "80GB A100"): the name with the size after it."""
_VGPU = re.compile(r"^\s*(?:nvidia\s+)?(?:grid\s+)?(?P<board>.+?)[-\s]\d{1,3}[abcq]\s*$", re.I)
"""A virtual GPU as nvidia-smi shows it inside a VM: the board and a profile of its memory and series ("NVIDIA
L40S-48Q", "GRID A100-40C"; docs.nvidia.com/vgpu, Virtual GPU Types: <board>-<GB><A|B|C|Q>)."""
_OTHER_VENDOR = re.compile(r"\b(?:amd|radeon|instinct|mi\d{2,3}[a-z]?|gfx\d{3,4}[a-z]?|rx ?\d{3,4}\w*|w[5-9]\d{3}|rocm|"
                           r"intel|arc [ab]\d{3}|"
                           r"gaudi\d?|apple|mps|m[1-5] (?:pro|max|ultra)|ascend|huawei|npu|tpu(?: ?v\d\w*)?|"
                           r"xpu)\b", re.I)
"""Names of accelerators of other vendors (AMD Instinct, Radeon RX and Radeon Pro W, Intel Arc and Gaudi, Apple M
chips, Huawei Ascend NPUs, Google TPUs): told apart from an unknown NVIDIA name, whose nearest known names help."""
_CAPABILITY = re.compile(r"^(?:(?:cuda |compute )?capability|compute|cc)?\s*[:=]?\s*\(?\s*(\d{1,2})\s*[.,]\s*(\d)\s*\)?$", re.I)
"""A compute capability as nvidia-smi (compute_cap 8.6), torch.cuda.get_device_capability() ((8, 6)) and people
("compute capability 7.5", "CC 8.9", "compute 12.0") write it."""
_WORD = re.compile(r"[a-z]+|\d+")
_SM_WORD = re.compile(rf"\b{_SM_TEXT}\b", re.I)
EXAMPLE_NAMES = ("H100", "A100", "L40S", "RTX4090", "B200")


class GpuSpec(NamedTuple):
    """One GPU product as its datasheet describes it; TFLOPS are dense tensor-core peaks (0 = no support, None =
    not known)."""

    name: str
    sm: int
    memory_gib: float | None
    bf16_tflops: float | None
    fp16_tflops: float | None
    fp8_tflops: float | None
    bandwidth_gbs: float | None
    source: str
    aliases: tuple[str, ...] = ()
    arch: str = ""
    smem_per_block_optin_kib: int | None = None

    @property
    def compute_capability(self) -> str:
        """The compute capability as CUDA writes it: 9.0, 10.0, 12.0."""
        return f"{self.sm // 10}.{self.sm % 10}"

    def tflops(self, dtype: str) -> float | None:
        """Dense tensor-core peak for bf16, fp16 or fp8 (0.0 where the GPU has none, or for fp32; None where the
        catalogue does not know it)."""
        value = {"bf16": self.bf16_tflops, "fp16": self.fp16_tflops, "fp8": self.fp8_tflops}.get(dtype, 0.0)
        return None if value is None else float(value)


class SmSpec(NamedTuple):
    """What one compute capability allows a kernel: its architecture and the shared memory a block may opt in to."""

    sm: int
    arch: str
    smem_per_block_optin_kib: int
    source: str


def normalize_gpu_name(text: str) -> str:
    """The matching key of a name: lower case, without NVIDIA/GeForce/Tesla, spaces, dashes or underscores."""
    lowered = _NOISE_WORDS.sub(" ", str(text).lower())
    return re.sub(r"[^a-z0-9]", "", lowered)


CATALOGUE = Path(__file__).resolve().parent / "data" / "gpus.toml"


def _check_table(entry: object, allowed: frozenset[str], label: str) -> None:
    """A catalogue table is a table of known keys; ValueError naming it otherwise."""
    if not isinstance(entry, dict):
        raise ValueError(f"{label}: expected a table")
    extra = sorted(set(entry) - allowed)
    if extra:
        raise ValueError(f"{label}: unknown key {extra[0]!r}")


def _checked_sm(entry: dict, label: str) -> int:
    """The table's compute capability (90 for 9.0); ValueError naming the table otherwise."""
    sm = entry.get("sm")
    if isinstance(sm, bool) or not isinstance(sm, int) or not 10 <= sm <= 200:
        raise ValueError(f"{label}: sm: expected a compute capability such as 90, got {sm!r}")
    return sm


def parse_sm_tables(entries: object, *, where: str = "gpus.toml") -> dict[int, SmSpec]:
    """The [[sm]] tables by compute capability; raises ValueError naming the table on a malformed one."""
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{where}: expected [[sm]] tables")
    out: dict[int, SmSpec] = {}
    for i, entry in enumerate(entries):
        label = f"{where}: sm[{i}]"
        _check_table(entry, _SM_KEYS, label)
        sm = _checked_sm(entry, label)
        if sm in out:
            raise ValueError(f"{label}: sm {sm} is given twice")
        arch = entry.get("arch")
        if arch not in ARCHES:
            raise ValueError(f"{label}: arch: expected one of {', '.join(ARCHES)}, got {arch!r}")
        kib = entry.get("smem_per_block_optin_kib")
        if isinstance(kib, bool) or not isinstance(kib, int) or kib <= 0:
            raise ValueError(f"{label}: smem_per_block_optin_kib: expected a size in KiB, got {kib!r}")
        source = entry.get("source")
        if not isinstance(source, str) or not source.startswith("https://"):
            raise ValueError(f"{label}: source: expected the https address the figure was read from")
        out[sm] = SmSpec(sm=sm, arch=arch, smem_per_block_optin_kib=kib, source=source)
    return out


def parse_catalogue(text: str, *, where: str = "gpus.toml", data: dict | None = None) -> tuple[GpuSpec, ...]:
    """Parse and check a GPU catalogue; raises ValueError naming the entry on a malformed one."""
    data = loads_toml(text) if data is None else data
    entries = data.get("gpu")
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{where}: expected [[gpu]] tables")
    sms = parse_sm_tables(data["sm"], where=where) if "sm" in data else {}
    specs: list[GpuSpec] = []
    owner: dict[str, str] = {}
    for i, entry in enumerate(entries):
        label = f"{where}: gpu[{i}]"
        _check_table(entry, _ENTRY_KEYS, label)
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"{label}: name: expected text")
        label = f"{where}: {name}"
        sm = _checked_sm(entry, label)
        if sms and sm not in sms:
            raise ValueError(f"{label}: sm: {sm} has no [[sm]] table")
        numbers: dict[str, float | None] = {}
        for key in _NUMBERS:
            value = entry.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
                raise ValueError(f"{label}: {key}: expected a number >= 0, got {value!r}")
            numbers[key] = value
        for key in ("memory_gib", "bandwidth_gbs"):
            if numbers[key] == 0:
                raise ValueError(f"{label}: {key}: leave it out when it is not known, never 0")
        source = entry.get("source")
        if not isinstance(source, str) or not source.startswith("https://"):
            raise ValueError(f"{label}: source: expected the https address of the vendor datasheet")
        aliases = entry.get("aliases", [])
        if not isinstance(aliases, list) or not all(isinstance(a, str) and a.strip() for a in aliases):
            raise ValueError(f"{label}: aliases: expected a list of names")
        for alias in [name, *aliases]:
            key = normalize_gpu_name(alias)
            if not key:
                raise ValueError(f"{label}: alias {alias!r} has no letters or digits")
            if owner.get(key, name) != name:
                raise ValueError(f"{label}: alias {alias!r} is also a name of {owner[key]}")
            owner[key] = name
        limits = sms.get(sm)
        specs.append(GpuSpec(name=name, sm=sm, source=source, aliases=tuple(aliases),
                             arch=limits.arch if limits else "",
                             smem_per_block_optin_kib=limits.smem_per_block_optin_kib if limits else None,
                             **numbers))
    return tuple(specs)


@functools.lru_cache(maxsize=1)
def gpu_catalogue() -> tuple[GpuSpec, ...]:
    """Every GPU in the bundled catalogue, in file order (read once)."""
    text, data = load_toml_file(CATALOGUE)
    return parse_catalogue(text, data=data)


@functools.lru_cache(maxsize=1)
def sm_table() -> dict[int, SmSpec]:
    """The bundled [[sm]] tables by compute capability (read once)."""
    _, data = load_toml_file(CATALOGUE)
    return parse_sm_tables(data.get("sm"))


def sm_spec(sm: int | None) -> SmSpec | None:
    """Architecture and shared-memory limit of a compute capability; None for one the catalogue does not list."""
    return sm_table().get(sm) if isinstance(sm, int) else None


_INSTANCE_KEYS = frozenset(("pattern", "gpu", "source"))
_CLOUD_PREFIX = re.compile(r"^(?:(?:aws|ec2|amazon|azure)\s+)*(?:standard_)?", re.I)


def parse_instances(entries: object, names: set[str], *,
                    where: str = "gpus.toml") -> tuple[tuple[re.Pattern, str], ...]:
    """The [[instance]] tables as (compiled pattern, GPU name); raises ValueError naming a malformed one."""
    if entries is None:
        return ()
    if not isinstance(entries, list):
        raise ValueError(f"{where}: expected [[instance]] tables")
    out = []
    for i, entry in enumerate(entries):
        label = f"{where}: instance[{i}]"
        _check_table(entry, _INSTANCE_KEYS, label)
        if entry.get("gpu") not in names:
            raise ValueError(f"{label}: gpu: {entry.get('gpu')!r} is not a [[gpu]] name")
        if not str(entry.get("source", "")).startswith("https://"):
            raise ValueError(f"{label}: source: expected the https address of the table that names the GPU")
        try:
            out.append((re.compile(str(entry.get("pattern")), re.I), entry["gpu"]))
        except re.error as exc:
            raise ValueError(f"{label}: pattern: {exc}") from None
    return tuple(out)


@functools.lru_cache(maxsize=1)
def _instances() -> tuple[tuple[re.Pattern, GpuSpec], ...]:
    """The bundled [[instance]] tables with their GPUs (read once)."""
    _, data = load_toml_file(CATALOGUE)
    by_name = {spec.name: spec for spec in gpu_catalogue()}
    return tuple((pattern, by_name[name]) for pattern, name in parse_instances(data.get("instance"), set(by_name)))


def instance_gpu(text: str) -> GpuSpec | None:
    """The GPU of a cloud instance type ("ec2 g6.4xlarge" → L4), or None for a type the tables do not list."""
    key = _CLOUD_PREFIX.sub("", str(text).strip().lower()).strip()
    return next((spec for pattern, spec in _instances() if pattern.fullmatch(key)), None)


@functools.lru_cache(maxsize=1)
def _index() -> tuple[dict[str, GpuSpec], tuple[tuple[str, GpuSpec], ...]]:
    exact: dict[str, GpuSpec] = {}
    for spec in gpu_catalogue():
        for alias in (spec.name, *spec.aliases):
            exact[normalize_gpu_name(alias)] = spec
    by_length = tuple(sorted(exact.items(), key=lambda kv: -len(kv[0])))
    return exact, by_length


def _word_key(text: str, *, drop: tuple[str, ...] = ()) -> str:
    """A name's words in sorted order, so that "RTX Quadro 8000" meets "Quadro RTX 8000"."""
    lowered = _NOISE_WORDS.sub(" ", str(text).lower())
    return " ".join(sorted(w for w in _WORD.findall(lowered) if w not in drop))


@functools.lru_cache(maxsize=1)
def _loose_index() -> dict[str, GpuSpec | None]:
    """Names by their sorted words, and by their words without "Quadro" (people write "P4000"); a key two GPUs
    share maps to None: never a guess between them."""
    out: dict[str, GpuSpec | None] = {}
    for spec in gpu_catalogue():
        keys = {k for alias in (spec.name, *spec.aliases)
                for k in (_word_key(alias), _word_key(alias, drop=("quadro",)))}
        for key in keys:
            out[key] = spec if out.get(key, spec) is spec else None
    return out


def lookup_gpu(text: str | None) -> GpuSpec | None:
    """The catalogue entry for a GPU name, alias or NVML name ("H100" is the H100 SXM); None if unknown.

    A name not listed still matches when a known name starts it and only form factor, memory or edition words
    follow ("NVIDIA H100 SXM5 80GB"); never when the model number goes on ("L40" is not "L4").
    """
    if not text or not isinstance(text, str):
        return None
    text = _SYSTEM.sub("", _COUNT.sub("", text))
    first = _MEMORY_FIRST.match(text)
    text = f"{first['name']} {first['size']}GB" if first else text
    key = normalize_gpu_name(text)
    if not key:
        return None
    exact, by_length = _index()
    if key in exact:
        return exact[key]
    for alias, spec in by_length:
        if key.startswith(alias):
            rest = key[len(alias):]
            if _SUFFIX_OK.match(rest):
                return _by_memory(alias, rest, spec)
    found = _loose_index().get(_word_key(text))
    board = _VGPU.match(text) if found is None else None
    return lookup_gpu(board.group("board")) if board else found


def _by_memory(alias: str, rest: str, spec: GpuSpec) -> GpuSpec:
    """The entry a memory size after a family name points at ("A100 40G" is the A100 40GB), else `spec`."""
    sizes = {int(n) for n in _MEMORY.findall(rest)}
    if not sizes or spec.memory_gib is None or int(spec.memory_gib) in sizes:
        return spec
    for other in gpu_catalogue():
        if other.memory_gib is not None and int(other.memory_gib) in sizes and other.sm == spec.sm and \
                normalize_gpu_name(other.name).startswith(alias):
            return other
    return spec


def nearest_gpu_names(text: str, limit: int = 3) -> list[str]:
    """The canonical names of the catalogue entries whose names or aliases are closest to a name it does not know."""
    key = normalize_gpu_name(text)
    if not key:
        return []
    exact, by_length = _index()
    out: list[str] = []
    prefixes = [alias for alias, _ in by_length if len(alias) >= 2 and key.startswith(alias)]
    for match in prefixes + difflib.get_close_matches(key, list(exact), n=limit * 4, cutoff=0.6):
        name = exact[match].name
        if name not in out:
            out.append(name)
    return out[:limit]


def gpu_names() -> list[str]:
    """The canonical names, in catalogue order."""
    return [spec.name for spec in gpu_catalogue()]


def parse_sm(text: str) -> int | None:
    """The compute capability in `sm90`, `sm_90`, `sm100a`, `compute_90`, `9.0`, `(9, 0)` or "compute capability 9.0"
    form, as 90; None otherwise."""
    t = str(text).strip().lower()
    t = t[1:-1].strip() if t.startswith("(") and t.endswith(")") and t.count("(") == 1 else t
    t = re.sub(r"^(?:cuda |compute )?capability\s*[:=]?\s*(?=sm)|^sm\s+(?=\d{1,2}\.\d$)", "", t)
    match = _SM_FORM.match(t)
    if match:
        sm = int(match.group(1))
    else:
        match = _CC_FORM.match(t) or _CAPABILITY.match(t)
        if not match:
            return None
        sm = int(match.group(1)) * 10 + int(match.group(2))
    return sm if 30 <= sm <= 200 else None


_OLDER = re.compile(r"^(?:(?:nvidia\s+)?gpus?\s+)?(?:(?:with\s+)?(?:(?:cuda\s+)?compute\s+capability|cc|sm)\s*"
                    r"(?:below|under|less\s+than|lower\s+than|older\s+than|<)\s*(?P<cc>\d{1,2}(?:\.\d)?)|"
                    r"(?:pre-?|older\s+than\s+|before\s+)(?P<arch>[a-z]+))(?:\s+(?:gpus?|cards?))?$", re.I)
"""GPUs named by what they are older than: "compute capability below 8.0", "CC < 7.5", "pre-Ampere"."""


def arch_family(text: str) -> tuple[int, ...]:
    """The compute capabilities of an architecture's name ('Hopper' -> (90,), 'Blackwell' -> (100, 101, ...)), or of
    the GPUs older than a capability or an architecture ('compute capability below 8.0' -> (30, ..., 75))."""
    older = _OLDER.match(_REMARK.sub(" ", str(text)).strip())
    if older:
        if older["cc"]:
            cc = older["cc"]
            bound = parse_sm(cc if "." in cc else f"{cc}.0" if int(cc) < 20 else f"sm{cc}") or 0
        else:
            newer = arch_family(older["arch"])
            bound = newer[0] if newer else 0
        return tuple(sorted(sm for sm in sm_table() if sm < bound))
    name = normalize_gpu_name(text).removeprefix("nvidia").removesuffix("lovelace").removesuffix("gpu")
    return tuple(sorted(sm for sm, spec in sm_table().items() if normalize_gpu_name(spec.arch) == name))


def _sm_beside_arch(text: str) -> int | None:
    """The compute capability in "Blackwell SM120", "NVIDIA sm_86 GPU" or "SM107 (Rubin)": an sm word beside no
    architecture name the catalogue knows but its own; "Hopper SM120" contradicts itself and stays unknown."""
    found = _SM_WORD.findall(text)
    if len(found) != 1:
        return None
    sm = int(found[0])
    rest = re.sub(r"\b(?:nvidia|gpu)\b", " ", _SM_WORD.sub(" ", text), flags=re.I).strip(" ()[],-")
    family = arch_family(rest) if rest else ()
    named = lookup_gpu(rest) if rest and not family else None
    if not 30 <= sm <= 200 or family and sm not in family or named is not None and named.sm != sm:
        return None
    return sm


def other_vendor(text: str) -> bool:
    """A GPU of another vendor (AMD, Intel, Apple...): no rule covers it, whatever its name."""
    return bool(_OTHER_VENDOR.search(str(text or ""))) and lookup_gpu(text) is None


def several_gpus(text: str | None) -> str:
    """Why a `--gpu` value names no one GPU ("GPU 'RTX 3090 / RTX 5090' names several GPUs (RTX 3090, RTX 5090)");
    '' for one GPU, no value, or a value wrong in another way."""
    try:
        resolve_gpu(str(text)) if text else None
    except SeveralGpus as exc:
        return str(exc).partition("; give one")[0]
    except UsageError:
        pass
    return ""


_SERIES = re.compile(r"^(?:nvidia\s*)?(?:geforce\s*)?(?P<line>rtx|gtx)\s*(?P<gen>\d{2})"
                     r"(?:\s*(?:xx|[- ]?series|s)|00\s*[- ]?series)$", re.I)
"""A product line named by its series ("RTX 50XX", "RTX 40 series", "GTX 10xx", "RTX 4000 series")."""


def series_sm(text: str) -> tuple[str, int] | None:
    """(name, sm) for a GeForce series whose every catalogued model has one compute capability (all RTX 50 are
    sm120); None for another text or a series whose models differ."""
    found = _SERIES.match(str(text).strip())
    if not found:
        return None
    line, gen = found["line"].lower(), found["gen"]
    model = re.compile(rf"^{line}{gen}(?!00)\d{{2}}")  # x000 are workstation cards (RTX 5000 Ada), not GeForce
    sms = {spec.sm for spec in gpu_catalogue() if model.match(normalize_gpu_name(spec.name))}
    return (f"{line.upper()} {gen} series", sms.pop()) if len(sms) == 1 else None


def contained_in_one_arch(text: str) -> tuple[str, int] | None:
    """(name, sm) where a short form ("pro6000") is part of the names of catalogued GPUs that all share one compute
    capability: the shortest of those names. None where it is too short to be a model, or the GPUs differ."""
    key = normalize_gpu_name(text)
    if len(key) < 5 or not re.search(r"\d", key) or not re.search(r"[a-z]", key):
        return None
    return _one_arch(spec for spec in gpu_catalogue() if key in normalize_gpu_name(spec.name))


def words_in_one_arch(text: str) -> tuple[str, int] | None:
    """(name, sm) where the text names an architecture and every word of it is a word of catalogued names that all
    share one compute capability ("NVIDIA Blackwell 6000 Pro" is in the RTX PRO 6000 Blackwell names): the shortest
    of them. None without an architecture's name or a model number, or where the names differ ("RTX 6000
    Workstation" could be an Ada card as well)."""
    words = set(_WORD.findall(_NOISE_WORDS.sub(" ", str(text).lower())))
    if not words & {a.lower() for a in ARCHES} or not any(w.isdigit() and len(w) >= 3 for w in words):
        return None
    return _one_arch(spec for spec in gpu_catalogue()
                     if any(words <= set(_WORD.findall(alias.lower())) for alias in (spec.name, *spec.aliases)))


def _one_arch(holders: Iterable[GpuSpec]) -> tuple[str, int] | None:
    """(the shortest name, sm) of GPUs that share one compute capability; None for none, or for several."""
    found = sorted(holders, key=lambda spec: len(spec.name))
    return (found[0].name, found[0].sm) if found and len({h.sm for h in found}) == 1 else None


def _remark_sm(remark: str) -> int | None:
    """The capability a remark names, also when it names it twice ("(SM 10.3 / sm_103)"); None when its parts
    disagree or one is not a capability."""
    sm = parse_sm(remark) or _sm_beside_arch(remark)
    if sm is not None:
        return sm
    parts = {parse_sm(p) or _sm_beside_arch(p) for p in _SEVERAL.split(remark.strip("() ")) if p.strip()}
    return parts.pop() if len(parts) == 1 and None not in parts else None


_REMARK = re.compile(r"\([^()]*\)")
"""A remark beside the name: "T4 (AWS g4dn.xlarge)", "(cloud) L4"."""
_SEVERAL = re.compile(r"\s*/\s*|\s+(?:and|or|vs\.?|&)\s+|\s*[,;+]\s*", re.I)


class SeveralGpus(UsageError):
    """A `--gpu` value that names more than one GPU or compute capability ("RTX 3090 / RTX 5090")."""


def resolve_gpu(text: str) -> tuple[str, int]:
    """(name, sm) for a `--gpu` value: a catalogue name or alias, or a compute capability (`sm90` → ("sm90", 90)).

    Raises UsageError with one short line for anything else.
    """
    raw = str(text or "").strip()
    if raw:
        # nvidia-smi --query-gpu=name,compute_cap prints "NVIDIA H100 80GB HBM3, 9.0": the capability is a remark too
        named, _, tail = raw.rpartition(",")
        tail_sm = parse_sm(tail) if named.strip() else None
        spec = None if tail_sm else lookup_gpu(raw) or instance_gpu(raw)
        if spec is not None:
            return spec.name, spec.sm
        spec = lookup_gpu(_REMARK.sub(" ", named if tail_sm else raw).strip())
        remark = [sm for sm in map(_remark_sm, _REMARK.findall(raw)) if sm is not None]
        remark += [tail_sm] if tail_sm else []
        if len(set(remark)) > 1:
            raise SeveralGpus(f"GPU {raw[:60]!r} names several compute capabilities "
                             f"({', '.join(f'sm{sm}' for sm in dict.fromkeys(remark))}); give one")
        if spec is not None and remark and remark[0] != spec.sm:
            raise SeveralGpus(f"GPU {raw[:60]!r} names {spec.name} (sm{spec.sm}) and sm{remark[0]}; give one")
        if spec is not None:
            return spec.name, spec.sm
        if remark and not tail_sm:  # "Jetson Xavier (CC 7.2)": a capability in parentheses settles an unknown name
            return f"sm{remark[0]}", remark[0]
        several = [lookup_gpu(part) or lookup_gpu(f"{raw.split()[0]} {part}") for part in _SEVERAL.split(raw)]
        if len(several) > 1 and all(several):
            names = list(dict.fromkeys(s.name for s in several if s))
            if len({s.sm for s in several if s}) == 1:
                return " / ".join(names), several[0].sm
            raise SeveralGpus(f"GPU {raw[:60]!r} names several GPUs ({', '.join(names)}); give one (--gpu takes one GPU; "
                             "explain a fleet with --config-file or `attndoctor fleet`)")
        sm = parse_sm(raw) or _sm_beside_arch(raw)
        if sm is not None:
            return f"sm{sm}", sm
        short = series_sm(raw) or contained_in_one_arch(raw) or words_in_one_arch(raw)
        if short is not None:
            return short
        family = arch_family(raw)
        if family:
            if len(family) == 1:
                return f"sm{family[0]}", family[0]
            options = ", ".join(f"sm{sm}" for sm in family)
            raise SeveralGpus(f"GPU {raw!r} names an architecture of several compute capabilities ({options}); "
                             "give the GPU's name (e.g. B200, RTX 5090) or one of them")  # callers that can sweep ask arch_family first
    shown = raw if len(raw) <= 40 else raw[:37] + "..."
    if _OTHER_VENDOR.search(raw):
        raise UsageError(f"GPU {shown!r} is not an NVIDIA GPU; attndoctor's rules cover NVIDIA GPUs (CUDA) only")
    nearest = nearest_gpu_names(raw[:100]) if raw else []
    if nearest:
        raise UsageError(f"unknown GPU {shown!r}; nearest known: {', '.join(nearest)}; or an architecture such as "
                         "sm90 or 9.0")
    raise UsageError(
        f"unknown GPU {shown!r}; use a name such as {', '.join(EXAMPLE_NAMES)} or an architecture such as sm90 or 9.0"
    )


_ARCH = re.compile(r"^(sm|compute)_(\d+)([af]?)$")


def arch_supported(sm: int, arch_list: list[str] | None) -> bool | None:
    """Whether a torch built for `arch_list` (sm_90, compute_90, ...) has kernels that run on compute capability
    `sm`; None when the list is unknown or empty.

    Runs: a cubin for the same arch (sm_90, or sm_90a on 9.0 itself), a cubin of the same major arch and a lower
    minor (sm_80 runs on 8.6; sm_100f on 10.3), or PTX (compute_XY, no a/f suffix) of an arch <= sm, which the
    driver JITs.
    """
    if not arch_list:
        return None
    for item in arch_list:
        match = _ARCH.match(item.strip().lower())
        if not match:
            continue
        kind, num, suffix = match.group(1), int(match.group(2)), match.group(3)
        if num == sm:
            return True
        if suffix == "f" and num // 10 == sm // 10 and num < sm:
            return True  # family code (sm_100f) runs on the later members of its family (10.3)
        if suffix:
            continue  # arch-specific code (sm_90a) runs on that arch only
        if kind == "sm" and num // 10 == sm // 10 and num < sm:
            return True
        if kind == "compute" and num < sm:
            return True
    return False
