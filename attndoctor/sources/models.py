"""Attention configs from a Hugging Face model's config.json: one per attention kind the model's layers use.

Offline and weight-free: only the config.json is read. Every field set records, in `origin`, the key (or the
rule) it came from, so a user can see why attndoctor thinks Gemma-2 has a 4096-token window on half its layers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..config import AttentionConfig, make_config
from .model_fields import (ALIBI_TYPES, ENCODER_TYPES, FALCON_TYPES, SEQLEN_CAP, SINK_TYPES, _alibi, _dtype,
                           _heads_and_dims, _seqlen, _sinks, _softcap)
from .model_keys import (DTYPE_KEYS, HEAD_COUNT_KEYS, HEAD_DIM_KEYS, HIDDEN_KEYS, KV_HEAD_KEYS, NESTED_DEFAULTS,
                         NESTED_KEYS, NESTED_TYPE_OF, SEQLEN_KEYS, _key_line, _language_config, _layers, _load,
                         _model_name)
from .model_kinds import CHUNKED_KINDS, FULL_KINDS, NON_SOFTMAX_KINDS, SLIDING_KINDS, _kinds, layer_types_of
from .model_layers import _chunk_fits, _kv_sharing, _nope, _per_kind_dims, _sparse_indexer, layer_ranges
from .model_readings import KindReading, ModelReading
from .vision import _image_prompt_kinds, _vision_towers

__all__ = [
    "ALIBI_TYPES", "CHUNKED_KINDS", "DTYPE_KEYS", "ENCODER_TYPES", "FALCON_TYPES", "FULL_KINDS", "HEAD_COUNT_KEYS",
    "HEAD_DIM_KEYS", "HIDDEN_KEYS", "KV_HEAD_KEYS", "NESTED_DEFAULTS", "NESTED_KEYS", "NESTED_TYPE_OF",
    "NON_SOFTMAX_KINDS", "SEQLEN_CAP", "SEQLEN_KEYS", "SINK_TYPES", "SLIDING_KINDS", "KindReading", "ModelReading",
    "configs_from_model", "layer_ranges", "read_model",
]


def configs_from_model(path: str | Path, *, seqlen: int | None = None) -> list[AttentionConfig]:
    """One AttentionConfig per attention kind in a Hugging Face config.json (or a folder holding one)."""
    return read_model(path, seqlen=seqlen).configs


def read_model(path: str | Path, *, seqlen: int | None = None) -> ModelReading:
    """Every attention kind of a model's config.json with its layers, plus the layers that run no softmax attention."""
    file, doc, text = _load(path)
    src = _language_config(file, doc)
    name = _model_name(path, file, doc, src)

    common: dict[str, Any] = {}
    origin: dict[str, str] = {}
    _heads_and_dims(src, common, origin)
    _dtype(src, common, origin)
    encoder = src.model_type in ENCODER_TYPES
    if encoder:
        common["mask"], origin["mask"] = "padding", f"model_type {src.model_type}: an encoder, padding mask"
    else:
        common["mask"], origin["mask"] = "causal", (
            f"model_type {src.model_type}: a decoder, causal mask" if src.model_type else "a decoder, causal mask")
    _softcap(src, common, origin)
    _alibi(src, common, origin)
    _sinks(src, common, origin)
    _seqlen(src, seqlen, common, origin)

    skipped: dict[str, list[int]] = {}
    kinds = _kinds(src, encoder, skipped)
    _per_kind_dims(src, kinds)
    _kv_sharing(src, kinds)
    _nope(src, kinds)
    _chunk_fits(kinds, common.get("seqlen"))
    notes = _sparse_indexer(src, kinds, common.get("seqlen"))
    multi = len(kinds) > 1
    out: list[KindReading] = []
    for kind in kinds:
        values = {**common, **kind.fields}
        kind_origin = {**origin, **kind.field_origin}
        if kind.window is not None:
            values["window"] = kind.window
        kind_origin["window"] = kind.window_origin
        if kind.mask:
            values["mask"], kind_origin["mask"] = kind.mask, kind.mask_origin
        values["name"] = f"{name} {kind.label}" if multi and kind.label else name
        values["origin"] = kind_origin
        line = _key_line(text, kind.window_origin) or _key_line(text, kind.mask_origin) or 1
        config = make_config(values, where=file)._replace(source=(file, line))
        out.append(KindReading(kind.label or "all layers", config, tuple(kind.layers), tuple(kind.notes)))
    out.extend(_image_prompt_kinds(file, doc, text, src, out))
    out.extend(_vision_towers(file, doc, text, name, common, origin))
    _, layer_types_key = layer_types_of(src)
    return ModelReading(name=name, file=file, model_type=src.model_type, layers=_layers(src), kinds=out,
                        skipped={k: tuple(v) for k, v in skipped.items()},
                        skipped_origin=layer_types_key if skipped else "", notes=notes)
