"""A recorded call's config and details, from the tensors an attention entry point got (torch objects in, plain
data out)."""

from __future__ import annotations

import functools
import re
import sys
from typing import Any

_DTYPES = {"torch.bfloat16": "bf16", "torch.float16": "fp16", "torch.float32": "fp32",
           "torch.float8_e4m3fn": "fp8", "torch.float8_e5m2": "fp8"}


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


SDPA_FLAG_READS = (("_get_flash_sdp_enabled", "flash_sdp_enabled"), ("_get_mem_efficient_sdp_enabled",
                   "mem_efficient_sdp_enabled"), ("_get_math_sdp_enabled", "math_sdp_enabled"),
                   ("_get_cudnn_sdp_enabled", "cudnn_sdp_enabled"))
"""torch._C's getters behind torch.backends.cuda.*_sdp_enabled(), and those public names where a torch lacks one."""


def sdpa_flag_reads(torch: Any) -> tuple:
    """The functions that read SDPA's enabled backends and the deterministic flag, bound once: the recorder calls
    them on every SDPA call, where the public wrappers cost several times more."""
    backends = torch.backends.cuda
    reads = [getattr(torch._C, name, None) or getattr(backends, public, None) or (lambda: None)
             for name, public in SDPA_FLAG_READS]
    reads.append(getattr(torch._C, "_get_deterministic_algorithms", None) or torch.are_deterministic_algorithms_enabled)
    return tuple(reads)


def _sdpa_flags(torch: Any) -> tuple:
    flash, efficient, math, cudnn, deterministic = sdpa_flag_reads(torch)
    return flash(), efficient(), math(), cudnn(), deterministic()


def _dtype(t: Any) -> str:
    return _DTYPES.get(str(t.dtype), str(t.dtype).removeprefix("torch."))


def layout_of(t: Any, seq_dim: int = 2, head_dim: int = 1, batch_dim: int = 0) -> str:
    """The memory order of a (batch, heads, seq, dim) view, read from its strides: bshd, bhsd or sbhd.

    A size-1 dimension's stride says nothing; it is placed as in bhsd (SDPA's own order)."""
    dims = (("b", batch_dim), ("h", head_dim), ("s", seq_dim))
    sized = sorted(((t.stride(d), x) for x, d in dims if t.shape[d] > 1), key=lambda p: -p[0])
    order = [x for _, x in sized]
    for x in "bhs":
        if x not in order:
            order.insert(sum(1 for y in order if "bhs".index(y) < "bhs".index(x)), x)
    return "".join(order) + "d"


def fused_qkv(q: Any, k: Any, v: Any) -> bool:
    """q, k and v are views of one buffer (one storage), not three tensors of their own."""
    try:
        storage = q.untyped_storage().data_ptr()
        return (k.untyped_storage().data_ptr() == storage == v.untyped_storage().data_ptr()
                and q.data_ptr() != k.data_ptr())
    except (AttributeError, RuntimeError):
        return False


def _mask_kind(mask: Any) -> str:
    import torch

    if mask is None:
        return "none"
    if not isinstance(mask, torch.Tensor):
        return type(mask).__name__
    return "bool" if mask.dtype == torch.bool else f"float bias ({_dtype(mask)})"


def _masked_rows(mask: Any) -> Any:
    """A device bool: does some query row of the mask hide every key (bool False / float -inf everywhere)?"""
    import torch

    if mask.dtype == torch.bool:
        return (~mask).all(dim=-1).any()
    return torch.isneginf(mask).all(dim=-1).any()


@functools.lru_cache(maxsize=256)
def _backward_op(op: str, node: str) -> str:
    """The backward op's name, from the forward op or the autograd node's class."""
    if op:
        return f"aten.{op.removeprefix('aten.').split('.')[0]}_backward"
    if node.startswith("ScaledDotProduct"):
        return "aten._" + re.sub(r"(?<!^)(?=[A-Z])", "_", node.removesuffix("Backward0")).lower() + "_backward"
    return "autograd of the decomposition"


def _sdpa_signature(q: Any, k: Any, v: Any, attn_mask: Any, dropout_p: float, is_causal: bool, scale: Any,
                    gqa: bool) -> tuple:
    """Everything _sdpa_fields reads, cheaply (shapes as torch.Size, which hash as tuples): calls with equal
    signatures have equal fields and details."""
    mask = None if attn_mask is None else (attn_mask.dtype, attn_mask.shape)
    return (q.shape, q.stride(), k.shape, k.stride(), v.shape, v.stride(), q.dtype, q.device,
            sys.modules["torch"].is_grad_enabled(), q.requires_grad, k.requires_grad, v.requires_grad, mask,
            dropout_p, is_causal, scale, gqa, fused_qkv(q, k, v))


