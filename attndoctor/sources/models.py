"""Attention configs from a Hugging Face model's config.json: one per attention kind the model's layers use.

Offline and weight-free: only the config.json is read. Every field set records, in `origin`, the key (or the
rule) it came from, so a user can see why attndoctor thinks Gemma-2 has a 4096-token window on half its layers.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..config import DTYPE_ALIASES, DTYPES, AttentionConfig, make_config
from .._json import loads_json
from ..errors import UsageError

SEQLEN_CAP = 8192

HEAD_COUNT_KEYS = ("num_attention_heads", "n_head", "num_heads", "n_heads")
HIDDEN_KEYS = ("hidden_size", "n_embd", "d_model", "dim")
HEAD_DIM_KEYS = ("head_dim", "d_kv", "kv_channels")
KV_HEAD_KEYS = ("num_key_value_heads", "n_head_kv", "num_kv_heads", "n_kv_heads")
SEQLEN_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "max_sequence_length")
DTYPE_KEYS = ("torch_dtype", "dtype")
# Where multimodal configs keep their language model; searched in this order, one level or two deep.
NESTED_KEYS = ("text_config", "llm_config", "language_config", "language_model_config", "thinker_config")

# Encoders: bidirectional self-attention over padded batches.
ENCODER_TYPES = frozenset({
    "bert", "roberta", "deberta", "deberta-v2", "xlm-roberta", "xlm-roberta-xl", "distilbert", "electra",
    "albert", "camembert", "mpnet", "modernbert", "nomic_bert", "xlm", "flaubert", "ernie", "roformer",
})
FALCON_TYPES = frozenset({"falcon", "refinedweb", "refinedwebmodel", "rw"})
ALIBI_TYPES = frozenset({"bloom"})

SLIDING_KINDS = frozenset({"sliding_attention", "sliding", "local", "local_attention", "swa"})
FULL_KINDS = frozenset({"full_attention", "full", "global", "global_attention", "attention"})
CHUNKED_KINDS = frozenset({"chunked_attention"})
# Layer kinds that run no softmax attention: they need no attention backend, so they give no config.
NON_SOFTMAX_KINDS = frozenset({"linear_attention", "mamba", "mamba2", "conv", "recurrent", "ssm", "rwkv",
                               "deltanet", "gated_deltanet", "lightning_attention"})

# Sub-configs of composite models are saved as a diff against their class defaults (transformers'
# `to_diff_dict`), so Gemma-3-4B's text_config omits its head count and head dim. These are the class defaults
# of the language configs such models nest (transformers/models/<type>/configuration_<type>.py); they fill
# only nested configs, never a top-level one, which transformers always writes out in full.
NESTED_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": {"num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "sliding_window": 4096,
                    "sliding_window_pattern": 6, "max_position_embeddings": 131072},
    "llama": {"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 2048},
    "mistral": {"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
                "sliding_window": 4096, "max_position_embeddings": 4096 * 32},
}
# The language model type a composite config implies when its text_config names none.
NESTED_TYPE_OF = {"gemma3": "gemma3_text", "llava": "llama", "llava_next": "llama", "mllama": "mllama_text_model"}

_MISSING = object()


@dataclass
class _Source:
    """One config dict (the top level or a nested language config) and how to read it."""

    file: str
    data: Mapping[str, Any]
    prefix: str = ""
    outer: Mapping[str, Any] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    model_type: str = ""

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None or key in self.defaults

    def get(self, key: str) -> tuple[Any, str]:
        """The value of a key (None when absent or null) and where it came from."""
        value = self.data.get(key)
        if value is not None:
            return value, self.prefix + key
        if key in self.defaults:
            return self.defaults[key], f"{self.prefix}{key} absent: {self.model_type} default {self.defaults[key]}"
        return None, self.prefix + key

    def first(self, keys: tuple[str, ...]) -> tuple[Any, str]:
        for key in keys:
            value, origin = self.get(key)
            if value is not None:
                return value, origin
        return None, ""

    def fail(self, message: str) -> UsageError:
        return UsageError(f"{self.file}: {message}")

    def key_of(self, where: str) -> str:
        """The full key path behind a bare key or an origin string ("text_config.head_dim absent: ...")."""
        key = where.split(" ")[0]
        return key if key.startswith(self.prefix) else self.prefix + key

    def count(self, where: str, value: Any) -> int:
        """A positive whole number, or a one-line error naming the key."""
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise self.fail(f"{self.key_of(where)}: expected a whole number >= 1, got {value!r}")
        return value

    def flag(self, where: str, value: Any) -> bool:
        if isinstance(value, bool):
            return value
        raise self.fail(f"{self.key_of(where)}: expected true or false, got {value!r}")


@dataclass
class _Kind:
    """One kind of attention layer: its label in config names, its window, mask and where they came from."""

    label: str
    window: tuple[int, int] | None
    window_origin: str
    mask: str | None = None
    mask_origin: str = ""
    layers: list[int] = field(default_factory=list)
    fields: dict[str, Any] = field(default_factory=dict)
    field_origin: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass
class KindReading:
    """One attention kind of a model: its config, the layers that run it, and what the config says of them."""

    label: str
    config: AttentionConfig
    layers: tuple[int, ...]
    notes: tuple[str, ...] = ()
    tower: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "name": self.config.name, "layers": list(self.layers),
                "layer_count": len(self.layers), "notes": list(self.notes), "tower": self.tower or None}


@dataclass
class ModelReading:
    """What a config.json says of every layer: the attention kinds, and the layers no attention backend runs."""

    name: str
    file: str
    model_type: str
    layers: int | None
    kinds: list[KindReading]
    skipped: dict[str, tuple[int, ...]] = field(default_factory=dict)
    skipped_origin: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def configs(self) -> list[AttentionConfig]:
        return [k.config for k in self.kinds]


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
    out.extend(_vision_towers(file, doc, text, name, common, origin))
    layer_types_key = f"{src.prefix}layer_types"
    if src.data.get("layer_types") is None and src.data.get("full_attention_interval") is not None:
        every = src.data["full_attention_interval"]
        layer_types_key = f"{src.prefix}full_attention_interval={every} (layer_types absent)"
    return ModelReading(name=name, file=file, model_type=src.model_type, layers=_layers(src), kinds=out,
                        skipped={k: tuple(v) for k, v in skipped.items()},
                        skipped_origin=layer_types_key if skipped else "", notes=notes)


def _key_line(text: str, origin: str) -> int:
    """The line of the key an origin starts with ("text_config.sliding_window (1024, 0)"), 0 when it names none."""
    path = re.match(r"[A-Za-z_][\w.]*", origin)
    line, at = 0, 0
    for key in path.group(0).split(".") if path else ():
        found = re.compile(rf'"{re.escape(key)}"\s*:').search(text, at)
        if not found:
            break
        at = found.end()
        line = text.count("\n", 0, found.start()) + 1
    return line


def _load(path: str | Path) -> tuple[str, dict[str, Any], str]:
    from ..inputs import EITHER, describe, locate, read_text

    accepted = "expected a Hugging Face config.json or a model folder holding one"
    p = Path(path)
    if stat.S_ISDIR(locate(path, describe(path, "file or folder", accepted), EITHER).st_mode):
        p = p / "config.json"
        if not os.path.lexists(p):
            raise UsageError(f"{path}: folder has no config.json; {accepted}")
    file = str(p)
    text = read_text(p, describe(p, "model config", accepted))
    if not text.strip():
        raise UsageError(f"{file}: empty file; {accepted}")
    doc = loads_json(text, file, accepted)
    if not isinstance(doc, dict):
        raise UsageError(f"{file}: expected a JSON object of model settings, got a JSON {_json_kind(doc)}")
    return file, doc, text


def _json_kind(value: Any) -> str:
    return {list: "list", str: "string", bool: "boolean", int: "number", float: "number"}.get(type(value), "null")


def _language_config(file: str, doc: dict[str, Any]) -> _Source:
    """The top level, or the nested language model config of a multimodal model."""
    top_type = str(doc.get("model_type") or "").lower()
    top = _Source(file, doc, model_type=top_type)
    if _has_heads(top):
        return top
    for key in NESTED_KEYS:
        sub = doc.get(key)
        if not isinstance(sub, dict):
            continue
        for inner_key in ("",) + NESTED_KEYS:
            inner = sub if not inner_key else sub.get(inner_key)
            if not isinstance(inner, dict):
                continue
            prefix = f"{key}." + (f"{inner_key}." if inner_key else "")
            sub_type = str(inner.get("model_type") or NESTED_TYPE_OF.get(top_type, "")).lower()
            src = _Source(file, inner, prefix=prefix, outer=doc, defaults=NESTED_DEFAULTS.get(sub_type, {}),
                          model_type=sub_type)
            if _has_heads(src):
                return src
    return top


def _has_heads(src: _Source) -> bool:
    return any(src.has(k) for k in HEAD_COUNT_KEYS)


def _model_name(path: str | Path, file: str, doc: Mapping[str, Any], src: _Source) -> str:
    named = doc.get("_name_or_path")
    if isinstance(named, str) and named.strip().strip("/\\"):
        return re.split(r"[/\\]", named.strip().rstrip("/\\"))[-1]
    p = Path(file).resolve()
    folder = p.parent
    # The Hugging Face cache: models--org--name/snapshots/<commit>/config.json
    if folder.parent.name == "snapshots" and folder.parent.parent.name.startswith("models--"):
        return folder.parent.parent.name.split("--")[-1]
    if p.name != "config.json":
        return p.stem
    if folder.name:
        return folder.name
    return src.model_type or str(doc.get("model_type") or "model")


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


def _layers(src: _Source) -> int | None:
    value, key = src.first(("num_hidden_layers", "n_layer", "num_layers", "n_layers"))
    return None if value is None else src.count(key, value)


def _window_size(src: _Source) -> tuple[int | None, str]:
    """The sliding window in tokens (sliding_window, or Gemma-2's older sliding_window_size) and its key."""
    value, origin = src.get("sliding_window")
    if value is None and src.data.get("sliding_window_size") is not None:
        value, origin = src.get("sliding_window_size")
    if value is None:
        return None, origin
    return src.count(origin, value), origin


def _sliding(label: str, size: int, origin: str, note: str) -> _Kind:
    return _Kind(label, (size, 0), f"{origin} ({size}, 0){': ' + note if note else ''}")


def _spread(kinds: list[tuple[int, _Kind]]) -> list[_Kind]:
    """Distinct kinds in the order their first layer appears, each with the layers of all its copies."""
    seen: dict[tuple[Any, ...], _Kind] = {}
    for _, kind in sorted(kinds, key=lambda item: item[0]):
        first = seen.setdefault((kind.label, kind.window, kind.mask), kind)
        if first is not kind:
            first.layers.extend(kind.layers)
    return list(seen.values())


def _every(layers: int | None, test: Any) -> list[int]:
    return [] if layers is None else [i for i in range(layers) if test(i)]


def _kinds(src: _Source, encoder: bool, skipped: dict[str, list[int]]) -> list[_Kind]:
    """The attention kinds and their layers; layers that run no softmax attention go to `skipped`."""
    kinds = _kinds_of(src, encoder, skipped)
    layers = _layers(src)
    if len(kinds) == 1 and not kinds[0].layers and layers is not None:
        kinds[0].layers = list(range(layers))
    return kinds


def _kinds_of(src: _Source, encoder: bool, skipped: dict[str, list[int]]) -> list[_Kind]:
    p = src.prefix
    layers = _layers(src)
    mtype = src.model_type
    use_sw_raw = src.data.get("use_sliding_window")
    use_sw = None if use_sw_raw is None else src.flag("use_sliding_window", use_sw_raw)
    if use_sw is None and mtype.startswith("qwen") and src.data.get("sliding_window") is not None:
        use_sw, use_sw_note = False, f"{p}use_sliding_window absent (Qwen default false)"
    else:
        use_sw_note = f"{p}use_sliding_window={str(use_sw).lower()}"

    layer_types, types_key = src.data.get("layer_types"), f"{p}layer_types"
    interval = src.data.get("full_attention_interval")
    if layer_types is None and interval is not None and layers is not None:
        # transformers' Qwen3NextConfig: layer i is linear attention unless (i + 1) % full_attention_interval == 0
        every = src.count("full_attention_interval", interval)
        layer_types = ["linear_attention" if (i + 1) % every else "full_attention" for i in range(layers)]
        types_key = f"{p}full_attention_interval={every} (layer_types absent)"
    if layer_types is not None:
        return _from_layer_types(src, layer_types, use_sw, use_sw_note, skipped, types_key)

    if mtype == "modernbert":
        local, local_key = src.get("local_attention")
        every, every_key = src.get("global_attn_every_n_layers")
        if local is not None:
            half = src.count("local_attention", local) // 2
            every_n = src.count(every_key, every) if every is not None else 3
            every_note = every_key if every is not None else f"{every_key} absent: ModernBERT default 3"
            kinds = [(0, _Kind("global", None, f"layers i % {every_n} == 0 ({every_note}): no window"))]
            if every_n > 1:
                kinds.append((1, _Kind("local (sliding window)", (half, half),
                                       f"{local_key}/2 each side ({half}, {half}): layers i % {every_n} != 0")))
            return _spread(kinds)

    if mtype.startswith("gemma2"):
        size, key = _window_size(src)
        if size is not None:
            if layers == 1:
                return [_sliding("", size, key, "gemma2: layer 0 uses the window")]
            n_local = None if layers is None else (layers + 1) // 2
            count = "" if layers is None else f" ({n_local} of {layers} layers)"
            local = _sliding("local (sliding window)", size, key, f"gemma2: even layers 0, 2, 4, ...{count}")
            local.layers = _every(layers, lambda i: i % 2 == 0)
            return [local, _Kind("global", None, "gemma2: odd layers 1, 3, 5, ... have no window",
                                 layers=_every(layers, lambda i: i % 2 == 1))]

    pattern, pattern_key = src.first(("sliding_window_pattern", "_sliding_window_pattern"))
    if pattern is not None:
        pattern = src.count(pattern_key, pattern)
        size, key = _window_size(src)
        if size is not None:
            n_global = None if layers is None else layers // pattern
            count = "" if layers is None else f"; {layers - n_global} of {layers} layers"
            rule = f"layer i is local unless (i + 1) % {pattern} == 0 ({pattern_key}{count})"
            if pattern == 1:
                return [_Kind("", None, f"{pattern_key} = 1: every layer is global, no window")]
            local = _sliding("local (sliding window)", size, key, rule)
            local.layers = _every(layers, lambda i: (i + 1) % pattern != 0)
            kinds_at: list[tuple[int, _Kind]] = [(0, local)]
            if layers is None or layers >= pattern:
                count = "" if layers is None else f" ({n_global} of {layers} layers)"
                kinds_at.append((pattern - 1, _Kind("global", None,
                                                    f"every {pattern}th layer is global{count}, no window",
                                                    layers=_every(layers, lambda i: (i + 1) % pattern == 0))))
            return _spread(kinds_at)

    if mtype.startswith("llama4") and src.has("attention_chunk_size"):
        chunk, chunk_key = src.get("attention_chunk_size")
        chunk = src.count("attention_chunk_size", chunk)
        interval_raw, _ = src.get("no_rope_layer_interval")
        interval = 4 if interval_raw is None else src.count("no_rope_layer_interval", interval_raw)
        chunked = _chunked(chunk, chunk_key, f"layers with (i + 1) % {interval} != 0")
        chunked.layers = _every(layers, lambda i: (i + 1) % interval != 0)
        return _spread([(0, chunked),
                        (interval - 1, _Kind("global", None, f"every {interval}th layer (NoPE) is global",
                                             layers=_every(layers, lambda i: (i + 1) % interval == 0)))])

    size, key = _window_size(src)
    if use_sw is False:
        return [_Kind("", None, f"{use_sw_note}: no window" + (f" ({key}={size} unused)" if size else ""))]
    if size is None:
        if use_sw:
            return [_Kind("", None, f"{use_sw_note} but {key} is null: no window")]
        null = key.removeprefix(p) in src.data
        return [_Kind("", None, f"{key} is null: no window" if null else "no sliding_window: no window")]
    if use_sw and (src.data.get("max_window_layers") is not None or mtype.startswith("qwen")):
        raw, mwl_key = src.get("max_window_layers")
        if raw is None:
            mwl, mwl_key = 28, f"{p}max_window_layers absent (Qwen default 28)"
        else:
            mwl = 0 if raw == 0 and not isinstance(raw, bool) else src.count(mwl_key, raw)
        if layers is not None and mwl >= layers:
            return [_Kind("", None, f"{use_sw_note}, but {mwl_key}={mwl} covers all {layers} layers: no window")]
        note = f"layers {mwl} and up ({use_sw_note}, {mwl_key}={mwl})"
        if mwl == 0:
            return [_sliding("", size, key, f"every layer ({use_sw_note}, {mwl_key}=0)")]
        local = _sliding("local (sliding window)", size, key, note)
        local.layers = _every(layers, lambda i: i >= mwl)
        return [_Kind("global", None, f"layers 0 to {mwl - 1} have no window ({mwl_key}={mwl})",
                      layers=_every(layers, lambda i: i < mwl)), local]
    return [_sliding("", size, key, "every layer" + (f" ({use_sw_note})" if use_sw else ""))]


def _chunked(chunk: int, chunk_key: str, where: str) -> _Kind:
    return _Kind("chunked", None, f"no window: {where} attend within chunks of {chunk} ({chunk_key})",
                 mask="arbitrary",
                 mask_origin=f"{chunk_key}={chunk}: block-diagonal causal mask, given as a mask tensor "
                             f"(or run as {chunk}-token sequences with a causal mask)")


def _from_layer_types(src: _Source, layer_types: Any, use_sw: bool | None, use_sw_note: str,
                      skipped: dict[str, list[int]], types_key: str) -> list[_Kind]:
    p = src.prefix
    if not isinstance(layer_types, list) or not layer_types or not all(isinstance(t, str) for t in layer_types):
        raise src.fail(f"{p}layer_types: expected a list of layer kinds such as "
                       f"\"sliding_attention\", \"full_attention\", got {layer_types!r:.60}")
    size, key = _window_size(src)
    kinds: list[tuple[int, _Kind]] = []
    counts: dict[str, int] = {}
    for i, raw in enumerate(layer_types):
        counts[raw] = counts.get(raw, 0) + 1
    for i, raw in enumerate(layer_types):
        kind = raw.strip().lower()
        where = f"{types_key}: {counts[raw]} of {len(layer_types)} layers are {raw}"
        if kind in SLIDING_KINDS:
            if use_sw is False:
                kinds.append((i, _Kind("global", None, f"{where}, but {use_sw_note}: no window")))
            elif size is None:
                kinds.append((i, _Kind("global", None, f"{where}, but {key} is null: no window")))
            else:
                kinds.append((i, _sliding("local (sliding window)", size, key, where)))
        elif kind in FULL_KINDS:
            kinds.append((i, _Kind("global", None, f"{where}: no window")))
        elif kind in CHUNKED_KINDS:
            chunk, chunk_key = src.get("attention_chunk_size")
            if chunk is None:
                raise src.fail(f"{p}layer_types has chunked_attention layers but no attention_chunk_size")
            kinds.append((i, _chunked(src.count("attention_chunk_size", chunk), chunk_key, where)))
        elif kind in NON_SOFTMAX_KINDS:
            skipped.setdefault(raw, []).append(i)
            continue
        else:
            raise src.fail(f"{p}layer_types: unknown layer kind {raw!r}; accepted: sliding_attention, "
                           f"full_attention, chunked_attention (linear_attention, mamba: skipped)")
    if not kinds:
        raise src.fail(f"{p}layer_types: no softmax attention layers ({', '.join(sorted(counts))}); "
                       f"nothing for an attention backend to run")
    for i, kind in kinds:
        kind.layers = [i]
    out = _spread(kinds)
    if len(out) == 1:
        out[0].label = ""
    return out


SINK_TYPES = frozenset({"gpt_oss"})
"""Model types whose attention adds learned per-head sink logits to the softmax (transformers' GptOssAttention.sinks);
no config key names them."""


def _sinks(src: _Source, out: dict[str, Any], origin: dict[str, str]) -> None:
    if src.model_type in SINK_TYPES:
        out["sinks"] = True
        origin["sinks"] = (f"{src.prefix}model_type {src.model_type}: learned per-head sink logits in every "
                           f"attention layer (no config key names them)")


def _per_kind_dims(src: _Source, kinds: list[_Kind]) -> None:
    """Gemma 4's full-attention layers: their own head dim, and their own KV heads when keys are the values."""
    if not (src.model_type.startswith("gemma4") or src.data.get("global_head_dim") is not None):
        return
    p = src.prefix
    dim, dim_key = src.data.get("global_head_dim"), f"{p}global_head_dim"
    if dim is None:
        # transformers' Gemma4TextConfig pops global_head_dim with a default of 512
        dim, dim_key = 512, f"{p}global_head_dim absent: gemma4 default 512"
    dim = src.count(dim_key, dim)
    k_eq_v_raw = src.data.get("attention_k_eq_v")
    k_eq_v = True if k_eq_v_raw is None else src.flag("attention_k_eq_v", k_eq_v_raw)
    kv_raw = src.data.get("num_global_key_value_heads")
    for kind in kinds:
        if kind.window is not None or kind.mask == "arbitrary":
            continue
        kind.fields["hdim"] = kind.fields["hdim_v"] = dim
        kind.field_origin["hdim"] = kind.field_origin["hdim_v"] = f"{dim_key} (full-attention layers)"
        if k_eq_v and kv_raw is not None:
            kind.fields["kv_heads"] = src.count("num_global_key_value_heads", kv_raw)
            kind.field_origin["kv_heads"] = (f"{p}num_global_key_value_heads (full-attention layers, "
                                             f"attention_k_eq_v={'absent: true' if k_eq_v_raw is None else 'true'})")
        elif kv_raw is not None:
            kind.notes.append(f"{p}num_global_key_value_heads={kv_raw} is not used: attention_k_eq_v=false keeps "
                              f"{p}num_key_value_heads on these layers")
        if k_eq_v and k_eq_v_raw is not None:
            kind.notes.append(f"{p}attention_k_eq_v=true: these layers have no value projection, the values are the "
                              f"keys (same tensor shapes for the kernel)")


def _kv_sharing(src: _Source, kinds: list[_Kind]) -> None:
    raw = src.data.get("num_kv_shared_layers")
    layers = _layers(src)
    if not raw or layers is None:
        return
    shared = src.count("num_kv_shared_layers", raw)
    first = max(layers - shared, 0)
    for kind in kinds:
        mine = [i for i in kind.layers if i >= first]
        if mine:
            kind.notes.append(f"{len(mine)} of these layers ({layer_ranges(mine)}) reuse the K/V of the last earlier "
                              f"layer of their kind ({src.prefix}num_kv_shared_layers={shared}): same attention "
                              f"shape, no K/V of their own")


def _nope(src: _Source, kinds: list[_Kind]) -> None:
    flags = src.data.get("no_rope_layers")
    if not isinstance(flags, list):
        return
    nope = {i for i, f in enumerate(flags) if f == 0 and not isinstance(f, bool)}
    for kind in kinds:
        mine = [i for i in kind.layers if i in nope]
        if mine:
            kind.notes.append(f"{len(mine)} of these layers ({layer_ranges(mine)}) are NoPE "
                              f"({src.prefix}no_rope_layers = 0): no rotary embedding, the same kernel shape")


def _sparse_indexer(src: _Source, kinds: list[_Kind], seqlen: int | None) -> list[str]:
    """DeepSeek V3.2's indexer keeps index_topk keys per query: past that many keys only an arbitrary mask says so."""
    topk_raw = src.data.get("index_topk")
    if topk_raw is None:
        return []
    p = src.prefix
    topk = src.count("index_topk", topk_raw)
    heads, dim = src.data.get("index_n_heads"), src.data.get("index_head_dim")
    note = (f"{p}index_topk={topk}: a lightning indexer ({heads} heads of {dim}) picks {topk} keys per query "
            f"(DeepSeek Sparse Attention); up to {topk} keys this is dense causal attention, past it a per-query key "
            f"subset that no mask value but arbitrary expresses (the sparse MLA kernels are not modelled here)")
    if seqlen is not None and seqlen > topk:
        for kind in kinds:
            kind.mask = "arbitrary"
            kind.mask_origin = f"{p}index_topk={topk} < seqlen {seqlen}: each query attends to its own {topk} keys"
    return [note]


def _vision_towers(file: str, doc: Mapping[str, Any], text: str, name: str, common: Mapping[str, Any],
                   origin: Mapping[str, str]) -> list[KindReading]:
    """A vision encoder's self-attention: bidirectional over the patches of one image."""
    sub = doc.get("vision_config")
    if not isinstance(sub, dict):
        return []
    src = _Source(file, sub, prefix="vision_config.", outer=doc, model_type=str(sub.get("model_type") or "").lower())
    if not _has_heads(src) or not (src.has("head_dim") or src.has("hidden_size")):
        return []
    values: dict[str, Any] = {}
    vorigin: dict[str, str] = {}
    _heads_and_dims(src, values, vorigin)
    if "dtype" in common:
        values["dtype"], vorigin["dtype"] = common["dtype"], origin["dtype"]
    values["mask"], vorigin["mask"] = "none", "vision_config: an encoder over the patches of one image, no mask"
    vorigin["window"] = "vision_config: every patch attends to every patch, no window"
    image, patch = src.data.get("image_size"), src.data.get("patch_size")
    if isinstance(image, int) and isinstance(patch, int) and patch > 0 and image >= patch:
        tokens = (image // patch) ** 2
        values["seqlen"] = tokens
        vorigin["seqlen_q"] = vorigin["seqlen_kv"] = (
            f"(vision_config.image_size / vision_config.patch_size)^2 = ({image} / {patch})^2 patches")
    else:
        vorigin["seqlen_q"] = vorigin["seqlen_kv"] = "vision_config gives no image_size and patch_size: unknown"
    values["name"] = f"{name} vision tower"
    values["origin"] = vorigin
    config = make_config(values, where=file)._replace(source=(file, _key_line(text, "vision_config") or 1))
    layers = _layers(src)
    if layers is None and src.data.get("depth") is not None:
        # Qwen2-VL, Qwen3-VL and Qwen3.5 vision configs count their blocks in `depth`
        layers = src.count("depth", src.data["depth"])
    return [KindReading("vision tower", config, tuple(range(layers or 0)), (), tower="vision")]


def layer_ranges(layers: list[int]) -> str:
    """Layer indices with runs shortened (0, 2-5, 9), as the reports print them."""
    parts: list[str] = []
    start = prev = None
    for i in sorted(layers):
        if prev is not None and i == prev + 1:
            prev = i
            continue
        if start is not None:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = i
    if start is not None:
        parts.append(str(start) if start == prev else f"{start}-{prev}")
    return ", ".join(parts)
