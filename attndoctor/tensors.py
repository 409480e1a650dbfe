"""`attndoctor.preflight(q, k, v)`: check real tensors before the attention call that would crash or go wrong."""

from __future__ import annotations

from typing import Any

from .config import AttentionConfig, make_config
from .engine.results import ConfigResult, Report
from .environment import Environment, environment_from_flags
from .words import verdict_words

SDPA_LAYOUT = "bhsd"
"""PyTorch's scaled_dot_product_attention takes (batch, heads, seqlen, head dim)."""
DEFAULT_LAYOUT = {"flash-attn": "bshd", "transformer-engine": "sbhd", "cudnn-frontend": "bhsd", "pytorch": "bhsd"}


class PreflightError(RuntimeError):
    """The intended backend cannot run these tensors, or would give wrong results; carries the full verdict."""

    def __init__(self, message: str, report: Report) -> None:
        super().__init__(message)
        self.report = report

    @property
    def result(self) -> ConfigResult:
        return self.report.results[0]


_DTYPES = {"torch.bfloat16": "bf16", "torch.float16": "fp16", "torch.float32": "fp32",
           "torch.float8_e4m3fn": "fp8", "torch.float8_e5m2": "fp8"}


def _shape(t: Any, layout: str) -> tuple[int, int, int, int]:
    """(batch, heads, seqlen, dim) of a 4-D tensor in the given layout."""
    if t.dim() != 4:
        raise ValueError(f"preflight: expected 4-D q, k, v, got a {t.dim()}-D tensor of shape {tuple(t.shape)}")
    b, x, y, d = (int(s) for s in t.shape)
    if layout == "bhsd":
        return b, x, y, d
    if layout == "bshd":
        return b, y, x, d
    if layout == "sbhd":
        return x, y, b, d
    raise ValueError(f"preflight: layout must be bhsd, bshd or sbhd, got {layout!r}")


def fused_views(q: Any, k: Any, v: Any) -> bool:
    """True when q, k, v are interleaved views of one buffer (strides of the packed tensor, not separate chunks)."""
    try:
        ptrs = {t.untyped_storage().data_ptr() for t in (q, k, v)}
    except (AttributeError, RuntimeError):
        return False
    if len(ptrs) != 1:
        return False
    return not all(t.is_contiguous() for t in (q, k, v))


def describe(q: Any, k: Any, v: Any, *, layout: str, causal: bool = False, dropout: float = 0.0,
             attn_mask: Any = None, window: tuple[int, int] | None = None, softcap: float = 0.0,
             train: bool | None = None, deterministic: bool | None = None) -> AttentionConfig:
    """The AttentionConfig of a real call: shapes, dtype, mask, training, and fused-buffer views."""
    import torch

    batch, heads, seqlen_q, hdim = _shape(q, layout)
    _, kv_heads, seqlen_kv, _ = _shape(k, layout)
    hdim_v = _shape(v, layout)[3]
    if train is None:
        train = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))
    if deterministic is None:
        deterministic = torch.are_deterministic_algorithms_enabled()
    mask = "arbitrary" if attn_mask is not None else ("causal" if causal else "none")
    values: dict[str, Any] = {
        "batch": batch, "heads": heads, "kv_heads": kv_heads, "seqlen_q": seqlen_q, "seqlen_kv": seqlen_kv,
        "hdim": hdim, "hdim_v": hdim_v, "dtype": _DTYPES.get(str(q.dtype), "fp32"), "train": bool(train),
        "mask": mask, "dropout": dropout, "softcap": softcap, "deterministic": bool(deterministic),
        "layout": layout if layout != "bhsd" else "bhsd", "qkv_fused": fused_views(q, k, v),
        "name": "preflight",
    }
    if window is not None:
        values["window"] = list(window)
    return make_config(values)


def live_environment(device: Any = None) -> Environment:
    """This process's torch, cuDNN and GPU, read in-process (torch is already imported), plus package metadata."""
    import torch

    from .gpus import lookup_gpu
    from .probe.envvars import relevant_env_vars
    from .probe.packages import package_versions

    env = package_versions()
    env.source = "probe"
    env.versions["torch"] = torch.__version__
    if torch.version.cuda:
        env.versions["cuda"] = torch.version.cuda
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    if cudnn:
        from .probe.cudnn_lib import cudnn_version_text

        env.versions["cudnn"] = cudnn_version_text(cudnn)
    env.env_vars = relevant_env_vars()
    if torch.cuda.is_available():
        index = device.index if device is not None and getattr(device, "index", None) is not None else \
            torch.cuda.current_device()
        major, minor = torch.cuda.get_device_capability(index)
        env.sm = major * 10 + minor
        name = torch.cuda.get_device_name(index)
        spec = lookup_gpu(name)
        env.gpu = spec.name if spec else name
    else:
        env.no_gpu = True
    return env


def preflight(q: Any, k: Any, v: Any, *, backend: str | None = None, causal: bool = False, dropout: float = 0.0,
              attn_mask: Any = None, window: tuple[int, int] | None = None, softcap: float = 0.0,
              train: bool | None = None, deterministic: bool | None = None, layout: str | None = None,
              environment: Environment | dict[str, Any] | None = None) -> Report:
    """Return the report when the call can run; raise PreflightError (with the report) when it cannot or is wrong.

    `backend` is the backend you intend to use (e.g. "sdpa-cudnn", "flash-attn-2", "te-fused"); without it, the
    check is that the framework's default choice runs correctly. `layout` defaults to bhsd for PyTorch SDPA and
    cudnn-frontend, bshd for flash-attn and sbhd for TransformerEngine.
    """
    from .engine.rules import load_rulebase
    from .services import diagnose_many

    base = load_rulebase()
    framework = base.backend(backend).framework if backend else "pytorch"
    config = describe(q, k, v, layout=layout or DEFAULT_LAYOUT.get(framework, SDPA_LAYOUT), causal=causal,
                      dropout=dropout, attn_mask=attn_mask, window=window, softcap=softcap, train=train,
                      deterministic=deterministic)
    if environment is None:
        env = live_environment(getattr(q, "device", None))
    elif isinstance(environment, Environment):
        env = environment
    else:
        env = environment_from_flags(environment)
    report = diagnose_many([config], env, command="preflight", backends=[backend] if backend else None)
    result = report.results[0]
    problems: list[str] = []
    if backend:
        verdict = result.verdict(backend)
        if verdict.supported is not True:
            reasons = [f"{f.id}: {f.message}" for f in verdict.blocking(True)] or \
                [f"depends on {', '.join(verdict.missing)}"]
            problems.append(f"{backend} {verdict_words(verdict.status, config.label())}: " + "; ".join(reasons)
                            + (f". Smallest fix: {verdict.fix.describe()}" if verdict.fix else ""))
    else:
        for s in result.selected:
            if s.framework == framework and s.status in ("fails", "wrong-results", "none"):
                problems.append(f"{framework} would run {s.backend or 'nothing'} ({s.status}): {s.reason}")
    for v in result.all_verdicts:
        if (backend is None or v.backend.id == backend) and v.status == "wrong-results":
            problems.append(f"{v.backend.id} gives wrong results: " +
                            "; ".join(f.message for f in v.findings if f.effect == "wrong-results" and f.applies))
    if problems:
        raise PreflightError("attndoctor preflight: " + " | ".join(dict.fromkeys(problems)), report)
    return report
