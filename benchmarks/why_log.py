"""Time `attndoctor why --log` on a generated 200,000-line training log (ordinary lines, a traceback at the end).

Not a timed test: run `python benchmarks/why_log.py [--lines N]`; it prints the wall time of the whole command and
of reading the text, and the cause found.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRACEBACK = """Traceback (most recent call last):
  File "/workspace/train.py", line 412, in <module>
    loss.backward()
  File "/venv/lib/python3.12/site-packages/torch/_tensor.py", line 626, in backward
    torch.autograd.backward(
  File "/venv/lib/python3.12/site-packages/flash_attn/flash_attn_interface.py", line 91, in _flash_attn_forward
    out, softmax_lse, S_dmask, rng_state = flash_attn_2_cuda.fwd(
RuntimeError: CUDA error: no kernel image is available for execution on the device
"""


def make_log(path: Path, lines: int, seed: int = 0) -> None:
    """Ordinary training chatter: step lines, throughput, checkpoint and eval lines, a few warnings."""
    rng = random.Random(seed)
    kinds = [
        lambda i: f"[2025-06-01 12:{i // 60 % 60:02d}:{i % 60:02d}] step {i} | loss {rng.uniform(1, 4):.4f} | lr "
                  f"{rng.uniform(1e-5, 3e-4):.2e} | grad_norm {rng.uniform(0.1, 3):.3f} | tokens/s {rng.randint(9000, 12000)}",
        lambda i: f"{i:>7}it [{i // 600:02d}:{i // 10 % 60:02d}, {rng.uniform(1, 9):.2f}it/s, loss={rng.uniform(1, 4):.3f}]",
        lambda i: f"INFO:trainer:Saving model checkpoint to /ckpt/checkpoint-{i}",
        lambda i: f"{{'eval_loss': {rng.uniform(1, 3):.4f}, 'eval_runtime': {rng.uniform(10, 90):.2f}, 'epoch': {i / 1e4:.2f}}}",
        lambda i: "wandb: WARNING Step must only increase in log calls",
    ]
    weights = [70, 20, 4, 4, 2]
    with path.open("w") as out:
        for i in range(lines):
            out.write(rng.choices(kinds, weights)[0](i) + "\n")
        out.write(TRACEBACK)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=200_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "train.log"
        make_log(log, args.lines)
        size = log.stat().st_size
        from attndoctor.why.catalogue import load_catalogue
        from attndoctor.why.reader import read_text

        catalogue = load_catalogue()
        text = log.read_text()
        start = time.perf_counter()
        reading = read_text(text, catalogue)
        read_s = time.perf_counter() - start
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "attndoctor", "why", "--no-here", "--log", str(log)],
                              capture_output=True, text=True, check=False)
        total_s = time.perf_counter() - start
        cause = next((line.strip() for line in done.stdout.splitlines() if "likely cause" in line), "(none)")
        print(f"log: {args.lines + TRACEBACK.count(chr(10)):,} lines, {size / 1e6:.1f} MB; catalogue: "
              f"{len(catalogue)} patterns; hits: {len(reading.hits)}")
        print(f"read_text: {read_s:.2f} s   attndoctor why --log (whole command): {total_s:.2f} s   exit {done.returncode}")
        print(cause)


if __name__ == "__main__":
    main()
