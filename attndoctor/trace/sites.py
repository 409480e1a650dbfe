"""Where a call came from: the first stack frame outside libraries, and short names for files (stdlib only)."""

from __future__ import annotations

import os
import sys

OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
"""attndoctor's own folder: its frames are neither the call site nor the fallback."""
LIBRARIES = ("torch", "transformers", "flash_attn", "flash_attn_interface", "transformer_engine", "accelerate", "peft",
             "kernels", "vllm", "sglang", "diffusers", "deepspeed", "triton")
"""Packages whose frames are never the call site, wherever they are installed (an editable checkout included)."""


def _skip_dirs() -> tuple[str, ...]:
    """Folders whose frames are never the call site: attndoctor, the standard library, site-packages and
    dist-packages, and the libraries of LIBRARIES that are imported now (each ending in a separator)."""
    import site
    import sysconfig

    dirs = [OWN_DIR]
    paths = sysconfig.get_paths()
    dirs += [paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(k)]
    try:
        dirs += list(site.getsitepackages()) + [site.getusersitepackages()]
    except AttributeError:  # a virtualenv's old site.py without them
        pass
    for name in LIBRARIES:
        path = getattr(sys.modules.get(name), "__file__", None)
        if path:
            dirs.append(os.path.dirname(os.path.abspath(path)) if not path.endswith(f"{name}.py") else path)
    return tuple(sorted({d.rstrip(os.sep) + (os.sep if not d.endswith(".py") else "") for d in dirs if d}))


def is_library(filename: str, skip: tuple[str, ...]) -> bool:
    """Whether a frame's file belongs to a library (or the standard library), not to the user's program."""
    if filename.startswith("<"):
        return filename.startswith("<frozen")
    absolute = os.path.abspath(filename)
    parts = absolute.split(os.sep)
    return absolute.startswith(skip) or "site-packages" in parts or "dist-packages" in parts



def _short(filename: str) -> str:
    parts = filename.split(os.sep)
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            return os.sep.join(parts[len(parts) - parts[::-1].index(marker):])
    try:
        relative = os.path.relpath(filename)
    except ValueError:
        return filename
    return relative if not relative.startswith("..") else filename



def site_of_trace(stack_trace: str, skip: tuple[str, ...]) -> str:
    """The call site in a compiled graph node's recorded stack (outermost frame first): the innermost frame
    outside libraries, else '' (the caller of the compiled graph is named instead)."""
    frames = []
    for line in (stack_trace or "").splitlines():
        line = line.strip()
        if line.startswith('File "') and ", line " in line:
            filename = line[6:line.index('"', 6)]
            number = line.split(", line ", 1)[1].split(",", 1)[0]
            frames.append((filename, number))
    for filename, number in reversed(frames):
        if not is_library(filename, skip):
            return f"{_short(filename)}:{number}"
    return ""
