"""`attndoctor trace` on a GPU: a small Hugging Face Llama (random weights, from a LlamaConfig, no download) trained
a few steps with attn_implementation sdpa, flex_attention and eager, traced through the CLI and the Python API; a
planted NaN in the pytorch#196678 regime located with --numerics; the recorder's overhead on a training step, with
and without --numerics, measured side by side (interleaved repetitions, medians). A short table is printed last;
details go under $OUT.

    python benchmarks/trace_gpu.py all            # everything (what trace_gpu.sh runs)
    python benchmarks/trace_gpu.py train --attn sdpa --steps 3
    python benchmarks/trace_gpu.py nan
    python benchmarks/trace_gpu.py overhead
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
OUT = Path(os.environ.get("OUT", "trace-gpu-out"))
IMPLS = ("sdpa", "flex_attention", "eager")
BATCH, SEQLEN = 8, 512


def build(attn: str):
    """A 4-layer Llama (hidden 512, 8 heads, 2 kv heads) in bf16 on the GPU, with AdamW."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=4096, hidden_size=512, intermediate_size=1408, num_hidden_layers=4,
                         num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=2048)
    config._attn_implementation = attn
    model = LlamaForCausalLM(config).to("cuda", torch.bfloat16)
    model.config._attn_implementation = attn
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, config.vocab_size, (BATCH, SEQLEN), device="cuda")
    return model, opt, ids


def step(model, opt, ids) -> float:
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return float(loss.detach())


def cmd_train(args) -> None:
    model, opt, ids = build(args.attn)
    for _ in range(args.steps):
        loss = step(model, opt, ids)
    print(f"trained {args.steps} steps with attn_implementation={args.attn}: loss {loss:.3f}")