def _sdpa_fields(q: Any, k: Any, v: Any, attn_mask: Any, dropout_p: float, is_causal: bool, scale: Any,
                 gqa: bool) -> tuple[dict, dict]:
    """The call's config (AttentionConfig field names) and its details, from SDPA's (batch, heads, seq, dim) views."""
    import torch

    shape = tuple(int(s) for s in q.shape)
    batch = 1
    for s in shape[:-3]:
        batch *= s
    heads, seqlen_q, hdim = shape[-3], shape[-2], shape[-1]
    kv_heads, seqlen_kv = int(k.shape[-3]), int(k.shape[-2])
    train = torch.is_grad_enabled() and any(getattr(t, "requires_grad", False) for t in (q, k, v))
    mask = "causal" if is_causal else ("arbitrary" if attn_mask is not None else "none")
    fields = {"batch": batch, "heads": heads, "kv_heads": kv_heads, "seqlen_q": seqlen_q, "seqlen_kv": seqlen_kv,
              "hdim": hdim, "hdim_v": int(v.shape[-1]), "dtype": _dtype(q), "train": bool(train), "mask": mask,
              "dropout": float(dropout_p) if train or dropout_p else 0.0,
              "layout": layout_of(q, len(shape) - 2, len(shape) - 3, 0) if len(shape) == 4 else "bhsd",
              "qkv_fused": fused_qkv(q, k, v),
              "deterministic": bool(torch.are_deterministic_algorithms_enabled())}
    details: dict[str, Any] = {"mask_kind": _mask_kind(attn_mask), "gqa": bool(gqa or kv_heads != heads),
                               "enable_gqa": bool(gqa), "scale": None if scale is None else float(scale),
                               "device": str(q.device), "shape_q": list(shape),
                               "strides_q": list(q.stride()), "strides_k": list(k.stride()),
                               "strides_v": list(v.stride()), "contiguous": all(t.is_contiguous() for t in (q, k, v))}
    if not details["contiguous"]:
        details.update({f"contiguous_{n}": t.is_contiguous() for n, t in (("q", q), ("k", k), ("v", v))})
    if attn_mask is not None:
        details["mask_shape"] = list(attn_mask.shape)
    return fields, details


def _flex_fields(q: Any, k: Any, v: Any, score_mod: Any, block_mask: Any, gqa: Any) -> tuple[dict, dict]:
    fields, details = _sdpa_fields(q, k, v, None, 0.0, False, None, bool(gqa))
    mask_mod = getattr(block_mask, "mask_mod", None)
    mask_name = getattr(mask_mod, "__name__", "") if mask_mod is not None else ""
    if block_mask is not None:
        fields["mask"] = "causal" if "causal" in mask_name.lower() and "pad" not in mask_name.lower() else "arbitrary"
    lengths = getattr(block_mask, "seq_lengths", None)
    if lengths is not None:
        details["block_mask_seq_lengths"] = [int(n) for n in lengths]
    details.update({"mask_kind": "block_mask" if block_mask is not None else "none",
                    "mask_mod": mask_name or None, "score_mod": getattr(score_mod, "__name__", None)
                    if score_mod is not None else None})
    return fields, details


