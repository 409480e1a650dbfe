"""The cuDNN library a job without torch would load, asked for its version through ctypes in a subprocess."""

from __future__ import annotations

import glob
import os
import site
import sys

from ..environment import ABSENT, Environment
from ._run import MARKER, note, run_python

SITE_LIB_DIRS = (os.path.join("nvidia", "cudnn", "lib"), os.path.join("nvidia", "cudnn_jit", "lib"))
SONAMES = ("libcudnn.so.9", "libcudnn.so.8", "libcudnn.so")

CUDNN_SNIPPET = r"""
import ctypes, ctypes.util, json, sys
names = list(sys.argv[1:])
found = ctypes.util.find_library("cudnn")
for extra in ([found] if found else []) + SONAMES:
    if extra not in names:
        names.append(extra)
tried = []
for name in names:
    try:
        lib = ctypes.CDLL(name)
        fn = lib.cudnnGetVersion
    except (OSError, AttributeError) as exc:
        tried.append([name, str(exc)])
        continue
    fn.restype = ctypes.c_size_t
    fn.argtypes = []
    print(MARKER + json.dumps({"version": int(fn()), "path": name, "tried": tried}))
    sys.exit(0)
print(MARKER + json.dumps({"version": None, "tried": tried}))
""".replace("MARKER", repr(MARKER)).replace("SONAMES", repr(list(SONAMES)))


def cudnn_version_text(value: int) -> str:
    """cuDNN's integer version as text: 91900 -> 9.19.0 (cuDNN 9+: M*10000+m*100+p), 8907 -> 8.9.7 (M*1000+m*100+p)."""
    v = int(value)
    if v >= 10000:
        return f"{v // 10000}.{v % 10000 // 100}.{v % 100}"
    return f"{v // 1000}.{v % 1000 // 100}.{v % 100}"


def site_cudnn_libraries(paths: list[str] | None = None) -> list[str]:
    """libcudnn.so* shipped by the nvidia-cudnn-cu1x / nvidia-cudnn-jit wheels, best first (libcudnn.so.N)."""
    if paths is None:
        paths = list(sys.path)
        try:
            paths += site.getsitepackages() + [site.getusersitepackages()]
        except Exception:  # noqa: BLE001 - some embedded interpreters lack these
            pass
    seen: set[str] = set()
    found: list[str] = []
    for base in paths:
        if not base or not isinstance(base, str):
            continue
        for sub in SITE_LIB_DIRS:
            for path in sorted(glob.glob(os.path.join(base, sub, "libcudnn.so*"))):
                real = os.path.realpath(path)
                if real in seen or not os.path.isfile(path):
                    continue
                seen.add(real)
                found.append(path)

    def rank(path: str) -> tuple[int, int]:
        tail = os.path.basename(path)[len("libcudnn.so"):]  # "", ".9", ".9.19.0"
        parts = tail.strip(".").split(".") if tail else []
        form = 0 if len(parts) == 1 else 1 if parts else 2  # the soname libcudnn.so.9 first
        return form, -int(parts[0]) if parts and parts[0].isdigit() else 0

    return sorted(found, key=rank)


def probe_cudnn_library(timeout: float, *, candidates: list[str] | None = None) -> Environment:
    """A partial Environment with versions["cudnn"] (or ABSENT) and notes; never raises."""
    env = Environment(source="probe")
    files = site_cudnn_libraries() if candidates is None else list(candidates)
    result = run_python(CUDNN_SNIPPET, files, timeout=timeout)
    data = result.payload()
    if result.timed_out:
        env.notes.append(note("cudnn", "warning", f"loading cuDNN did not finish within {timeout:.0f} s; "
                              "its version is unknown"))
        return env
    if data is None:
        env.notes.append(note("cudnn", "warning", f"could not ask cuDNN for its version: {result.failure()}"))
        return env
    version = data.get("version")
    if isinstance(version, int) and version > 0:
        env.versions["cudnn"] = cudnn_version_text(version)
        env.notes.append(note("cudnn", "info", f"cuDNN {env.versions['cudnn']} from {data.get('path')} "
                              "(no torch to say which cuDNN it loads)"))
        return env
    broken = [(name, err) for name, err in data.get("tried") or [] if os.sep in str(name) and os.path.exists(name)]
    if broken:
        name, err = broken[0]
        env.notes.append(note("cudnn", "warning", f"{name} is there but does not load: {err}"))
        return env
    env.versions["cudnn"] = ABSENT
    return env
