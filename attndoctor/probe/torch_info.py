"""PyTorch facts, read in a subprocess so that a broken or slow torch never touches the doctor itself."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import sys
import time
import zlib
from pathlib import Path

from ..environment import ABSENT, Environment
from ._run import MARKER, note, run_python
from .cudnn_lib import cudnn_version_text

TORCH_SNIPPET = r"""
import json
import sys
import torch
out = {"torch": str(torch.__version__), "cuda": getattr(torch.version, "cuda", None),
       "hip": getattr(torch.version, "hip", None)}

def attempt(key, fn):
    try:
        out[key] = fn()
    except Exception as exc:
        out.setdefault("errors", {})[key] = "%s: %s" % (type(exc).__name__, exc)

attempt("cudnn", lambda: torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None)
attempt("cudnn_compiled", lambda: list(torch._C._cudnn.getCompileVersion()))
attempt("cuda_available", lambda: bool(torch.cuda.is_available()))
# get_arch_list() is empty without a usable GPU; the build's flags are there all the same.
attempt("arch_list", lambda: (torch._C._cuda_getArchFlags() or "").split())
if out.get("cuda_available") and "device" in sys.argv[1:]:
    attempt("capability", lambda: list(torch.cuda.get_device_capability(0)))
    attempt("device_name", lambda: str(torch.cuda.get_device_name(0)))
