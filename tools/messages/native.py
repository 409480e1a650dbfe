"""Texts compiled into binaries: the CUDA runtime's error strings and the dynamic loader's messages."""
from __future__ import annotations

import glob
import os
import re
import subprocess
import tempfile
import zipfile

from .model import LIT, PH, Raw, merge_parts

_PRINTABLE = re.compile(rb"[\x20-\x7e\t]{8,}")
_PRINTF = re.compile(r"%(?:\d+\$)?[-+ #0]*\d*(?:\.\d+)?(?:l|ll|z|h)?([diuxXsfgeclp])")


def strings(data: bytes) -> list:
    """The same runs of printable text `strings` prints, without depending on binutils."""
    return [m.group().decode("ascii") for m in _PRINTABLE.finditer(data)]


def _printf_parts(text: str) -> list:
    parts: list = []
    pos = 0
    n = 0
    for m in _PRINTF.finditer(text):
        parts.append((LIT, text[pos:m.start()]))
        n += 1
        parts.append((PH, f"arg{n}", "d" if m.group(1) in "diu" else ""))
        pos = m.end()
    parts.append((LIT, text[pos:]))
    return merge_parts(parts)


_LOADER_KEEP = re.compile(r"cannot|not found|undefined|wrong|invalid|error|failed|version|symbol|unsupported|"
                          r"not supported|requires|lower than required|no space", re.I)
_LOADER_DROP = re.compile(r"=|\[%|^\t|_dl_|\.c$|->|sizeof|\(\)|^Usage|^  |--|^checking for|^calling|^relocation processing|"
                          r"^file=|^binding file|^display|^ *transferring", re.I)


def _deb_members(deb: str, names: tuple) -> dict:
    """Read ld.so out of the Debian package with dpkg-deb, which every Debian system has."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["dpkg-deb", "-x", deb, tmp], check=True)
        for root, _, files in os.walk(tmp):
            for f in files:
                if f in names:
                    p = os.path.join(root, f)
                    if not os.path.islink(p):
                        out[os.path.relpath(p, tmp)] = open(p, "rb").read()
    return out


def read_loader(cache: str):
    """Yield loader messages from ld.so of each cached libc6 package."""
    for deb in sorted(glob.glob(os.path.join(cache, "deb", "libc6_*.deb"))):
        version = os.path.basename(deb).split("_")[1]
        upstream = version.split("-")[0]
        ref = f"deb:libc6-{version}"
        for path, data in sorted(_deb_members(deb, ("ld-linux-x86-64.so.2",)).items()):
            seen = set()
            for s in strings(data):
                s = s.strip()
                if s in seen or not s[:1].isalpha() and not s.startswith("%s"):
                    continue
                seen.add(s)
                if len(s.split()) < 2 or not _LOADER_KEEP.search(s) or _LOADER_DROP.search(s):
                    continue
                if not re.fullmatch(r"[\w%$`'\"(),.:;/ \-]+", s):
                    continue
                yield ("loader", "debian:glibc", ref, upstream, path, Raw(kind="error", parts=_printf_parts(s),
                                                                          condition="", text=s[:300], line=0))


_CUDA_DESC = re.compile(r"^[a-zA-Z][a-zA-Z0-9 ,.'()/:\-_]+$")


def read_cuda(cache: str):
    """Yield cudaGetErrorString texts: the descriptions stored beside the cudaError names in libcudart."""
    for whl in sorted(glob.glob(os.path.join(cache, "wheels", "nvidia-cuda-runtime-cu12-*", "*.whl"))):
        version = os.path.basename(whl).split("-")[1]
        ref = f"wheel:nvidia-cuda-runtime-cu12-{version}"
        with zipfile.ZipFile(whl) as z:
            for path in sorted(z.namelist()):
                if not re.search(r"/libcudart\.so\.\d+$", path):
                    continue
                items = strings(z.read(path))
                for raw in _cuda_descriptions(items):
                    yield ("cuda", "pypi:nvidia-cuda-runtime-cu12", ref, version, path, raw)


def _cuda_descriptions(items: list):
    """In libcudart each description sits in a table next to its cudaError name; take the texts of that table."""
    names = [i for i, s in enumerate(items) if re.fullmatch(r"cudaError[A-Z]\w+", s)]
    if not names:
        return
    lo, hi = min(names), max(names)
    seen = set()
    for s in items[max(0, lo - 400):hi + 400]:
        if s in seen or re.fullmatch(r"cuda\w+", s) or not _CUDA_DESC.match(s) or " " not in s:
            continue
        seen.add(s)
        yield Raw(kind="error", parts=_printf_parts(s), condition="", text=s[:300], line=0)


def read_all(cache: str):
    yield from read_loader(cache)
    yield from read_cuda(cache)
