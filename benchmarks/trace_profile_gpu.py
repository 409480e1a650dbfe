"""Where a traced training step spends the host time tracing adds: cProfile of untraced and traced steps of the
launch-bound Mistral-style model (benchmarks/trace_acceptance_gpu.py MODELS), the recorder's functions listed.

    python benchmarks/trace_profile_gpu.py [--model mistral-4x1024] [--steps 40]
    python benchmarks/trace_profile_gpu.py --variants [--rounds 30]   # which part of the recorder costs what
    python benchmarks/trace_profile_gpu.py --parts                    # each part of a call's bookkeeping, timed

--variants pairs single steps, one untraced and one with a variant installed (the order alternating): the recorder,
the recorder without its backward hooks, without its optimizer hook, installed with SDPA unwrapped, and a bare
pass-through wrapper around scaled_dot_product_attention; the median difference per variant.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
OUT = Path(os.environ.get("OUT", "trace-profile-out"))


def main() -> None:
    from trace_acceptance_gpu import MODELS, _Null, mistral

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mistral-4x1024", choices=sorted(MODELS))
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--variants", action="store_true")
    parser.add_argument("--parts", action="store_true")
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()

    import torch

    import attndoctor

    OUT.mkdir(parents=True, exist_ok=True)
    model, opt, ids = mistral(args.model)

    def steps(count: int) -> None:
        for _ in range(count):
            model(input_ids=ids, labels=ids).loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()

    steps(10)
    if args.variants:
        return variants(steps, args.rounds)
    if args.parts:
        return parts(steps)
    for traced in (False, True):
        with (attndoctor.trace() if traced else _Null()) as t:
            steps(3)
            profile = cProfile.Profile()
            profile.enable()
            steps(args.steps)
            profile.disable()
        text = io.StringIO()
        stats = pstats.Stats(profile, stream=text)
        stats.sort_stats("tottime").print_stats(40)
        name = "traced" if traced else "untraced"
        (OUT / f"profile-{name}.txt").write_text(text.getvalue())
        total = stats.total_tt
        ours = sum(v[2] for k, v in stats.stats.items() if "attndoctor" in k[0])
        print(f"{name}: {1e3 * total / args.steps:.2f} ms of profiled host time a step; attndoctor's own "
              f"{1e3 * ours / args.steps:.3f} ms a step")
        if traced:
            for call in t.calls:
                print(f"  {call['phase']:8} {call['count']:5} {call['site']} {call['module']} {call['op']}")


def variants(steps, rounds: int) -> None:
    """Single steps paired with untraced ones (order alternating), per variant of what is installed."""
    import json
    import statistics

    import torch
    import torch.nn.functional as F
    import torch.optim.optimizer as optimizer_module
    from trace_acceptance_gpu import paired_differences

    from attndoctor.trace.fields import _sdpa_flags, _sdpa_signature
    from attndoctor.trace.recorder import Recorder

    def recorder(patches=None):
        rec = Recorder()  # one per variant, settled by its warm-up steps as in a long run

        def install():
            saved = {}
            for (owner, attr), value in (patches or {}).items():
                saved[owner, attr] = getattr(owner, attr)
                setattr(owner, attr, value)
            rec.install()

            def remove():
                rec.uninstall()
                for (owner, attr), value in saved.items():
                    setattr(owner, attr, value)
            return remove
        return install

    def wrapper_doing(work=None, hook=False):
        def install():
            original = F.scaled_dot_product_attention

            def scaled_dot_product_attention(q, k, v, *args, **kwargs):
                if work is not None:
                    work(q, k, v)
                out = original(q, k, v, *args, **kwargs)
                if hook and out.grad_fn is not None:
                    out.grad_fn.register_hook(lambda grad_inputs, grad_outputs: None)
                return out

            F.scaled_dot_product_attention = scaled_dot_product_attention

            def remove():
                F.scaled_dot_product_attention = original
            return remove
        return install

    probe = Recorder()
    probe._refresh_skip()

    def site_walk(q, k, v):
        probe._site_and_module()

    def signature(q, k, v):
        (_sdpa_flags(torch), _sdpa_signature(q, k, v, None, 0.0, True, None, False))

    def no_step_hook(*_):
        raise ImportError("left out")

    plain = recorder()

    def installed_without_sdpa():
        remove = plain()
        wrapper = F.scaled_dot_product_attention
        F.scaled_dot_product_attention = wrapper.__wrapped__

        def undo():
            F.scaled_dot_product_attention = wrapper
            remove()
        return undo

    kinds = {"traced": recorder(), "no-backward-hooks": recorder({(Recorder, "_backward"): lambda *a, **k: None}),
             "no-optimizer-hook": recorder({(optimizer_module, "register_optimizer_step_post_hook"): no_step_hook}),
             "installed-sdpa-unwrapped": installed_without_sdpa, "bare-wrapper": wrapper_doing(),
             "wrapper-with-empty-backward-hook": wrapper_doing(lambda *a: None, hook=True),
             "wrapper-walking-the-stack": wrapper_doing(site_walk),
             "wrapper-reading-flags-and-shapes": wrapper_doing(signature)}
    result = {}
    for name, install in kinds.items():
        remove = install()
        steps(2)
        remove()
        diffs, base = paired_differences(lambda: steps(1), install, rounds)
        q = statistics.quantiles(diffs, n=4)
        result[name] = {"median_ms": statistics.median(diffs), "quartiles_ms": [q[0], q[2]],
                        "pct": 100 * statistics.median(diffs) / statistics.median(base), "diffs": diffs}
        print(f"{name:26} {result[name]['median_ms']:+.3f} ms a step ({result[name]['pct']:+.2f} %), quartiles "
              f"{q[0]:+.3f} to {q[2]:+.3f} ms, over {rounds} pairs")
    (OUT / "variants.json").write_text(json.dumps(result))


def parts(steps) -> None:
    """Microseconds per call of each piece of the recorder's fast path, timed inside the model's own SDPA calls (the
    real stack and CUDA tensors), 2,000 repetitions each."""
    import time

    import torch
    import torch.nn.functional as F

    from attndoctor.trace.fields import _sdpa_flags, _sdpa_signature, fused_qkv
    from attndoctor.trace.recorder import Recorder

    rec = Recorder()
    rec._refresh_skip()
    rec._site_and_module()
    pieces = {
        "site and module (stack walk)": lambda q, k, v: rec._site_and_module(),
        "sdpa flags": lambda q, k, v: _sdpa_flags(torch),
        "signature (shapes, strides, fused)": lambda q, k, v: _sdpa_signature(q, k, v, None, 0.0, True, None, False),
        "fused_qkv (untyped_storage)": lambda q, k, v: fused_qkv(q, k, v),
        "untyped_storage() x3": lambda q, k, v: [t.untyped_storage().data_ptr() for t in (q, k, v)],
        "data_ptr - offset x3": lambda q, k, v: [t.data_ptr() - t.storage_offset() * t.element_size()
                                                 for t in (q, k, v)],
        "q.device": lambda q, k, v: q.device,
        "stride() x3": lambda q, k, v: [t.stride() for t in (q, k, v)],
        "tuple(shape) x3": lambda q, k, v: [tuple(t.shape) for t in (q, k, v)],
        "grad_fn.register_hook": None,
    }
    timings: dict[str, list[float]] = {name: [] for name in pieces}
    original = F.scaled_dot_product_attention

    def scaled_dot_product_attention(q, k, v, *args, **kwargs):
        for name, piece in pieces.items():
            if piece is None:
                continue
            t0 = time.perf_counter_ns()
            for _ in range(2000):
                piece(q, k, v)
            timings[name].append((time.perf_counter_ns() - t0) / 2000 / 1e3)
        out = original(q, k, v, *args, **kwargs)
        if out.grad_fn is not None:
            t0 = time.perf_counter_ns()
            for _ in range(200):
                out.grad_fn.register_hook(lambda grad_inputs, grad_outputs: None)
            timings["grad_fn.register_hook"].append((time.perf_counter_ns() - t0) / 200 / 1e3)
        return out

    F.scaled_dot_product_attention = scaled_dot_product_attention
    try:
        steps(1)
    finally:
        F.scaled_dot_product_attention = original
    for name, values in timings.items():
        print(f"{name:38} {min(values):8.2f} us a call (min over the step's {len(values)} calls)")


if __name__ == "__main__":
    main()
