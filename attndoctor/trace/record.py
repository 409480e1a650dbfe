"""The record a traced process writes: names and the file format, shared by the recorder and the reader (stdlib only)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

RECORD_VERSION = 1
DIR_VAR = "ATTNDOCTOR_TRACE_DIR"
"""Set by `attndoctor trace` for the traced program: each process that imports torch writes its calls here at exit."""
OPTIONS_VAR = "ATTNDOCTOR_TRACE_OPTIONS"
"""Comma-separated recorder options: numerics, timing."""

OP_BACKENDS: dict[str, str] = {
    "_scaled_dot_product_flash_attention": "sdpa-flash",
    "_flash_attention_forward": "sdpa-flash",
    "_scaled_dot_product_efficient_attention": "sdpa-efficient",
    "_efficient_attention_forward": "sdpa-efficient",
    "_scaled_dot_product_cudnn_attention": "sdpa-cudnn",
    "_cudnn_attention_forward": "sdpa-cudnn",
    "_scaled_dot_product_attention_math": "sdpa-math",
    "_scaled_dot_product_attention_math_for_mps": "sdpa-math",
    "_scaled_dot_product_fused_attention_overrideable": "sdpa-overrideable",
    "_scaled_dot_product_flash_attention_for_cpu": "sdpa-cpu-flash",
}
"""aten attention ops (forward; `<op>_backward` maps to the same id) -> what ran. sdpa-cpu-flash is PyTorch's CPU
flash kernel and sdpa-overrideable a device plug-in's kernel: neither is a GPU backend the rules model."""
NOT_MODELLED = {"sdpa-cpu-flash": "PyTorch's CPU flash kernel: the rules model GPU backends only",
                "sdpa-overrideable": "a device plug-in's SDPA kernel (PrivateUse1): not modelled",
                "eager": "matmul + softmax written out in Python (transformers' eager attention): no attention kernel"}

ENGINE_FIELDS = ("batch", "heads", "kv_heads", "seqlen_q", "seqlen_kv", "hdim", "hdim_v", "dtype", "train", "mask",
                 "window", "dropout", "softcap", "layout", "deterministic", "qkv_fused")
"""The recorded call's fields that are AttentionConfig fields (the rest are details: scale, gqa, mask kind...)."""


def backend_of(op: str) -> str | None:
    """The backend id an aten op name (with or without `aten.`, overload or `_backward`) belongs to."""
    name = op.removeprefix("aten.").split(".")[0].removesuffix("_backward")
    return OP_BACKENDS.get(name)


def record_path(directory: str, pid: int | None = None) -> Path:
    """One file per process: the rank (from torchrun's RANK) and the pid keep processes apart."""
    rank = os.environ.get("RANK", "")
    pid = os.getpid() if pid is None else pid
    return Path(directory) / (f"rank{rank}-{pid}.jsonl" if rank else f"proc-{pid}.jsonl")


def write_record(path: Path, header: Mapping[str, Any], calls: Iterable[Mapping[str, Any]]) -> None:
    """The header line, then one line per aggregated call; written whole to a temporary name, then renamed."""
    tmp = path.with_suffix(".part")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(json.dumps({"kind": "process", "version": RECORD_VERSION, **header}, default=str) + "\n")
        for call in calls:
            handle.write(json.dumps({"kind": "call", **call}, default=str) + "\n")
    os.replace(tmp, path)
