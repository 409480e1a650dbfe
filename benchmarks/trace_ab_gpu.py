"""The recorder's cost per training step against an older recorder, in one process, interleaved: where a change to
the recorder's per-call path is measured without the drift between two machines or two runs.

    git archive REV attndoctor | tar -x -C OLD_DIR && mv OLD_DIR/attndoctor OLD_DIR/attndoctor_old
    python benchmarks/trace_ab_gpu.py --old OLD_DIR [--model mistral-4x1024] [--rounds 60] [--steps 10]
    python benchmarks/trace_ab_gpu.py --old OLD_DIR --walk    # the stack walk's pieces, once inside each real call

Each round runs one block of `steps` synchronised steps per kind (no recorder, this tree's, the old one, and this
tree's with its site walk or its backward counting left out), the order shuffled per round; a kind's figure is the
median over rounds of its block's mean step minus the untraced block's of the same round, beside the same for the main
thread's CPU time before each step's synchronisation (the host work, without the wait for the GPU). Without CUDA it runs on the
CPU with a small model (the host work alone). A table is printed last; the rounds go to $OUT/trace-ab-<model>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
OUT = Path(os.environ.get("OUT", "trace-ab-out"))


def kinds(old_dir: str | None) -> dict:
    """name -> a recorder class (None: no recorder)."""
    from attndoctor.trace.recorder import Recorder

    class NoSite(Recorder):
        def _site_and_module(self):
            return "site:1", "model.layers.0.self_attn"

    class NoBackwardCount(Recorder):
        def _sdpa_settle(self, *args):
            out = super()._sdpa_settle(*args)
            self.fast = {key: (entry, None) for key, (entry, _) in self.fast.items()}
            return out

    out = {"untraced": None, "this tree": Recorder, "this tree, no site walk": NoSite,
           "this tree, no backward count": NoBackwardCount}
    if old_dir:
        sys.path.insert(0, old_dir)
        from attndoctor_old.trace.recorder import Recorder as Old

        out["old"] = Old
    return out


def model_and_step(name: str, cuda: bool):
    import torch

    if cuda:
        from trace_acceptance_gpu import mistral

        model, opt, ids = mistral(name)
    else:
        from transformers import MistralConfig, MistralForCausalLM

        torch.manual_seed(0)
        config = MistralConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
                               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
        config._attn_implementation = "sdpa"
        model = MistralForCausalLM(config).train()
        model.config._attn_implementation = "sdpa"
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        ids = torch.randint(0, 256, (1, 16))
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    def step() -> float:
        """One synchronised step; the main thread's CPU time before the synchronisation (the host's share)."""
        c0 = time.thread_time()
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        host = time.thread_time() - c0
        sync()
        return host

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", help="a directory holding an older copy of the package as attndoctor_old")
    parser.add_argument("--model", default="mistral-4x1024")
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--walk", action="store_true")
    args = parser.parse_args()
    import torch

    cuda = torch.cuda.is_available()
    step = model_and_step(args.model, cuda)
    for _ in range(10):
        step()
    if args.walk:
        return walk(step, kinds(args.old))
    classes = kinds(args.old)
    recorders = {name: cls() if cls else None for name, cls in classes.items()}

    def block(name: str) -> tuple[float, float]:
        recorder = recorders[name]
        if recorder is not None:
            recorder.install()
        step()
        t0 = time.perf_counter()
        host = sum(step() for _ in range(args.steps))
        mean = (time.perf_counter() - t0) / args.steps * 1e3
        if recorder is not None:
            recorder.uninstall()
        return mean, host / args.steps * 1e3

    random.seed(7)
    times: dict[str, list[float]] = {name: [] for name in recorders}
    hosts: dict[str, list[float]] = {name: [] for name in recorders}
    for _ in range(args.rounds):
        order = list(recorders)
        random.shuffle(order)
        for name in order:
            wall, host = block(name)
            times[name].append(wall)
            hosts[name].append(host)
    base = statistics.median(times["untraced"])
    rows = []
    for name in recorders:
        if name == "untraced":
            continue
        diffs = [a - b for a, b in zip(times[name], times["untraced"])]
        host_diffs = [a - b for a, b in zip(hosts[name], hosts["untraced"])]
        q = statistics.quantiles(diffs, n=4)
        rows.append((name, statistics.median(diffs), q[0], q[2], statistics.median(host_diffs)))
    OUT.mkdir(parents=True, exist_ok=True)
    device = torch.cuda.get_device_name() if cuda else "cpu"
    (OUT / f"trace-ab-{args.model}.json").write_text(json.dumps(
        {"model": args.model, "device": device, "torch": torch.__version__, "steps_per_block": args.steps,
         "untraced_median_ms": base, "block_means_ms": times, "block_host_ms": hosts}, indent=1))
    print(f"{args.model} on {device}: untraced {base:.3f} ms a step, {args.rounds} rounds of {args.steps} steps")
    for name, median, low, high, host in rows:
        print(f"  {name:30} {median:+.3f} ms a step ({100 * median / base:+.2f} %), quartiles {low:+.3f} to "
              f"{high:+.3f}; host CPU {host:+.3f} ms")


def walk(step, classes: dict) -> None:
    """Microseconds of each piece of the stack walk, timed once inside each of the model's own SDPA calls (50 steps),
    in this order: a bare walk (it makes the frame objects), the recorders' site walks, a bare walk again (the frames
    exist), and a walk reading f_locals on every `forward` frame. The first piece to walk pays for making the frames."""
    import torch.nn.functional as F

    recorders = {name: cls() for name, cls in classes.items() if name in ("this tree", "old")}
    for recorder in recorders.values():
        recorder.install()
        step()
        recorder.uninstall()

    def bare() -> int:
        frame, depth = sys._getframe(1), 0
        while frame is not None:
            frame, depth = frame.f_back, depth + 1
        return depth

    def with_locals() -> None:
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_name == "forward":
                frame.f_locals.get("self")
            frame = frame.f_back

    pieces = {"bare walk (making the frames)": bare, **{f"site walk, {name}": rec._site_and_module
                                                      for name, rec in recorders.items()},
              "bare walk again": bare, "walk reading f_locals of each forward frame": with_locals}
    timed: dict[str, list[float]] = {name: [] for name in pieces}
    original = F.scaled_dot_product_attention

    def sdpa(*args, **kwargs):
        for name, piece in pieces.items():
            t0 = time.perf_counter()
            piece()
            timed[name].append((time.perf_counter() - t0) * 1e6)
        return original(*args, **kwargs)

    F.scaled_dot_product_attention = sdpa
    try:
        for _ in range(50):
            step()
    finally:
        F.scaled_dot_product_attention = original
    print(f"Python {sys.version.split()[0]}, {len(timed['bare walk again'])} calls")
    for name, values in timed.items():
        print(f"  {name:46} median {statistics.median(values):7.2f} us")


if __name__ == "__main__":
    main()