def cmd_nan(args) -> None:
    """pytorch#196678: cuDNN SDPA backward on H100 (cuDNN 9.15.1 to 9.25) with a mask tensor, seqlen_kv = 704
    (64 mod 128) and a row logsumexp below -88.7 writes NaN into grad_q; 640 is the control."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    torch.manual_seed(0)
    B, H, D = 1, 1, 64
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1, device="cuda"))], lr=0.0)  # counts the steps
    for length in (640, 704):
        u = torch.randn(D, device="cuda")
        u /= u.norm()
        a = (100.0 * D ** 0.5) ** 0.5
        q = (a * u + 0.05 * torch.randn(B, H, length, D, device="cuda")).bfloat16().requires_grad_()
        k = (-a * u + 0.05 * torch.randn(B, H, length, D, device="cuda")).bfloat16().requires_grad_()
        v = torch.randn(B, H, length, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        pad = torch.ones(B, 1, length, length, dtype=torch.bool, device="cuda")
        pad[..., length - 40:] = False  # a bool padding mask: the last 40 keys are padding
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            if length == 640:
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=pad)  # CONTROL-SITE
            else:
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=pad)  # NAN-SITE
        out.float().pow(2).sum().backward()
        opt.step()
        print(f"L={length}: grad_q non-finite {int((~torch.isfinite(q.grad)).sum())}, "
              f"out non-finite {int((~torch.isfinite(out)).sum())}")


def cmd_overhead(args) -> dict:
    """Per-step time (ms) untraced, traced, traced with --numerics: interleaved blocks, medians of every step."""
    import torch

    sys.path.insert(0, str(HERE.parent.parent))
    import attndoctor

    model, opt, ids = build("sdpa")
    for _ in range(5):
        step(model, opt, ids)
    modes = {"off": None, "trace": False, "trace --numerics": True}
    times: dict[str, list[float]] = {m: [] for m in modes}
    for rep in range(args.reps):
        order = list(modes) if rep % 2 == 0 else list(reversed(modes))
        for mode in order:
            numerics = modes[mode]
            context = attndoctor.trace(numerics=numerics) if numerics is not None else _Null()
            with context:
                for _ in range(args.steps):
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    step(model, opt, ids)
                    torch.cuda.synchronize()
                    times[mode].append((time.perf_counter() - t0) * 1e3)
    base = statistics.median(times["off"])
    summary = {m: {"median_ms": statistics.median(t), "steps": len(t),
                   "overhead_pct": 100.0 * (statistics.median(t) / base - 1.0)} for m, t in times.items()}
    (OUT / "overhead.json").write_text(json.dumps({"summary": summary, "times_ms": times, "batch": BATCH,
                                                   "seqlen": SEQLEN, "reps": args.reps, "steps": args.steps}, indent=1))
    for m, s in summary.items():
        print(f"overhead {m:18s} median {s['median_ms']:.3f} ms/step  {s['overhead_pct']:+.2f} %  ({s['steps']} steps)")
    return summary


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


def traced(name: str, program: list[str], *options: str) -> tuple[int, dict]:
    """Run `attndoctor trace` on a program; its JSON report lands in $OUT/trace-<name>.json."""
    report = OUT / f"trace-{name}.json"
    log = OUT / f"trace-{name}.log"
    t0 = time.perf_counter()
    with open(log, "w") as handle:
        code = subprocess.call([sys.executable, "-m", "attndoctor", "trace", *options, "--format", "json",
                                "--output", str(report), "--", sys.executable, *program],
                               stdout=handle, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - t0
    doc = json.loads(report.read_text()) if report.exists() else {}
    print(f"== {name}: exit {code}, {wall:.1f} s (log {log})")
    return code, doc


def per_layer(calls: list[dict]) -> list[str]:
    rows = sorted(calls, key=lambda c: (c.get("module", ""), c["phase"], c["site"]))
    return [f"  {c.get('module') or '-':32s} {c['phase']:8s} {c['count']:4d}  {c['ran']:16s} {c['op']}" for c in rows]


def cmd_all(args) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    table: list[tuple[str, str]] = []
    ran_by_impl = {}
    for impl in IMPLS:
        code, doc = traced(impl, [str(HERE), "train", "--attn", impl, "--steps", "3"])
        calls = doc.get("calls", [])
        for line in per_layer(calls):
            print(line)
        for note in doc.get("trace", {}).get("notes", []):
            print(f"  note: {note}")
        ran = sorted({c["ran"] for c in calls}) or ["nothing seen"]
        ran_by_impl[impl] = ran
        layers = len({c.get("module") for c in calls if c["phase"] == "forward"})
        table.append((f"CLI {impl}", f"exit {code}; ran {', '.join(ran)}; {layers} layers"))
    # The API in-process, one impl after another.
    sys.path.insert(0, str(HERE.parent.parent))
    import attndoctor

    for impl in IMPLS:
        model, opt, ids = build(impl)
        with attndoctor.trace() as t:
            for _ in range(3):
                step(model, opt, ids)
        (OUT / f"api-{impl}.json").write_text(json.dumps(t.calls, indent=1, default=str))
        print(f"== API {impl}")
        for line in per_layer(t.calls):
            print(line)
        ran = sorted({c["ran"] for c in t.calls}) or ["nothing seen"]
        table.append((f"API {impl}", f"ran {', '.join(ran)}; {len(t.calls)} call entries"))
        del model, opt
    code, doc = traced("nan", [str(HERE), "nan"], "--numerics")
    first = doc.get("trace", {}).get("first_nonfinite")
    print(f"  first non-finite: {first}")
    for c in doc.get("calls", []):
        print(f"  {c['site']:28s} {c['phase']:8s} {c['ran']:12s} numerics {c.get('numerics')} "
              f"advisories {[(a['rule'], a['state'], a['where']) for a in c.get('advisories', [])]}")
    nan_line = next(i for i, t in enumerate(HERE.read_text().splitlines(), 1) if t.rstrip().endswith("# NAN-SITE"))
    located = bool(first) and first.get("site", "").endswith(f"trace_gpu.py:{nan_line}")
    table.append(("--numerics #196678", f"first non-finite at {first.get('site') if first else None} "
                  f"({first.get('tensor') if first else '-'}, {first.get('phase') if first else '-'}); "
                  f"expected trace_gpu.py:{nan_line}: {'LOCATED' if located else 'NOT located'}"))
    summary = cmd_overhead(args)
    for mode, s in summary.items():
        table.append((f"step {mode}", f"{s['median_ms']:.3f} ms median, {s['overhead_pct']:+.2f} % "
                      f"({s['steps']} steps)"))
    (OUT / "summary.json").write_text(json.dumps({"table": table, "ran": ran_by_impl}, indent=1))
    print()
    print("=" * 100)
    for key, value in table:
        print(f"{key:22s} {value}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command")
    train = sub.add_parser("train")
    train.add_argument("--attn", choices=IMPLS, default="sdpa")
    train.add_argument("--steps", type=int, default=3)
    sub.add_parser("nan")
    for name in ("overhead", "all"):
        p = sub.add_parser(name)
        p.add_argument("--reps", type=int, default=12)
        p.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    {"train": cmd_train, "nan": cmd_nan, "overhead": cmd_overhead, "all": cmd_all}.get(
        args.command or "all", cmd_all)(args if args.command else parser.parse_args(["all"]))


if __name__ == "__main__":
    main()
