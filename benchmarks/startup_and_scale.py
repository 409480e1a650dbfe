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


def wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def interleaved(commands: dict[str, list[str]], runs: int) -> dict[str, list[float]]:
    """Each round runs every command once, in turn, so that a slow spell of a shared machine hits them all alike."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, cmd in commands.items():
            times[name].append(wall(cmd))
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
    explain_cmd = [exe, "explain", "--hdim", "192", "--hdim-v", "128", "--seqlen", "4096", "--heads", "16",
                   "--dtype", "bf16", "--train", "--causal", "--gpu", "H100", "--te", "2.5", "--cudnn", "9.1.0"]
    commands = {
        'python -c "import typer, rich"': [sys.executable, "-c", "import typer, rich"],
        "attndoctor explain (text)": explain_cmd,
        "attndoctor explain --format json": explain_cmd + ["--format", "json"],
    }
    interleaved(commands, 2)  # warm the rule cache and .pyc files
    times = interleaved(commands, args.runs)
    with tempfile.TemporaryDirectory() as tmp:
        configs = Path(tmp) / "configs.jsonl"
        make_configs(configs, 1000)
        many_cmd = [exe, "explain", "--config-file", str(configs), "--gpu", "H100", "--torch", "2.11.0",
                    "--cudnn", "9.19.0", "--te", "2.5", "--flash-attn", "2.8.3", "--format", "json"]
        many = statistics.median(wall(many_cmd) for _ in range(3))
    medians = {name: statistics.median(t) for name, t in times.items()}
    base = next(iter(medians.values()))
    print(f"{'measure (median of ' + str(args.runs) + ' interleaved runs)':44} {'median':>9}")
    for name, value in medians.items():
        ratio = "" if value is base else f"   ratio {value / base:.2f}x (target <= 2x)"
        print(f"{name:44} {value * 1000:7.0f} ms{ratio}")
    print(f"{'attndoctor explain (1,000 configs, json)':44} {many * 1000:7.0f} ms   (target < 3000 ms)")


if __name__ == "__main__":
    main()
