"""The attention kinds (global, sliding, chunked) a config.json implies, read as each model family states them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .model_keys import _layers, _Source

SLIDING_KINDS = frozenset({"sliding_attention", "sliding", "local", "local_attention", "swa"})
FULL_KINDS = frozenset({"full_attention", "full", "global", "global_attention", "attention"})
CHUNKED_KINDS = frozenset({"chunked_attention"})

# Layer kinds that run no softmax attention: they need no attention backend, so they give no config.
NON_SOFTMAX_KINDS = frozenset({"linear_attention", "mamba", "mamba2", "conv", "recurrent", "ssm", "rwkv",
                               "deltanet", "gated_deltanet", "lightning_attention"})


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
    chunk: int | None = None


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

    layer_types, types_key = layer_types_of(src)
    if layer_types is not None:
        return _from_layer_types(src, layer_types, use_sw, use_sw_note, skipped, types_key)

    for family in (_modernbert, _gemma2, _window_pattern, _llama4_chunks):
        kinds = family(src, layers)
        if kinds is not None:
            return kinds
    return _one_window(src, layers, use_sw, use_sw_note)


def layer_types_of(src: _Source) -> tuple[Any, str]:
    """Each layer's kind as layer_types spells it, from layer_types or the keys older hybrids state it with."""
    p = src.prefix
    layers = _layers(src)
    layer_types = src.data.get("layer_types")
    if layer_types is not None:
        return layer_types, f"{p}layer_types"
    interval = src.data.get("full_attention_interval")
    if interval is not None and layers is not None:
        # transformers' Qwen3NextConfig: layer i is linear attention unless (i + 1) % full_attention_interval == 0
        every = src.count("full_attention_interval", interval)
        return ([("linear_attention" if (i + 1) % every else "full_attention") for i in range(layers)],
                f"{p}full_attention_interval={every} (layer_types absent)")
    attn_types = src.data.get("attn_type_list")
    if attn_types is not None:
        # MiniMax-M1 modeling_minimax_m1.py: 0 builds MiniMaxM1LightningAttention, 1 the softmax attention
        if (not isinstance(attn_types, list) or not attn_types
                or not all(t in (0, 1) and not isinstance(t, bool) for t in attn_types)):
            raise src.fail(f"{p}attn_type_list: expected a list of 0 (lightning attention) and 1 (softmax "
                           f"attention), got {attn_types!r:.60}")
        if layers is not None and len(attn_types) != layers:
            raise src.fail(f"{p}attn_type_list has {len(attn_types)} entries for {layers} layers")
        return ([("full_attention" if t == 1 else "linear_attention") for t in attn_types],
                f"{p}attn_type_list (0 = lightning linear attention, 1 = softmax attention)")
    return None, f"{p}layer_types"


def _modernbert(src: _Source, layers: int | None) -> list[_Kind] | None:
    """ModernBERT: a global layer every global_attn_every_n_layers, local_attention split over both sides between."""
    if src.model_type != "modernbert":
        return None
    local, local_key = src.get("local_attention")
    every, every_key = src.get("global_attn_every_n_layers")
    if local is None:
        return None
    half = src.count("local_attention", local) // 2
    every_n = src.count(every_key, every) if every is not None else 3
    every_note = every_key if every is not None else f"{every_key} absent: ModernBERT default 3"
    kinds = [(0, _Kind("global", None, f"layers i % {every_n} == 0 ({every_note}): no window"))]
    if every_n > 1:
        kinds.append((1, _Kind("local (sliding window)", (half, half),
                               f"{local_key}/2 each side ({half}, {half}): layers i % {every_n} != 0")))
    return _spread(kinds)


def _gemma2(src: _Source, layers: int | None) -> list[_Kind] | None:
    """Gemma-2 configs without layer_types: even layers slide, odd layers are global."""
    if not src.model_type.startswith("gemma2"):
        return None
    size, key = _window_size(src)
    if size is None:
        return None
    if layers == 1:
        return [_sliding("", size, key, "gemma2: layer 0 uses the window")]
    n_local = None if layers is None else (layers + 1) // 2
    count = "" if layers is None else f" ({n_local} of {layers} layers)"
    local = _sliding("local (sliding window)", size, key, f"gemma2: even layers 0, 2, 4, ...{count}")
    local.layers = _every(layers, lambda i: i % 2 == 0)
    return [local, _Kind("global", None, "gemma2: odd layers 1, 3, 5, ... have no window",
                         layers=_every(layers, lambda i: i % 2 == 1))]


