"""Broken installs read from the compiled extensions themselves, without importing them: the GPU architectures
their device code was built for, and whether their torch symbols resolve against the installed libtorch.

A wheel built for other GPUs fails at the first kernel launch ("no kernel image is available for execution on the
device"); one built against another torch fails at import ("undefined symbol: _ZN3c10..."). Both show in the
shared objects, so `check` and `why` can name the cause and the fix before anything runs. Never raises: a file that
cannot be read is a fact to report.
"""

from __future__ import annotations

import importlib.metadata as metadata
import importlib.util
import json
import os
import re
import shutil
import struct
import subprocess
from pathlib import Path
from typing import IO, Any, Iterable

from ..extensions import TARGETS, Target

TORCH_LIBS = ("libc10.so", "libc10_cuda.so", "libtorch_cpu.so", "libtorch_cuda.so", "libtorch.so",
              "libtorch_python.so")
"""The libraries of torch/lib/ whose exported symbols extensions link against."""

_TORCH_SYMBOL = re.compile(rb"^_Z(?:T[IVS])?N?K?(?:3c10|2at|5torch|6caffe2)(?=[0-9A-Z])")
"""Mangled names in the namespaces torch defines (c10::, at::, torch::, caffe2::), methods and typeinfo included."""

SHOWN_SYMBOLS = 3
"""Unresolved symbols named in a report entry; the count says how many there are."""

# --- the fatbinary container ------------------------------------------------------------------------------------
#
# Layout of .nv_fatbin (and __nv_relfatbin): one or more containers, each a 16-byte header
#   u32 magic 0xBA55ED50, u16 version (1), u16 header size (16), u64 size of what follows the header
# (NVIDIA's fatbinary.h, struct fatBinaryHeader, shipped with the CUDA 8-11 toolkits), then entries, each
#   u16 kind (1 = PTX, 2 = ELF cubin, i.e. SASS), u16 version, u32 entry header size, u32 padded payload size,
#   u32 -, u32 payload size, u32 -, u32 -, u32 arch (80 for sm_80), u32 -, u32 -, u64 flags
#   (0x1 64-bit, 0x2000 LZ4-compressed, 0x8000 zstd-compressed payload), ...
# with the next entry at entry + header size + padded payload size. Public descriptions of the entry layout:
# vosen/ZLUDA dark_api/src/fatbin.rs (FatbinFileHeader, commit 6f068f2737970cb2745748101b611eb3f3934723) and
# GrigoryEvko/nvopen-tools fatbin/FORMAT_SPECIFICATION.md (commit 3b50e20e542bdef410c00d1f75cbc169b70dd15f), both
# read off cuobjdump. Only the kind and the arch are used here; payloads are skipped, never decompressed.

FATBIN_MAGIC = 0xBA55ED50
FATBIN_SECTIONS = (".nv_fatbin", "__nv_relfatbin")
KIND_PTX = 1
KIND_SASS = (2, 4, 0x10)
"""Entry kinds of machine code: ELF cubin, the old cubin, and the ELF variant cuobjdump also counts."""
_HEADER = struct.Struct("<IHHQ")
_ENTRY = struct.Struct("<HHIIIIIII")  # kind, version, header size, padded size, -, payload size, -, -, arch
_SCAN = 1 << 16


def fatbin_archs(stream: IO[bytes], offset: int, size: int) -> tuple[set[int], set[int]]:
    """The SASS and PTX archs in the fatbinary containers between `offset` and `offset + size` of `stream`.

    Reads only the headers. Raises ValueError when the section holds no container or one is cut short.
    """
    sass: set[int] = set()
    ptx: set[int] = set()
    end = offset + size
    pos = offset
    containers = 0
    while pos + _HEADER.size <= end:
        stream.seek(pos)
        raw = stream.read(_HEADER.size)
        if len(raw) < _HEADER.size:
            raise ValueError(f"fatbinary cut short at byte {pos}")
        magic, _version, header_size, fat_size = _HEADER.unpack(raw)
        if magic != FATBIN_MAGIC:
            found = _next_magic(stream, pos, end)
            if found is None:
                break
            pos = found
            continue
        containers += 1
        body = pos + max(header_size, _HEADER.size)
        stop = body + fat_size
        if stop > end:
            raise ValueError(f"fatbinary container at byte {pos - offset} runs past the section's end")
        entry = body
        while entry + _ENTRY.size <= stop:
            stream.seek(entry)
            head = stream.read(_ENTRY.size)
            if len(head) < _ENTRY.size:
                raise ValueError(f"fatbinary entry cut short at byte {entry}")
            kind, _v, entry_size, padded, _u, _payload, _u2, _u3, arch = _ENTRY.unpack(head)
            if entry_size == 0:
                break
            if kind == KIND_PTX:
                ptx.add(arch)
            elif kind in KIND_SASS:
                sass.add(arch)
            entry += entry_size + padded
        pos = stop
    if containers == 0:
        raise ValueError("no fatbinary container (magic 0xBA55ED50) in the section")
    return sass, ptx


