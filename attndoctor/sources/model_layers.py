"""What some layers of a kind do apart from the rest: own head dim, shared K/V, NoPE, a sparse indexer's mask."""

from __future__ import annotations

from .model_keys import _layers, _Source
from .model_kinds import _Kind


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
        if mine and len(mine) == len(kind.layers) and kind.label == "global":
            kind.label = "global (NoPE)"
        if mine:
            kind.notes.append(f"{len(mine)} of these layers ({layer_ranges(mine)}) are NoPE "
                              f"({src.prefix}no_rope_layers = 0): no rotary embedding, the same kernel shape")


def _chunk_fits(kinds: list[_Kind], seqlen: int | None) -> None:
    """Chunked layers over no more tokens than one chunk: the block-diagonal mask is the causal mask."""
    for kind in kinds:
        if kind.chunk is None:
            continue
        if seqlen is not None and seqlen <= kind.chunk:
            kind.mask = "causal"
            kind.mask_origin = (f"seqlen {seqlen} <= attention_chunk_size {kind.chunk}: one chunk, so the "
                                f"block-diagonal mask is causal; past {kind.chunk} tokens it takes a mask tensor")
        else:
            kind.notes.append(f"a kernel without mask tensors runs these layers when each {kind.chunk}-token chunk "
                              f"is given as its own sequence (varlen offsets every {kind.chunk} tokens, or chunks "
                              f"folded into the batch) with a causal mask")


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