def _flash_fields(function: str, args: tuple, kwargs: dict) -> tuple[dict, dict]:
    """flash-attn's (batch, seq, heads, dim) tensors, packed or variable-length, as config fields."""
    import torch

    names = {"flash_attn_func": ("q", "k", "v"), "flash_attn_varlen_func": ("q", "k", "v"),
             "flash_attn_kvpacked_func": ("q", "kv"), "flash_attn_varlen_kvpacked_func": ("q", "kv"),
             "flash_attn_qkvpacked_func": ("qkv",), "flash_attn_varlen_qkvpacked_func": ("qkv",),
             "flash_attn_with_kvcache": ("q", "k_cache", "v_cache")}[function]
    given = dict(zip(names, args))
    given.update({n: kwargs[n] for n in names if n in kwargs})
    varlen = "varlen" in function
    if "qkv" in given:
        qkv = given["qkv"]
        q, k, v = qkv.select(-3, 0), qkv.select(-3, 1), qkv.select(-3, 2)
    elif "k_cache" in given:
        q, k, v = given["q"], given["k_cache"], given["v_cache"]
    elif "kv" in given:
        q, kv = given["q"], given["kv"]
        k, v = kv.select(-3, 0), kv.select(-3, 1)
    else:
        q, k, v = given["q"], given["k"], given["v"]
    rest = args[len(names):]
    if varlen:
        cu = kwargs.get("cu_seqlens_q", kwargs.get("cu_seqlens", rest[0] if rest else None))
        max_q = kwargs.get("max_seqlen_q", kwargs.get("max_seqlen"))
        if max_q is None and len(rest) > (1 if "qkv" in given else 2):
            max_q = rest[1 if "qkv" in given else 2]
        max_k = kwargs.get("max_seqlen_k", max_q if "qkv" in given else (rest[3] if len(rest) > 3 else max_q))
        batch = int(cu.shape[0]) - 1 if cu is not None else None
        heads, hdim = int(q.shape[-2]), int(q.shape[-1])
        seqlen_q, seqlen_kv, layout = _int_or_none(max_q), _int_or_none(max_k), "thd"
    else:
        batch, seqlen_q, heads, hdim = (int(s) for s in q.shape)
        seqlen_kv, layout = int(k.shape[1]), "bshd"
    causal = bool(kwargs.get("causal", False))
    window = kwargs.get("window_size", (-1, -1))
    train = torch.is_grad_enabled() and any(getattr(t, "requires_grad", False) for t in (q, k, v))
    fields = {"batch": batch, "heads": heads, "kv_heads": int(k.shape[-2]), "seqlen_q": seqlen_q,
              "seqlen_kv": seqlen_kv, "hdim": hdim, "hdim_v": int(v.shape[-1]), "dtype": _dtype(q),
              "train": bool(train), "mask": "causal" if causal else "none",
              "window": [int(window[0]), int(window[1])] if window is not None else [-1, -1],
              "dropout": float(kwargs.get("dropout_p", 0.0) or 0.0), "softcap": float(kwargs.get("softcap", 0.0) or 0.0),
              "layout": layout, "qkv_fused": "qkv" in given or fused_qkv(q, k, v),
              "deterministic": bool(kwargs.get("deterministic", False))}
    details = {"function": function, "gqa": int(k.shape[-2]) != heads, "device": str(q.device),
               "scale": kwargs.get("softmax_scale"), "alibi": kwargs.get("alibi_slopes") is not None}
    if seqlen_q is None:
        fields.pop("seqlen_q")
        fields.pop("seqlen_kv")
    return fields, details


def _te_fields(module: Any, q: Any, k: Any, v: Any, kwargs: dict) -> tuple[dict, dict]:
    import torch

    fmt = kwargs.get("qkv_format") or getattr(module, "qkv_format", "sbhd") or "sbhd"
    axes = {"sbhd": (1, 0, 2), "bshd": (0, 1, 2)}.get(fmt)
    mask_type = kwargs.get("attn_mask_type") or getattr(module, "attn_mask_type", "causal")
    train = torch.is_grad_enabled() and any(getattr(t, "requires_grad", False) for t in (q, k, v))
    fields: dict[str, Any] = {"hdim": int(q.shape[-1]), "hdim_v": int(v.shape[-1]), "heads": int(q.shape[-2]),
                              "kv_heads": int(k.shape[-2]), "dtype": _dtype(q), "train": bool(train),
                              "layout": fmt, "qkv_fused": fused_qkv(q, k, v)}
    if axes:
        fields.update(batch=int(q.shape[axes[0]]), seqlen_q=int(q.shape[axes[1]]), seqlen_kv=int(k.shape[axes[1]]))
    mask_map = {"no_mask": "none", "causal": "causal", "padding": "padding", "padding_causal": "padding-causal",
                "causal_bottom_right": "causal-bottom-right", "arbitrary": "arbitrary",
                "padding_causal_bottom_right": "padding-causal-bottom-right"}
    fields["mask"] = mask_map.get(str(mask_type), "arbitrary")
    window = kwargs.get("window_size") or getattr(module, "window_size", None)
    if window is not None:
        fields["window"] = [int(window[0]), int(window[1])]
    return fields, {"attn_mask_type": str(mask_type), "device": str(q.device)}


def _te_backend() -> tuple[str, str]:
    """TransformerEngine's last choice, where this TE keeps it in `_attention_backends`; else say it is unknown."""
    for name in ("transformer_engine.pytorch.attention.dot_product_attention.dot_product_attention",
                 "transformer_engine.pytorch.attention.dot_product_attention.utils",
                 "transformer_engine.pytorch.attention"):
        chosen = getattr(sys.modules.get(name), "_attention_backends", None)
        if isinstance(chosen, dict):
            if chosen.get("use_flash_attention"):
                return "te-flash", ""
            if chosen.get("use_fused_attention"):
                return "te-fused", f"fused sub-backend {chosen.get('fused_attention_backend')}"
            if chosen.get("use_unfused_attention"):
                return "te-unfused", ""
    return "te", "this TransformerEngine does not expose its chosen backend (_attention_backends not found)"


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None



