"""Many configs from one JSONL file: wall time and peak memory of `attndoctor explain` per output format and size.

Run: python benchmarks/scale.py [--sizes 1000,20000,50000] [--formats text,json,jsonl] [--random]
Target (issue #12): 20,000 configs in <= 10 s and <= 300 MB peak memory, with --format jsonl (the format for big
runs); json, which writes 15 times as much, is measured beside it.
The configs are realistic sweeps (shapes of well-known models x sequence lengths, batch sizes, dtypes, masks,
features), named one by one, with about 10% repeated lines; --random draws every field independently instead (almost
no two configs alike: the worst case for the shared-verdict caches). Peak memory is the largest sum of resident
memory over the CLI's process tree (its worker processes included), sampled every 20 ms from /proc (Linux). Output
goes to /dev/null.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MODELS: list[tuple[str, int, int, int, int | None, dict[str, Any]]] = [
    ("Llama-3-8B", 32, 8, 128, None, {}), ("Llama-3-70B", 64, 8, 128, None, {}),
    ("Llama-3-405B", 128, 8, 128, None, {}), ("Llama-2-7B", 32, 32, 128, None, {}),
    ("Mistral-7B", 32, 8, 128, None, {"window": [4096, 0]}), ("Mixtral-8x7B", 32, 8, 128, None, {}),
    ("Gemma-2-9B", 16, 8, 256, None, {"softcap": 50.0, "window": [4096, 0]}),
    ("Gemma-2-27B", 32, 16, 128, None, {"softcap": 50.0}), ("Qwen2-72B", 64, 8, 128, None, {}),
    ("Qwen2.5-7B", 28, 4, 128, None, {}), ("DeepSeek-V3 MLA", 128, 128, 192, 128, {}),
    ("Falcon-7B", 71, 1, 64, None, {}), ("Phi-3-mini", 32, 32, 96, None, {}),
    ("BERT-base", 12, 12, 64, None, {"mask": "none"}), ("ViT-L", 16, 16, 64, None, {"mask": "none"}),
    ("SD-UNet", 8, 8, 80, None, {"mask": "none"}), ("SD-UNet-160", 8, 8, 160, None, {"mask": "none"}),
]
SEQLENS = [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 131072]
LAYOUTS = [None] * 12 + ["bshd", "sbhd", "thd", "bhsd", "sbhd_sbhd_sbhd", "bshd_bshd_bshd", "thd_thd_thd", "sb3hd"]
ENV = ["--gpu", "H100", "--torch", "2.11.0", "--cudnn", "9.19.0"]


def realistic(rng: random.Random, i: int) -> dict[str, Any]:
    """One job of a sweep: a model's attention shape, a sequence length, a batch, a dtype, training or inference."""
    name, heads, kv_heads, hdim, hdim_v, extra = rng.choice(MODELS)
    train = rng.random() < 0.5
    cfg: dict[str, Any] = {"name": f"{name} job{i}", "batch": rng.choice([1, 2, 4, 8, 16, 32, 64]), "heads": heads,
                           "kv_heads": kv_heads, "hdim": hdim, "train": train,
                           "dtype": rng.choices(["bf16", "fp16", "fp8", "fp32"], [70, 20, 5, 5])[0]}
    if hdim_v:
        cfg["hdim_v"] = hdim_v
    seqlen = rng.choice(SEQLENS) if rng.random() < 0.9 else rng.randint(1, 32768)
    if not train and rng.random() < 0.3:
        cfg["seqlen_q"], cfg["seqlen_kv"] = 1, seqlen  # decoding
    else:
        cfg["seqlen"] = seqlen
    cfg["mask"] = extra.get("mask") or rng.choices(["causal", "padding-causal", "causal-bottom-right"], [80, 15, 5])[0]
    cfg.update({k: v for k, v in extra.items() if k != "mask"})
    if train and rng.random() < 0.1:
        cfg["dropout"] = 0.1
    if train and rng.random() < 0.25:
        cfg["cp"] = rng.choice([2, 4, 8])
        cfg["cp_comm"] = rng.choice(["p2p", "a2a", "all_gather"])
    layout = rng.choice(LAYOUTS)
    if layout:
        cfg["layout"] = layout
    if rng.random() < 0.05:
        cfg["deterministic"] = True
    if not train and rng.random() < 0.1:
        cfg["paged_kv"] = True
    return cfg


def independent(rng: random.Random, i: int) -> dict[str, Any]:
    """Every field drawn on its own: almost every config is unlike every other."""
    heads = rng.choice([8, 12, 16, 32, 64, 128])
    return {"name": f"cfg{i}", "batch": rng.choice([1, 2, 4, 8]), "heads": heads,
            "kv_heads": rng.choice([h for h in (1, 2, 4, 8, heads) if heads % h == 0]),
            "hdim": rng.choice([64, 80, 96, 128, 160, 192, 256]),
            "seqlen_q": rng.choice([1, 128, 512, 1000, 2048, 4096, 8192, 16534]),
            "seqlen_kv": rng.choice([128, 512, 2048, 4096, 8192]), "dtype": rng.choice(["bf16", "fp16", "fp32"]),
            "train": rng.random() < 0.5, "mask": rng.choice(["none", "causal", "padding", "arbitrary"]),
            "dropout": rng.choice([0.0, 0.0, 0.1]), "cp": rng.choice([1, 1, 2, 4])}


def write_configs(path: Path, count: int, *, seed: int = 7, repeats: float = 0.1, random_fields: bool = False) -> None:
    """`count` JSON lines; about `repeats` of them repeat an earlier line word for word."""
    rng = random.Random(seed)
    make = independent if random_fields else realistic
    earlier: list[str] = []
    with path.open("w") as out:
        for i in range(count):
            if earlier and rng.random() < repeats:
                line = rng.choice(earlier)
            else:
                line = json.dumps(make(rng, i))
                if len(earlier) < 5000:
                    earlier.append(line)
            out.write(line + "\n")


SAMPLE_EVERY = 0.02
"""Seconds between samples of the process tree's memory."""


PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024 if hasattr(os, "sysconf") else 4
_PARENTS: dict[int, int] = {}
"""Parent of every pid seen (it never changes), so a sample reads /proc/<pid>/stat only for new processes."""


def tree_rss_kb(root: int) -> int:
    """Resident memory of a process and all its descendants (worker processes included), in KB, from /proc; cheap
    enough (a directory listing, and one small file per process of the tree) not to slow down what it measures."""
    pids = {int(name) for name in os.listdir("/proc") if name.isdigit()}
    for pid in pids - _PARENTS.keys():
        try:
            with open(f"/proc/{pid}/stat") as handle:
                _PARENTS[pid] = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            _PARENTS[pid] = -1
    for pid in _PARENTS.keys() - pids:
        del _PARENTS[pid]
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in _PARENTS.items() if ppid == parent and pid not in tree]
        tree.update(children)
        frontier.extend(children)
    total = 0
    for pid in tree:
        try:
            with open(f"/proc/{pid}/statm") as handle:
                total += int(handle.read().split()[1]) * PAGE_KB
        except (OSError, ValueError, IndexError):
            continue
    return total


def run_measured(cmd: list[str]) -> tuple[float, float, int]:
    """(wall seconds, peak summed RSS of the command's process tree in MB, exit code)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, tree_rss_kb(proc.pid))
        time.sleep(SAMPLE_EVERY)
    return time.perf_counter() - start, peak / 1024, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,20000,50000")
    parser.add_argument("--formats", default="text,json,jsonl")
    parser.add_argument("--random", action="store_true", help="independent random fields instead of model sweeps")
    args = parser.parse_args()
    exe = shutil.which("attndoctor") or sys.exit("attndoctor is not on PATH: pip install . first")
    sizes = sorted(int(s) for s in args.sizes.split(","))
    print(f"{'configs':>8} {'format':6} {'wall':>8} {'peak RSS':>9}  exit   (RSS: the whole process tree, workers too)")
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            path = Path(tmp) / f"configs-{size}.jsonl"
            write_configs(path, size, random_fields=args.random)
            for fmt in args.formats.split(","):
                cmd = [exe, "explain", "--config-file", str(path), *ENV, "--format", fmt]
                wall, peak, code = run_measured(cmd)
                print(f"{size:>8} {fmt:6} {wall:7.2f}s {peak:7.0f} MB  {code}", flush=True)


if __name__ == "__main__":
    main()
