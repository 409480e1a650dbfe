"""Benchmarks for the offline path: `explain` start-up against `import typer, rich`, and 1,000 configs in one run.

Run: python benchmarks/startup_and_scale.py [--runs 15]
Targets (issue "attndoctor core"): explain median <= 2x the import baseline; 1,000 configs in under 3 s.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def wall(cmd: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return times


def make_configs(path: Path, count: int) -> None:
    rng = random.Random(7)
    with path.open("w") as out:
        for i in range(count):
            heads = rng.choice([8, 12, 16, 32, 64, 128])
            cfg = {
                "name": f"cfg{i}",
                "batch": rng.choice([1, 2, 4, 8]),
                "heads": heads,
                "kv_heads": rng.choice([h for h in (1, 2, 4, 8, heads) if heads % h == 0]),
                "hdim": rng.choice([64, 80, 96, 128, 160, 192, 256]),
                "seqlen_q": rng.choice([1, 128, 512, 1000, 2048, 4096, 8192, 16534]),
                "seqlen_kv": rng.choice([128, 512, 2048, 4096, 8192]),
                "dtype": rng.choice(["bf16", "fp16", "fp32"]),
                "train": rng.random() < 0.5,
                "mask": rng.choice(["none", "causal", "padding", "arbitrary"]),
                "dropout": rng.choice([0.0, 0.0, 0.1]),
                "cp": rng.choice([1, 1, 2, 4]),
            }
            out.write(json.dumps(cfg) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    exe = shutil.which("attndoctor") or sys.exit("attndoctor is not on PATH: pip install . first")
    base = wall([sys.executable, "-c", "import typer, rich"], args.runs)
    explain_cmd = [exe, "explain", "--hdim", "192", "--hdim-v", "128", "--seqlen", "4096", "--heads", "16",
                   "--dtype", "bf16", "--train", "--causal", "--gpu", "H100", "--te", "2.5", "--cudnn", "9.1.0"]
    wall(explain_cmd, 2)  # warm the rule cache and .pyc files
    explain = wall(explain_cmd, args.runs)
    with tempfile.TemporaryDirectory() as tmp:
        configs = Path(tmp) / "configs.jsonl"
        make_configs(configs, 1000)
        many_cmd = [exe, "explain", "--config-file", str(configs), "--gpu", "H100", "--torch", "2.11.0",
                    "--cudnn", "9.19.0", "--te", "2.5", "--flash-attn", "2.8.3", "--format", "json"]
        many = wall(many_cmd, 3)
    b, e, m = statistics.median(base), statistics.median(explain), statistics.median(many)
    print(f"{'measure':44} {'median':>9}")
    label = 'python -c "import typer, rich"'
    print(f"{label:44} {b * 1000:7.0f} ms")
    print(f"{'attndoctor explain (one config)':44} {e * 1000:7.0f} ms   ratio {e / b:.2f}x (target <= 2x)")
    print(f"{'attndoctor explain (1,000 configs, json)':44} {m * 1000:7.0f} ms   (target < 3000 ms)")


if __name__ == "__main__":
    main()