def hub_library(repo: str) -> str:
    """The flash-attn generation of a Hub kernel repository loaded through `kernels` (kernels-community/flash-attn2,
    kernels-community/flash-attn3, kernels-community/vllm-flash-attn3, ...), else ''."""
    name = repo.lower().rsplit("/", 1)[-1].replace("_", "-")
    found = re.search(r"flash-?(?:attn|attention)(?:-?([2-4]))?(?![0-9a-z])", name)
    if not found:
        return ""
    return f"flash-attn-{found.group(1) or 2}"


def varlen_fields(args: tuple, kwargs: dict) -> tuple[dict, dict]:
    """torch.nn.attention.varlen.varlen_attn's (total, heads, dim) tensors and cumulative lengths as config fields
    (torch 2.13: query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, then keywords; earlier: is_causal 8th)."""
    import torch

    names = ("query", "key", "value", "cu_seq_q", "cu_seq_k", "max_q", "max_k", "is_causal")
    given = dict(zip(names, args))
    given.update({n: kwargs[n] for n in names if n in kwargs})
    q, k, v, cu = given["query"], given["key"], given["value"], given.get("cu_seq_q")
    window = list(kwargs.get("window_size") or (-1, -1))
    causal = bool(given.get("is_causal", False)) or (window[1] == 0 and window[0] == -1)
    if window[1] == 0 and window[0] == -1:
        window = [-1, -1]
    train = torch.is_grad_enabled() and any(getattr(t, "requires_grad", False) for t in (q, k, v))
    fields = {"batch": int(cu.shape[0]) - 1 if cu is not None else None, "heads": int(q.shape[-2]),
              "kv_heads": int(k.shape[-2]), "seqlen_q": _int_or_none(given.get("max_q")),
              "seqlen_kv": _int_or_none(given.get("max_k")), "hdim": int(q.shape[-1]), "hdim_v": int(v.shape[-1]),
              "dtype": _dtype(q), "train": bool(train), "mask": "causal" if causal else "none",
              "window": [int(window[0]), int(window[1])], "layout": "thd", "qkv_fused": fused_qkv(q, k, v)}
    details = {"function": "varlen_attn", "gqa": int(k.shape[-2]) != int(q.shape[-2]), "device": str(q.device),
               "scale": kwargs.get("scale"), "paged": kwargs.get("block_table") is not None}
    return {k: v for k, v in fields.items() if v is not None}, details


SDPA_OPS = {"FLASH_ATTENTION": "_scaled_dot_product_flash_attention",
            "EFFICIENT_ATTENTION": "_scaled_dot_product_efficient_attention",
            "CUDNN_ATTENTION": "_scaled_dot_product_cudnn_attention",
            "OVERRIDEABLE": "_scaled_dot_product_fused_attention_overrideable"}
"""SDPBackend members -> the aten op scaled_dot_product_attention calls for them (aten attention.cpp)."""
_CHOICE: dict[str, Any] = {}


def sdpa_op_by_choice(q: Any, k: Any, v: Any, attn_mask: Any, dropout_p: float, is_causal: bool, scale: Any,
                      gqa: bool) -> str | None:
    """The aten op SDPA dispatches for these arguments, from torch._fused_sdp_choice (the function
    scaled_dot_product_attention itself asks) without a dispatch mode: '' for the math fallback, None where it
    cannot be told (no such function, a device other than CUDA and CPU, a choice this table does not know)."""
    table = _CHOICE.get("table")
    if table is None:
        import torch

        choose = getattr(torch, "_fused_sdp_choice", None)
        members = getattr(getattr(torch.nn, "attention", None), "SDPBackend", None)
        table = _CHOICE["table"] = (choose, {int(getattr(members, m).value): op for m, op in SDPA_OPS.items()
                                             if hasattr(members, m)} if members else {},
                                    int(members.MATH.value) if members else 0)
    choose, ops, math = table
    device = getattr(q, "device", None)
    if choose is None or getattr(device, "type", "") not in ("cuda", "cpu") or getattr(q, "is_nested", False):
        return None
    try:
        number = int(choose(q, k, v, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=gqa))
    except (RuntimeError, TypeError):
        return None
    if number == math:
        return ""
    op = ops.get(number)
    if op is None or (device.type == "cpu" and op != SDPA_OPS["FLASH_ATTENTION"]):
        return None
    return f"aten.{op}{'_for_cpu' if device.type == 'cpu' else ''}.default"