def _next_magic(stream: IO[bytes], pos: int, end: int) -> int | None:
    """The offset of the next container's magic after `pos` (containers are padded apart by a few bytes), or None;
    reads a small window first, a larger one only when the gap is long."""
    magic = struct.pack("<I", FATBIN_MAGIC)
    window = 256
    start = pos + 1
    while start < end:
        stream.seek(start)
        chunk = stream.read(min(window, end - start))
        at = chunk.find(magic)
        if at >= 0:
            return start + at
        if len(chunk) < 4:
            return None
        start += len(chunk) - 3
        window = min(window * 4, _SCAN)
    return None


# --- reading one shared object ----------------------------------------------------------------------------------


class DynamicSymbols:
    """A shared object's dynamic symbol table (.dynsym, .dynstr, .gnu.hash), located by pyelftools and read through
    a memory map: only the entries and names asked for are touched, so libtorch_cpu.so's 100,000-odd exports cost
    nothing until looked up."""

    _SYM = struct.Struct("<IBBHQQ")  # Elf64_Sym: st_name, st_info, st_other, st_shndx, st_value, st_size

    def __init__(self, path: str) -> None:
        import mmap  # noqa: PLC0415

        from elftools.elf.elffile import ELFFile  # noqa: PLC0415 - only `check` and `why` read ELF files

        self.handle = open(path, "rb")  # noqa: SIM115 - closed by close()
        try:
            self.elf = ELFFile(self.handle)
            self._map = mmap.mmap(self.handle.fileno(), 0, access=mmap.ACCESS_READ)
        except BaseException:
            self.handle.close()
            raise
        self._fast = self.elf.elfclass == 64 and self.elf.little_endian
        dynsym = self.elf.get_section_by_name(".dynsym")
        self._dynsym = dynsym
        self._sym_at = dynsym["sh_offset"] if dynsym is not None else 0
        self._sym_count = dynsym.num_symbols() if dynsym is not None else 0
        strtab = self.elf.get_section(dynsym["sh_link"]) if dynsym is not None else None
        self._str_at = strtab["sh_offset"] if strtab is not None else 0
        self._hash: tuple[int, int, int, int] | None = None
        self._slow_names: set[str] | None = None
        table = self.elf.get_section_by_name(".gnu.hash")
        if self._fast and table is not None and dynsym is not None:
            at = table["sh_offset"]
            nbuckets, symoffset, bloom_size, _shift = struct.unpack_from("<IIII", self._map, at)
            buckets = at + 16 + 8 * bloom_size
            self._hash = (nbuckets, symoffset, buckets, buckets + 4 * nbuckets)

    def close(self) -> None:
        try:
            self._map.close()
        finally:
            self.handle.close()

    def _name(self, st_name: int) -> bytes:
        start = self._str_at + st_name
        return self._map[start:self._map.find(b"\0", start)]

    def torch_undefined(self) -> list[str]:
        """Undefined, non-weak symbols in torch's namespaces (a weak one may stay unresolved)."""
        if self._dynsym is None:
            return []
        if not self._fast:
            return [s.name for s in self._dynsym.iter_symbols() if s["st_shndx"] == "SHN_UNDEF"
                    and s["st_info"]["bind"] == "STB_GLOBAL" and _TORCH_SYMBOL.match(s.name.encode())]
        out = []
        size = self._SYM.size
        table = self._map[self._sym_at:self._sym_at + self._sym_count * size]
        for st_name, st_info, _other, shndx, _value, _size in self._SYM.iter_unpack(table):
            if shndx != 0 or st_info >> 4 != 1:  # SHN_UNDEF, STB_GLOBAL
                continue
            at = self._str_at + st_name
            if self._map[at:at + 2] != b"_Z":
                continue
            name = self._name(st_name)
            if _TORCH_SYMBOL.match(name):
                out.append(name.decode("ascii", "replace"))
        return out

    def defines(self, name: str) -> bool:
        """Whether the file exports `name` (defined, global, weak or unique), found as the dynamic loader finds it:
        through the GNU hash table (https://flapenguin.me/elf-dt-gnu-hash)."""
        if self._hash is None:
            return self._defines_slow(name)
        nbuckets, symoffset, buckets, chains = self._hash
        raw = name.encode()
        h = 5381
        for byte in raw:
            h = (h * 33 + byte) & 0xFFFFFFFF
        index = struct.unpack_from("<I", self._map, buckets + 4 * (h % nbuckets))[0] if nbuckets else 0
        if index < symoffset or index == 0:
            return False
        while index < self._sym_count:
            chain = struct.unpack_from("<I", self._map, chains + 4 * (index - symoffset))[0]
            if chain | 1 == h | 1:
                st_name, st_info, _other, shndx, _value, _size = self._SYM.unpack_from(
                    self._map, self._sym_at + index * self._SYM.size)
                at = self._str_at + st_name
                if self._map[at:at + len(raw) + 1] == raw + b"\0":
                    return shndx != 0 and st_info >> 4 in (1, 2, 10)
            if chain & 1:
                return False
            index += 1
        return False

    def _defines_slow(self, name: str) -> bool:
        if self._slow_names is None:
            self._slow_names = set()
            if self._dynsym is not None:
                self._slow_names = {s.name for s in self._dynsym.iter_symbols() if s["st_shndx"] != "SHN_UNDEF"
                                    and s["st_info"]["bind"] in ("STB_GLOBAL", "STB_WEAK", "STB_GNU_UNIQUE")}
        return name in self._slow_names


