"""The SDPA agreement grid of the support-matrix issue, as JSON lines for `attndoctor verify --config-file`.

Head dims 8 to 320 (multiples of 8 and not), V head dim different from Q/K, seqlens 1 to 4097 with
seqlen_q != seqlen_kv, MHA/GQA/MQA, no mask / causal / arbitrary mask, dropout, fp32/fp16/bf16, training and
inference. The full product is large; a fixed-seed sample of it keeps a GPU run to a few minutes, and every axis
value appears many times. Usage: python benchmarks/sdpa_acceptance_grid.py grid.jsonl [--count 400] [--seed 11]
"""

from __future__ import annotations

import argparse
import itertools
import json
import random

HDIMS = [(8, 8), (24, 24), (64, 64), (100, 100), (128, 128), (136, 136), (192, 192), (256, 256), (264, 264),
         (320, 320), (192, 128), (128, 64), (64, 128), (96, 96), (4, 4)]
SEQS = [(1, 1), (1, 128), (128, 1), (256, 256), (130, 257), (257, 130), (64, 4097), (4097, 64), (512, 512)]
HEADS = [(8, 8), (8, 2), (8, 1)]
MASKS = ["none", "causal", "arbitrary"]
DTYPES = ["bf16", "fp16", "fp32"]
DROPOUT = [0.0, 0.1]
TRAIN = [True, False]


def grid(count: int, seed: int) -> list[dict]:
    space = list(itertools.product(HDIMS, SEQS, HEADS, MASKS, DTYPES, DROPOUT, TRAIN))
    rng = random.Random(seed)
    rows = []
    for i, ((d, dv), (sq, sk), (h, hk), mask, dtype, dropout, train) in enumerate(rng.sample(space, count)):
        rows.append({"name": f"sdpa{i}", "batch": 2, "heads": h, "kv_heads": hk, "hdim": d, "hdim_v": dv,
                     "seqlen_q": sq, "seqlen_kv": sk, "dtype": dtype, "mask": mask, "dropout": dropout,
                     "train": train, "layout": "bshd"})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("path")
    parser.add_argument("--count", type=int, default=400)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    rows = grid(args.count, args.seed)
    with open(args.path, "w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")
    print(f"{len(rows)} configs -> {args.path}")


if __name__ == "__main__":
    main()
