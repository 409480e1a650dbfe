"""The fields all attention layers of a model share, each read with the key it came from."""

from __future__ import annotations

from typing import Any

from ..config import DTYPE_ALIASES, DTYPES
from .model_keys import (DTYPE_KEYS, HEAD_COUNT_KEYS, HEAD_DIM_KEYS, HIDDEN_KEYS, KV_HEAD_KEYS, NESTED_KEYS,
                         SEQLEN_KEYS, _Source)

SEQLEN_CAP = 8192

# Encoders: bidirectional self-attention over padded batches.
ENCODER_TYPES = frozenset({
    "bert", "roberta", "deberta", "deberta-v2", "xlm-roberta", "xlm-roberta-xl", "distilbert", "electra",
    "albert", "camembert", "mpnet", "modernbert", "nomic_bert", "xlm", "flaubert", "ernie", "roformer",
})

FALCON_TYPES = frozenset({"falcon", "refinedweb", "refinedwebmodel", "rw"})
ALIBI_TYPES = frozenset({"bloom"})

SINK_TYPES = frozenset({"gpt_oss"})
"""Model types whose attention adds learned per-head sink logits to the softmax (transformers' GptOssAttention.sinks);
no config key names them."""


def _is_mla(src: _Source) -> bool:
    return src.has("qk_nope_head_dim") and src.has("qk_rope_head_dim")


def _heads_and_dims(src: _Source, out: dict[str, Any], origin: dict[str, str]) -> None:
    heads_raw, heads_key = src.first(HEAD_COUNT_KEYS)
    if heads_raw is None:
        raise src.fail(f"no attention head count: expected {' or '.join(HEAD_COUNT_KEYS)}"
                       f" (top level, or in {' / '.join(NESTED_KEYS[:3])})")
    heads = src.count(heads_key, heads_raw)
    out["heads"], origin["heads"] = heads, heads_key

    if _is_mla(src):
        nope, nope_key = src.get("qk_nope_head_dim")
        rope, rope_key = src.get("qk_rope_head_dim")
        nope = src.count("qk_nope_head_dim", nope)
        rope = src.count("qk_rope_head_dim", rope)
        out["hdim"] = nope + rope
        origin["hdim"] = (f"{nope_key} + {rope_key} ({nope} + {rope}; MLA as trained and prefilled: "
                          f"absorbed decode kernels use kv_lora_rank + qk_rope_head_dim instead)")
        v_raw, v_key = src.get("v_head_dim")
        if v_raw is None:
            raise src.fail(f"{src.prefix}v_head_dim: an MLA config (qk_nope_head_dim, qk_rope_head_dim) "
                           f"needs v_head_dim too")
        out["hdim_v"], origin["hdim_v"] = src.count("v_head_dim", v_raw), v_key
        out["kv_heads"] = heads
        origin["kv_heads"] = f"{heads_key} (MLA: keys and values are expanded per head, kv heads = heads)"
        return

    dim_raw, dim_key = src.first(HEAD_DIM_KEYS)
    if dim_raw is not None:
        out["hdim"], origin["hdim"] = src.count(dim_key, dim_raw), dim_key
    else:
        hidden_raw, hidden_key = src.first(HIDDEN_KEYS)
        if hidden_raw is None:
            raise src.fail(f"no head dim: expected head_dim, or hidden_size with {heads_key} "
                           f"(also n_embd, d_model; MLA: qk_nope_head_dim + qk_rope_head_dim)")
        hidden = src.count(hidden_key, hidden_raw)
        if hidden % heads:
            raise src.fail(f"{hidden_key} ({hidden}) is not a multiple of {heads_key} ({heads}); "
                           f"give head_dim explicitly")
        out["hdim"], origin["hdim"] = hidden // heads, f"{hidden_key}/{heads_key} ({hidden}/{heads})"

    kv, kv_origin = _kv_heads(src, heads, heads_key)
    out["kv_heads"], origin["kv_heads"] = kv, kv_origin


