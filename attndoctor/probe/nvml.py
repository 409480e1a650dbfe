"""GPUs through NVML (nvidia-ml-py, import name pynvml): names, compute capability, memory, driver, MIG."""

from __future__ import annotations

import os
from typing import Any

from ..environment import Environment, GpuInfo
from ._run import note

NO_GPU = "no NVIDIA GPU found"


def probe_nvml() -> tuple[Environment, str | None]:
    """A partial Environment (gpu, sm, gpus, versions["driver"], no_gpu, notes) and the newest CUDA the driver
    runs. no_gpu is set only when NVML answers that there is none (no driver, no device, all hidden).

    Never raises.
    """
    env = Environment(source="probe")
    try:
        import pynvml  # noqa: PLC0415 - optional, and tests put a fake one in sys.modules
    except Exception as exc:  # noqa: BLE001
        env.notes.append(note("gpu", "warning", f"cannot look for GPUs: nvidia-ml-py (pynvml) does not import: "
                              f"{exc}"))
        return env, None
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - NVMLError_LibraryNotFound, DriverNotLoaded, ...
        env.no_gpu = True
        env.notes.append(note("gpu", "info", f"{NO_GPU} (NVML: {_err(exc)})"))
        return env, None
    try:
        return env, _read(pynvml, env)
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


def _read(nv: Any, env: Environment) -> str | None:
    try:
        count = int(nv.nvmlDeviceGetCount())
    except Exception as exc:  # noqa: BLE001
        env.notes.append(note("gpu", "warning", f"NVML could not count GPUs: {_err(exc)}"))
        return None
    driver = _call(nv, "nvmlSystemGetDriverVersion")
    if driver:
        env.versions["driver"] = _str(driver)
    code = _call(nv, "nvmlSystemGetCudaDriverVersion_v2") or _call(nv, "nvmlSystemGetCudaDriverVersion")
    cuda_driver = f"{code // 1000}.{code % 1000 // 10}" if isinstance(code, int) and code > 0 else None
    if driver:
        supports = f" (runs CUDA up to {cuda_driver})" if cuda_driver else ""
        env.notes.append(note("driver", "info", f"NVIDIA driver {env.versions['driver']}{supports}"))
    if count == 0:
        env.no_gpu = True
        env.notes.append(note("gpu", "info", NO_GPU))
        return cuda_driver
    gpus = []
    for i in range(count):
        try:
            handle = nv.nvmlDeviceGetHandleByIndex(i)
        except Exception as exc:  # noqa: BLE001 - one unreachable GPU (fallen off the bus) is a fact
            env.notes.append(note("gpu", "warning", f"NVML could not open GPU {i}: {_err(exc)}"))
            continue
        name = _str(_call(nv, "nvmlDeviceGetName", handle) or f"GPU {i}")
        cc = _call(nv, "nvmlDeviceGetCudaComputeCapability", handle)
        sm = int(cc[0]) * 10 + int(cc[1]) if isinstance(cc, (tuple, list)) and len(cc) == 2 else None
        mem = _call(nv, "nvmlDeviceGetMemoryInfo", handle)
        total = getattr(mem, "total", None)
        memory_mib = int(total) // (1024 * 1024) if isinstance(total, int) else None
        mig_mode = _call(nv, "nvmlDeviceGetMigMode", handle)
        enabled = getattr(nv, "NVML_DEVICE_MIG_ENABLE", 1)
        mig = isinstance(mig_mode, (tuple, list)) and bool(mig_mode) and mig_mode[0] == enabled
        uuid = _str(_call(nv, "nvmlDeviceGetUUID", handle) or "")
        gpus.append(GpuInfo(index=i, name=name, sm=sm, memory_mib=memory_mib, mig=mig, uuid=uuid))
    if not gpus:
        return cuda_driver
    visible = _visible(gpus, os.environ.get("CUDA_VISIBLE_DEVICES"))
    env.gpus = visible  # what a job started here sees; GpuInfo.index keeps NVML's numbering
    if not visible:
        env.no_gpu = True
        env.notes.append(note("gpu", "info", f"{NO_GPU} visible: CUDA_VISIBLE_DEVICES="
                              f"{os.environ.get('CUDA_VISIBLE_DEVICES', '')!r} hides all {len(gpus)}"))
        return cuda_driver
    if len(visible) < len(gpus):
        env.notes.append(note("gpu", "info", f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r} "
                              f"shows {len(visible)} of the {len(gpus)} GPUs"))
    first = visible[0]
    env.gpu = _canonical(first.name)
    env.sm = first.sm if first.sm is not None else _catalogue_sm(first.name)
    models = sorted({(g.name, g.sm) for g in visible}, key=str)
    if len(models) > 1:
        listed = ", ".join(f"{n} (sm{s})" if s else n for n, s in models)
        env.notes.append(note("gpu", "warning", f"mixed GPU models: {listed}; checking against GPU "
                              f"{first.index}, {first.name}: set CUDA_VISIBLE_DEVICES to check another"))
    for g in visible:
        if g.mig:
            env.notes.append(note("gpu", "info", f"GPU {g.index} ({g.name}) is in MIG mode: a job sees one MIG "
                                  "slice, with a fraction of its SMs and memory"))
    return cuda_driver


def _visible(gpus: list[GpuInfo], spec: str | None) -> list[GpuInfo]:
    """The GPUs CUDA will show, as CUDA_VISIBLE_DEVICES selects them (indices or UUIDs).

    Indices are taken in NVML's (PCI bus) order, which is CUDA's when CUDA_DEVICE_ORDER=PCI_BUS_ID and on
    every machine whose GPUs are all alike.
    """
    if spec is None:
        return list(gpus)
    chosen: list[GpuInfo] = []
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            break
        found = None
        if item.lstrip("-").isdigit():
            idx = int(item)
            if idx < 0:
                break  # CUDA stops at the first invalid entry
            found = next((g for g in gpus if g.index == idx), None)
        elif item.startswith("MIG-"):
            return list(gpus)  # a MIG instance UUID: NVML's parent listing is the best we have
        else:
            found = next((g for g in gpus if g.uuid and (g.uuid == item or g.uuid.startswith(item))), None)
        if found is None:
            break
        if found not in chosen:
            chosen.append(found)
    return chosen


def _canonical(name: str) -> str:
    try:
        from ..gpus import lookup_gpu  # noqa: PLC0415

        spec = lookup_gpu(name)
    except Exception:  # noqa: BLE001 - a broken catalogue must not lose the GPU
        spec = None
    return spec.name if spec is not None else name


def _catalogue_sm(name: str) -> int | None:
    try:
        from ..gpus import lookup_gpu  # noqa: PLC0415

        spec = lookup_gpu(name)
    except Exception:  # noqa: BLE001
        return None
    return spec.sm if spec is not None else None


def _call(nv: Any, fn: str, *args: Any) -> Any:
    f = getattr(nv, fn, None)
    if f is None:
        return None
    try:
        return f(*args)
    except Exception:  # noqa: BLE001 - NOT_SUPPORTED and friends: an unknown fact
        return None


def _str(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _err(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__