print(MARKER + json.dumps(out))
""".replace("MARKER", repr(MARKER))


def torch_installed() -> bool:
    """Whether `import torch` could find something, decided without importing it."""
    try:
        if importlib.util.find_spec("torch") is not None:
            return True
    except (ImportError, ValueError, AttributeError):
        return True  # something named torch is there, if broken: let the subprocess say what
    from .packages import distribution_version  # noqa: PLC0415

    return distribution_version("torch") is not None


def probe_torch(timeout: float, *, installed_version: str | None = None, query_device: bool = True,
                use_cache: bool = True) -> Environment:
    """A partial Environment: versions torch/cuda/cudnn, torch_arch_list, torch_cuda_available, cudnn_compiled,
    import_errors["torch"], notes; gpu/sm from torch's device 0 when `query_device` (it creates a CUDA context,
    so it is skipped when NVML already named the GPU). Never raises.

    Importing torch takes seconds (4-6 s on an H100 machine), and what it says about its own build does not change
    until torch or the libraries it loads do: those facts are kept in the user's cache, keyed by the files behind
    them, and reused when the device need not be asked (`use_cache`).
    """
    env = Environment(source="probe")
    if installed_version == ABSENT or (installed_version is None and not torch_installed()):
        env.versions["torch"] = ABSENT
        return env
    if installed_version:
        env.versions["torch"] = installed_version
    label = f"torch {installed_version}" if installed_version else "torch"
    cache = None if query_device or not use_cache else build_facts_cache()
    if cache is not None and cache.exists():
        try:
            from ..inputs.cache import read_cache  # noqa: PLC0415

            data = json.loads((read_cache(cache) or b"").decode("utf-8"))
            fill_from_payload(env, data)
        except (OSError, ValueError, TypeError, AttributeError):
            pass
        else:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(cache.stat().st_mtime))
            env.notes.append(note("torch", "info", f"torch's build facts (CUDA, cuDNN, architectures) are those read "
                                  f"on {when}: this torch installation is unchanged since; "
                                  "`attndoctor check --no-cache` imports it again"))
            return env
    # NVML-based is_available() needs no CUDA driver initialisation (PyTorch reads this variable).
    child = dict(os.environ, PYTORCH_NVML_BASED_CUDA_CHECK="1")
    result = run_python(TORCH_SNIPPET, ["device"] if query_device else [], timeout=timeout, env=child)
    data = result.payload()
    if cache is not None and data is not None and not data.get("errors"):
        _store(cache, {k: v for k, v in data.items() if k not in DEVICE_FACTS})
    if result.timed_out:
        env.notes.append(note("torch", "warning", f"import torch did not finish within {timeout:.0f} s; "
                              "the CUDA, cuDNN and GPU facts torch would give are unknown"))
        return env
    if data is None and result.error:
        env.notes.append(note("torch", "warning", f"could not run Python to ask torch: {result.error}"))
        return env
    if data is None:
        line = result.failure()
        env.import_errors["torch"] = line
        env.notes.append(note("import", "error", f"{label} is installed but does not import: {line}"))
        return env
    fill_from_payload(env, data)
    return env


DEVICE_FACTS = ("cuda_available", "capability", "device_name")
"""What the snippet says about this machine's GPU rather than about torch's build: never cached."""


def build_facts_cache() -> Path | None:
    """Where torch's build facts are kept: a file named by this interpreter, torch's files and the libraries and
    loader settings that decide what it loads; None when there is no torch to fingerprint or caching is off."""
    from .._toml import _cache_dir  # noqa: PLC0415
    from .cudnn_lib import site_cudnn_libraries  # noqa: PLC0415

    folder = _cache_dir()
    try:
        spec = importlib.machinery.PathFinder.find_spec("torch")  # the torch a child process would import
        locations = list(spec.submodule_search_locations or []) if spec is not None else []
    except (ImportError, ValueError, AttributeError):
        return None
    if folder is None or not locations:
        return None
    torch_dir = Path(locations[0])
    files = [torch_dir / "version.py", torch_dir / "__init__.py", *sorted(torch_dir.glob("_C*.so")),
             *sorted((torch_dir / "lib").glob("libtorch_cuda*.so")), *map(Path, site_cudnn_libraries())]
    parts = [sys.executable, os.environ.get("LD_LIBRARY_PATH", ""), os.environ.get("LD_PRELOAD", "")]
    for path in files:
        try:
            stat = path.stat()
        except OSError:
            continue
        parts.append(f"{path}:{stat.st_size}:{stat.st_mtime_ns}")
    key = "|".join(parts).encode()
    return folder.parent / f"torch-build-{zlib.crc32(key):08x}-{len(key)}.json"


def _store(path: Path, data: dict) -> None:
    from .._toml import prune_cache  # noqa: PLC0415

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, path)
        prune_cache(path.parent, "torch-build-*.json")
    except OSError:
        pass


def fill_from_payload(env: Environment, data: dict) -> None:
    """Turn the snippet's JSON into Environment facts."""
    version = data.get("torch")
    if isinstance(version, str) and version:
        env.versions["torch"] = version
    cuda, hip = data.get("cuda"), data.get("hip")
    if isinstance(cuda, str) and cuda:
        env.versions["cuda"] = cuda
    elif hip:
        env.versions["cuda"] = ABSENT
        env.notes.append(note("torch", "warning", f"torch {version} is a ROCm build (HIP {hip}); attndoctor "
                              "knows the NVIDIA CUDA backends only"))
    else:
        env.versions["cuda"] = ABSENT
        env.notes.append(note("torch", "warning", f"torch {version} is a CPU-only build: no CUDA attention "
                              "backend can run; install a CUDA build of torch"))
    cudnn = data.get("cudnn")
    if isinstance(cudnn, int) and cudnn > 0:
        env.versions["cudnn"] = cudnn_version_text(cudnn)
    compiled = data.get("cudnn_compiled")
    if isinstance(compiled, list) and compiled and all(isinstance(x, int) for x in compiled):
        env.cudnn_compiled = ".".join(str(x) for x in compiled)
    available = data.get("cuda_available")
    if isinstance(available, bool):
        env.torch_cuda_available = available
    arch = data.get("arch_list")
    if isinstance(arch, list) and all(isinstance(a, str) for a in arch) and env.versions.get("cuda") != ABSENT:
        env.torch_arch_list = list(arch)
    cap = data.get("capability")
    if isinstance(cap, list) and len(cap) == 2 and all(isinstance(x, int) for x in cap):
        env.sm = cap[0] * 10 + cap[1]
        name = data.get("device_name")
        if isinstance(name, str) and name:
            try:
                from ..gpus import lookup_gpu  # noqa: PLC0415

                spec = lookup_gpu(name)
            except Exception:  # noqa: BLE001
                spec = None
            env.gpu = spec.name if spec is not None else name
    errors = data.get("errors")
    if isinstance(errors, dict) and "cuda_available" in errors:
        env.notes.append(note("torch", "warning", f"torch.cuda.is_available() failed: {errors['cuda_available']}"))