def _kv_heads(src: _Source, heads: int, heads_key: str) -> tuple[int, str]:
    p = src.prefix
    if src.model_type in FALCON_TYPES or src.model_type.startswith("refinedweb"):
        # transformers' FalconAttention: new_decoder_architecture uses num_kv_heads, else multi_query gives one.
        new_arch = src.data.get("new_decoder_architecture")
        if new_arch is not None and src.flag("new_decoder_architecture", new_arch):
            value, key = src.first(("num_kv_heads", "n_head_kv", "num_key_value_heads"))
            if value is not None:
                return src.count(key, value), f"{key} (new_decoder_architecture=true)"
            return heads, f"{heads_key} (new_decoder_architecture=true without num_kv_heads)"
        mq = src.data.get("multi_query")
        if mq is not None and src.flag("multi_query", mq):
            return 1, f"{p}multi_query=true (one KV head)"
        value, key = src.first(("n_head_kv",))
        if value is not None:
            return src.count("n_head_kv", value), key
        return heads, f"{heads_key} ({p}multi_query=false, no new_decoder_architecture: multi-head)"
    value, key = src.first(KV_HEAD_KEYS)
    if value is not None:
        return src.count(key, value), key
    mqa = src.data.get("multi_query_attention")
    if mqa is not None and src.flag("multi_query_attention", mqa) and src.data.get("multi_query_group_num"):
        return src.count("multi_query_group_num", src.data["multi_query_group_num"]), f"{p}multi_query_group_num"
    mq = src.data.get("multi_query")
    if mq is not None and src.flag("multi_query", mq):
        return 1, f"{p}multi_query=true (one KV head)"
    return heads, f"{heads_key} (no KV head key: multi-head, kv heads = heads)"


def _dtype(src: _Source, out: dict[str, Any], origin: dict[str, str]) -> None:
    for data, prefix in ((src.data, src.prefix), (src.outer, "")):
        for key in DTYPE_KEYS:
            value = data.get(key)
            if value is None:
                continue
            text = str(value).strip().lower()
            dtype = text if text in DTYPES else DTYPE_ALIASES.get(text)
            if dtype is None:
                origin["dtype"] = f"{prefix}{key}={value!r} is no attention dtype; unknown"
                return
            if dtype == "fp8":
                origin["dtype"] = (f"{prefix}{key}={value!r}: the weights' storage format; attention runs in the "
                                   f"activation dtype, unknown (give --dtype)")
                return
            out["dtype"], origin["dtype"] = dtype, f"{prefix}{key} ({value})"
            if dtype == "fp32":
                origin["dtype"] += ": the dtype the checkpoint is stored in; give --dtype if you run it in bf16/fp16"
            return


def _softcap(src: _Source, out: dict[str, Any], origin: dict[str, str]) -> None:
    value, key = src.get("attn_logit_softcapping")
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise src.fail(f"{key}: expected a number >= 0 or null, got {value!r}")
    if value > 0:
        out["softcap"], origin["softcap"] = float(value), key


def _alibi(src: _Source, out: dict[str, Any], origin: dict[str, str]) -> None:
    value, key = src.get("alibi")
    if value is None and isinstance(src.data.get("attn_config"), dict):
        value, key = src.data["attn_config"].get("alibi"), f"{src.prefix}attn_config.alibi"
    if value is not None:
        if src.flag(key, value):
            out["bias"], origin["bias"] = "alibi", f"{key}=true"
        else:
            origin["bias"] = f"{key}=false: no bias"
        return
    if src.model_type in ALIBI_TYPES:
        out["bias"], origin["bias"] = "alibi", f"{src.prefix}model_type {src.model_type} (always ALiBi)"
    elif str(src.data.get("position_embedding_type", "")).lower() == "alibi":
        out["bias"], origin["bias"] = "alibi", f"{src.prefix}position_embedding_type=alibi"


def _sinks(src: _Source, out: dict[str, Any], origin: dict[str, str]) -> None:
    if src.model_type in SINK_TYPES:
        out["sinks"] = True
        origin["sinks"] = (f"{src.prefix}model_type {src.model_type}: learned per-head sink logits in every "
                           f"attention layer (no config key names them)")


def _seqlen(src: _Source, seqlen: int | None, out: dict[str, Any], origin: dict[str, str]) -> None:
    if seqlen is not None:
        out["seqlen"] = seqlen
        origin["seqlen_q"] = origin["seqlen_kv"] = "the seqlen given"
        return
    value, key = src.first(SEQLEN_KEYS)
    if value is None:
        return
    limit = src.count(key, value)
    if limit > SEQLEN_CAP:
        out["seqlen"] = SEQLEN_CAP
        shown = key if "absent" in key else f"{key} ({limit})"
        text = f"{shown}, capped at {SEQLEN_CAP}; give --seqlen for the length you run"
    else:
        out["seqlen"] = limit
        text = key
    origin["seqlen_q"] = origin["seqlen_kv"] = text