def _window_pattern(src: _Source, layers: int | None) -> list[_Kind] | None:
    """Gemma-3's sliding_window_pattern: every pattern-th layer is global, the others slide."""
    pattern, pattern_key = src.first(("sliding_window_pattern", "_sliding_window_pattern"))
    if pattern is None:
        return None
    pattern = src.count(pattern_key, pattern)
    size, key = _window_size(src)
    if size is None:
        return None
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


def _llama4_chunks(src: _Source, layers: int | None) -> list[_Kind] | None:
    """Llama 4: chunked attention on the RoPE layers, global attention on the NoPE layers (no_rope_layers = 0)."""
    if not src.model_type.startswith("llama4"):
        return None
    p = src.prefix
    if "attention_chunk_size" in src.data and src.data["attention_chunk_size"] is None:
        return None
    chunk, chunk_key = src.get("attention_chunk_size")
    if chunk is None:
        # transformers' Llama4TextConfig: attention_chunk_size defaults to 8192
        chunk, chunk_key = 8192, f"{p}attention_chunk_size absent: llama4 default 8192"
    chunk = src.count(chunk_key, chunk)
    flags = src.data.get("no_rope_layers")
    if isinstance(flags, list) and flags:
        # Llama4TextConfig: layer i is chunked_attention when no_rope_layers[i] is 1 (it uses RoPE), else full
        if layers is not None and len(flags) != layers:
            raise src.fail(f"{p}no_rope_layers has {len(flags)} entries for {layers} layers")
        nope = [i for i, f in enumerate(flags) if f == 0 and not isinstance(f, bool)]
        rope = [i for i in range(len(flags)) if i not in nope]
        rule = f"{p}no_rope_layers = 1"
        nope_rule = f"{p}no_rope_layers = 0: NoPE layers are global"
    else:
        raw, interval_key = src.get("no_rope_layer_interval")
        if raw is None:
            interval, interval_key = 4, f"{p}no_rope_layer_interval absent: llama4 default 4"
        else:
            interval = src.count(interval_key, raw)
        absent = "empty" if isinstance(flags, list) else "absent"
        nope = _every(layers, lambda i: (i + 1) % interval == 0)
        rope = _every(layers, lambda i: (i + 1) % interval != 0)
        rule = f"layers with (i + 1) % {interval} != 0 ({p}no_rope_layers {absent}, {interval_key})"
        nope_rule = f"every {interval}th layer is NoPE and global ({p}no_rope_layers {absent}, {interval_key})"
    chunked = _chunked(chunk, chunk_key, rule)
    chunked.layers = rope
    out = [(rope[0] if rope else 0, chunked)] if rope or layers is None else []
    if nope or layers is None:
        out.append((nope[0] if nope else 1, _Kind("global (NoPE)", None, f"{nope_rule}: no window", layers=nope)))
    return _spread(out)


def _one_window(src: _Source, layers: int | None, use_sw: bool | None, use_sw_note: str) -> list[_Kind]:
    """One sliding_window for every layer, or none; Qwen's max_window_layers keeps the first layers global."""
    p = src.prefix
    size, key = _window_size(src)
    if use_sw is False:
        return [_Kind("", None, f"{use_sw_note}: no window" + (f" ({key}={size} unused)" if size else ""))]
    if size is None:
        if use_sw:
            return [_Kind("", None, f"{use_sw_note} but {key} is null: no window")]
        null = key.removeprefix(p) in src.data
        return [_Kind("", None, f"{key} is null: no window" if null else "no sliding_window: no window")]
    if use_sw and (src.data.get("max_window_layers") is not None or src.model_type.startswith("qwen")):
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
                             f"(or run as {chunk}-token sequences with a causal mask)", chunk=chunk)


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