class TorchExports:
    """The symbols the installed torch libraries export; each library is opened at its first lookup."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.paths = [p for p in paths if os.path.isfile(p)]
        self._tables: list[DynamicSymbols] | None = None
        self.errors: list[str] = []

    def _open(self) -> list[DynamicSymbols]:
        if self._tables is None:
            self._tables = []
            for path in self.paths:
                try:
                    self._tables.append(DynamicSymbols(path))
                except Exception as exc:  # noqa: BLE001 - a torch library that cannot be read: say so, go on
                    self.errors.append(f"{os.path.basename(path)}: {_why(exc)}")
        return self._tables

    def defines(self, name: str) -> bool:
        return any(table.defines(name) for table in self._open())

    def close(self) -> None:
        for table in self._tables or []:
            try:
                table.close()
            except (OSError, ValueError):
                pass
        self._tables = None


def read_binary(path: str, torch: TorchExports | None) -> dict[str, Any]:
    """The facts of one shared object: its device code's archs and whether its torch symbols resolve.

    `abi` is ok, unresolved, no-torch-symbols (it uses none of torch), unknown (no torch libraries to check against)
    or null (not checked: torch's own library). Never raises: an unreadable file has `error` set.
    """
    facts: dict[str, Any] = {"sass": [], "ptx": [], "device_code": False, "abi": None, "unresolved": [],
                             "unresolved_demangled": [], "unresolved_count": 0, "error": None}
    if importlib.util.find_spec("elftools") is None:
        facts["error"] = "pyelftools is not installed (pip install pyelftools)"
        return facts
    try:
        symbols = DynamicSymbols(path)
    except Exception as exc:  # noqa: BLE001 - not an ELF file, cut short, unreadable: pyelftools raises many kinds
        facts["error"] = _why(exc)
        return facts
    try:
        sass: set[int] = set()
        ptx: set[int] = set()
        for name in FATBIN_SECTIONS:
            section = symbols.elf.get_section_by_name(name)
            if section is None or section["sh_type"] == "SHT_NOBITS" or not section["sh_size"]:
                continue
            facts["device_code"] = True
            s, p = fatbin_archs(symbols.handle, section["sh_offset"], section["sh_size"])
            sass |= s
            ptx |= p
        facts["sass"], facts["ptx"] = sorted(sass), sorted(ptx)
        if torch is not None:
            needed = symbols.torch_undefined()
            if not needed:
                facts["abi"] = "no-torch-symbols"
            elif not torch.paths:
                facts["abi"] = "unknown"
            else:
                missing = [n for n in needed if not torch.defines(n)]
                facts["abi"] = "unresolved" if missing else "ok"
                facts["unresolved"] = missing[:SHOWN_SYMBOLS]
                facts["unresolved_demangled"] = demangle(facts["unresolved"])
                facts["unresolved_count"] = len(missing)
    except Exception as exc:  # noqa: BLE001 - a malformed file is a fact; pyelftools raises construct errors
        facts["error"] = _why(exc)
    finally:
        symbols.close()
    return facts


def demangle(names: list[str]) -> list[str]:
    """The C++ names behind mangled symbols when c++filt is at hand (it is where a compiler is); else the names."""
    tool = shutil.which("c++filt")
    if not tool or not names:
        return list(names)
    try:
        done = subprocess.run([tool, *names], capture_output=True, text=True, timeout=2, check=False)
    except (OSError, subprocess.SubprocessError):
        return list(names)
    out = done.stdout.splitlines()
    if done.returncode != 0 or len(out) != len(names):
        return list(names)
    return [text.strip() or name for text, name in zip(out, names)]


def _why(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."


# --- finding the files ------------------------------------------------------------------------------------------


def _distribution(names: Iterable[str]) -> Any:
    for name in names:
        try:
            return metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        except Exception:  # noqa: BLE001 - a malformed dist-info is as good as none
            continue
    return None


def _shared_objects(target: Target) -> list[tuple[str, str | None]]:
    """(path, version) of the target's shared objects, from its distributions' file lists (RECORD)."""
    found: list[tuple[str, str | None]] = []
    seen: set[str] = set()
    pattern = re.compile(target.pattern)
    for name in target.dists:
        dist = _distribution([name])
        if dist is None:
            continue
        try:
            version = dist.version
            if target.key == "torch":
                files = [dist.locate_file("torch/lib/libtorch_cuda.so")]
            else:
                files = [dist.locate_file(f) for f in (dist.files or []) if pattern.search(str(f).replace(os.sep, "/"))]
        except Exception:  # noqa: BLE001
            continue
        for path in files:
            text = str(path)
            real = os.path.realpath(text)
            if real in seen or not os.path.isfile(text):
                continue
            seen.add(real)
            found.append((text, version))
    if not found and target.key == "flash_attn_3":
        found = _module_only(("flash_attn_3", "flash_attn_interface"), pattern)
    return found


def _module_only(modules: Iterable[str], pattern: re.Pattern[str]) -> list[tuple[str, str | None]]:
    """Shared objects beside a module installed without metadata (FA3 built from source), found without importing."""
    for module in modules:
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError, AttributeError):
            continue
        if spec is None or not spec.origin:
            continue
        folder = Path(spec.origin).parent
        if spec.submodule_search_locations:
            folder = folder.parent
        hits = [p for p in sorted(folder.glob("**/*.so")) if pattern.search(p.relative_to(folder).as_posix())]
        if hits:
            return [(str(p), None) for p in hits[:4]]
    return []


def torch_library_paths() -> list[str]:
    """torch/lib's libraries that extensions link against, from torch's distribution (nothing imported)."""
    dist = _distribution(["torch"])
    if dist is None:
        return []
    out = []
    for name in TORCH_LIBS:
        try:
            path = str(dist.locate_file(f"torch/lib/{name}"))
        except Exception:  # noqa: BLE001
            continue
        if os.path.isfile(path):
            out.append(path)
    return out


# --- the probe step ---------------------------------------------------------------------------------------------


def probe_binaries(*, use_cache: bool = True) -> list[dict[str, Any]]:
    """One entry per inspected shared object: package, version, file, path, archs, ABI status. Never raises."""
    try:
        return _probe_binaries(use_cache)
    except Exception as exc:  # noqa: BLE001 - a probe bug is a fact, not a traceback
        return [{"package": "?", "label": "?", "version": None, "file": "", "path": "", "sass": [], "ptx": [],
                 "device_code": False, "abi": None, "unresolved": [], "unresolved_demangled": [], "unresolved_count": 0,
                 "error": f"inspecting the installed binaries failed: {type(exc).__name__}: {exc}"}]


def _probe_binaries(use_cache: bool) -> list[dict[str, Any]]:
    libs = torch_library_paths()
    torch_stamp = "|".join(_stamp(p) for p in libs)
    cache_path = _cache_file() if use_cache else None
    cached = _read_cache(cache_path)
    fresh: dict[str, Any] = {}
    exports = TorchExports(libs)
    entries = []
    try:
        for target in TARGETS:
            for path, version in _shared_objects(target):
                stamp = f"{_stamp(path)}#{torch_stamp}" if target.key != "torch" else _stamp(path)
                hit = cached.get(path)
                if isinstance(hit, dict) and hit.get("stamp") == stamp and isinstance(hit.get("facts"), dict):
                    facts = hit["facts"]
                else:
                    facts = read_binary(path, None if target.key == "torch" else exports)
                    if exports.errors and facts.get("abi") == "ok":
                        facts["abi"] = "unknown"
                fresh[path] = {"stamp": stamp, "facts": facts}
                entries.append({"package": target.key, "label": target.label, "version": version,
                                "file": os.path.basename(path), "path": path, **facts})
    finally:
        exports.close()
    if cache_path is not None and fresh != {k: cached.get(k) for k in fresh}:
        _write_cache(cache_path, fresh)
    return entries


def _stamp(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return f"{path}:missing"
    return f"{path}:{st.st_size}:{st.st_mtime_ns}"


def _cache_file() -> Path | None:
    from .._toml import _cache_dir  # noqa: PLC0415

    folder = _cache_dir()
    return None if folder is None else folder.parent / "binaries-v2.json"


def _read_cache(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    from ..inputs.cache import read_cache  # noqa: PLC0415

    try:
        data = json.loads((read_cache(path) or b"").decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_cache(path: Path, data: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass
