"""Write a grid of small SDPA configs as JSON lines, for `attndoctor verify --config-file grid.jsonl --record ...`.

One worker runs every probe of the grid (one case cache: train and infer of a shape share data and reference), so
a grid of a few hundred configs takes seconds per hundred probes on an H100. Usage:
    python benchmarks/verify_grid.py grid.jsonl [--size small|medium|large|full|features|flex|fa4]
small takes every 18th combination (90 configs), medium every 17th (160), large every 4th (810), full all of them;
features is another grid: windows, biases, decode and 64-mod-128 lengths, head dim 512 (every 7th: 618 configs;
the records of 2026-11-27 took every 8th, which left only bf16 training with equal head counts);
flex the same with softcaps and fp32 for FlexAttention (every 89th: 146 configs); fa4 what flash-attn 4 takes
(no masks or biases; windows, softcaps, decode, GQA, 192/128 and 160, bshd and thd; every 23rd: 401 configs).
"""

from __future__ import annotations

import itertools
import json
import sys


EVERY = {"small": 18, "medium": 17, "large": 4, "full": 1}


def grid(size: str = "small") -> list[dict]:
    out = []
    masks = ["none", "causal", "causal-bottom-right", "padding", "arbitrary"]
    heads = [(8, 8), (8, 2), (8, 1)]
    dims = [(64, 64), (128, 128), (96, 96), (256, 256), (192, 128), (72, 72)]
    dtypes = ["bf16", "fp16", "fp32"]
    layouts = [("bshd", False), ("sbhd", True), ("thd", False)]
    seqs = [(256, 256), (130, 257)]
    for i, (mask, (h, hk), (d, dv), dtype, (layout, fused), (sq, sk), train) in enumerate(
            itertools.product(masks, heads, dims, dtypes, layouts, seqs, (True, False))):
        if i % EVERY[size]:
            continue
        if fused and (sq != sk):
            continue
        out.append({"batch": 2, "heads": h, "kv_heads": hk, "hdim": d, "hdim_v": dv, "seqlen_q": sq, "seqlen_kv": sk,
                    "dtype": dtype, "mask": mask, "layout": layout, "qkv_fused": fused, "train": train,
                    "name": f"g{i}"})
    return out


def features(flex: bool = False) -> list[dict]:
    """Windows, ALiBi and post-scale biases, decode (1 query), lengths of 64 mod 128 and head dim 512 on bshd; for
    FlexAttention (`flex`) softcaps and fp32 too, every 89th."""
    out = []
    masks = ["none", "causal", "causal-bottom-right", "padding", "arbitrary"]
    windows = [[-1, -1], [64, 0], [32, 32]]
    biases = ["none", "alibi", "post-scale"]
    dims = [64, 128, 256, 512]
    seqs = [(1, 300), (192, 192), (1024, 1024)]
    caps = (0.0, 30.0) if flex else (0.0,)
    dtypes = ("bf16", "fp16", "fp32") if flex else ("bf16", "fp16")
    for i, (mask, window, bias, d, (sq, sk), dtype, train, (h, hk), cap) in enumerate(itertools.product(
            masks, windows, biases, dims, seqs, dtypes, (True, False), ((8, 8), (8, 2)), caps)):
        if i % (89 if flex else 7):
            continue
        out.append({"batch": 2, "heads": h, "kv_heads": hk, "hdim": d, "hdim_v": d, "seqlen_q": sq, "seqlen_kv": sk,
                    "dtype": dtype, "mask": mask, "window": window, "bias": bias, "softcap": cap, "layout": "bshd",
                    "train": train, "name": f"f{i}"})
    return out


def fa4() -> list[dict]:
    """The configs flash-attn's API can express, varied where flash-attn 4's checks differ."""
    out = []
    masks = ["none", "causal", "causal-bottom-right", "padding"]
    windows = [[-1, -1], [64, 0], [32, 32]]
    dims = [(64, 64), (96, 96), (128, 128), (160, 160), (192, 128), (256, 256)]
    seqs = [(1, 300), (192, 192), (1024, 1024), (130, 257)]
    for i, (mask, window, cap, (d, dv), (sq, sk), layout, dtype, train, (h, hk)) in enumerate(itertools.product(
            masks, windows, (0.0, 30.0), dims, seqs, ("bshd", "thd"), ("bf16", "fp16"), (True, False),
            ((8, 8), (8, 2)))):
        if i % 23:
            continue
        out.append({"batch": 2, "heads": h, "kv_heads": hk, "hdim": d, "hdim_v": dv, "seqlen_q": sq, "seqlen_kv": sk,
                    "dtype": dtype, "mask": mask, "window": window, "softcap": cap, "layout": layout, "train": train,
                    "name": f"a{i}"})
    return out


if __name__ == "__main__":
    path = sys.argv[1] if len(sys.argv) > 1 else "grid.jsonl"
    size = sys.argv[sys.argv.index("--size") + 1] if "--size" in sys.argv else "small"
    rows = fa4() if size == "fa4" else features(size == "flex") if size in ("features", "flex") else grid(size)
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    print(f"{len(rows)} configs -> {path}")
