"""Issue 24's GPU acceptance of `attndoctor trace` and issue 26's trace overhead, in one run on a GPU, with Hugging
Face models of random weights (no download). A table is printed last; details go under $OUT.

    pip install --no-deps --no-build-isolation -e .        # the CLI runs need the installed rules package
    python benchmarks/trace_acceptance_gpu.py all          # everything below
    python benchmarks/trace_acceptance_gpu.py compiled     # the traced program: a torch.compile'd Llama, 3 steps
    python benchmarks/trace_acceptance_gpu.py overhead [--model mistral-4x1024] --pairs 30 --steps 10

- qwen2: left-padded batched generation under sdpa (benchmarks/trace_decides_gpu.py qwen2): the masks are bool, so the
  fp32-mask advisory must read "not hit" on every call;
- gemma2: a Gemma-2 (softcap 50) under attn_implementation="sdpa": an intent finding (softcap not applied);
- compiled: a Llama under torch.compile (inductor), trained 3 steps: its attention calls listed with what ran;
- choice: torch._fused_sdp_choice (how the recorder tells what ran without a dispatch mode) against the op a dispatch
  mode sees, over a grid of SDPA calls and enabled backends;
- kernels: the CUDA kernel names each SDPA backend launches, and the backend the profile map gives each;
- varlen: torch.nn.attention.varlen.varlen_attn traced, where this torch has it;
- overhead: Mistral-style models (MODELS: 8 layers at 4 x 2048 tokens, GPU-bound; 4 layers at 4 x 1024 tokens, the
  launch-bound step of issue 26), bf16, AdamW: short blocks of steps traced and untraced in interleaved pairs (order
  alternating), each traced block a fresh trace so its first calls count, with the main thread's CPU time per step
  beside the wall time; then single steps paired (one recorder installed for every other step), whose differences
  cancel the host's drift step by step.
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
ROOT = HERE.parent.parent
OUT = Path(os.environ.get("OUT", "trace-acceptance-out"))
sys.path.insert(0, str(ROOT))


def llama(attn: str, layers: int = 4):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=4096, hidden_size=512, intermediate_size=1408, num_hidden_layers=layers,
                         num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=2048)
    config._attn_implementation = attn
    model = LlamaForCausalLM(config).to("cuda", torch.bfloat16)
    model.config._attn_implementation = attn
    return model


def compiled_program() -> None:
    """The traced program: a Llama under torch.compile (inductor), three training steps."""
    import torch

    model = llama("sdpa")
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, 4096, (4, 512), device="cuda")
    step = torch.compile(model)
    for _ in range(3):
        loss = step(input_ids=ids, labels=ids).loss  # COMPILED-SITE
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    print("compiled: 3 steps, loss", float(loss))


def traced(name: str, program: list[str]) -> dict:
    report = OUT / f"{name}.json"
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "attndoctor", "trace", "--format", "json", "--output", str(report),
                           "--", sys.executable, *program], capture_output=True, text=True, cwd=ROOT)
    (OUT / f"{name}.log").write_text(done.stdout[-4000:] + "\n--- stderr\n" + done.stderr[-8000:])
    doc = json.loads(report.read_text()) if report.exists() else {}
    print(f"== {name}: exit {done.returncode}, {time.perf_counter() - t0:.1f} s")
    return doc


def advisories(call: dict, word: str) -> list[str]:
    return [a["state"] for a in call.get("advisories", []) if word in a["rule"]]


def case_qwen2() -> tuple[str, str]:
    doc = traced("qwen2", [str(HERE.parent / "trace_decides_gpu.py"), "qwen2"])
    calls = [c for c in doc.get("calls", []) if c["phase"] == "forward"]
    kinds = sorted({(c.get("details") or {}).get("mask_kind") for c in calls})
    states = sorted({s for c in calls for s in advisories(c, "FP32-MASK")})
    sites = sorted({c["site"] for c in calls})
    ok = calls and kinds == ["bool"] and not ({"hit", "at risk", "at_risk"} & set(states))
    return "qwen2 left padding, sdpa", (f"{'PASS' if ok else 'FAIL'}: {len(calls)} forward entries, masks {kinds}, "
                                        f"fp32-mask advisory {states or ['absent']}, sites {sites}")


def case_gemma2() -> tuple[str, str]:
    doc = traced("gemma2", [str(HERE.parent / "trace_decides_gpu.py"), "gemma2"])
    calls = [c for c in doc.get("calls", []) if c["phase"] == "forward"]
    found = sorted({f["text"][:90] for c in calls for f in c.get("intent_findings", [])})
    ran = sorted({c["ran"] for c in calls})
    ok = bool(found) and any("softcap" in f for f in found)
    return "gemma2 softcap, sdpa", f"{'PASS' if ok else 'FAIL'}: ran {ran}; intent findings {found or ['none']}"


def case_compiled() -> tuple[str, str]:
    doc = traced("compiled", [str(HERE), "compiled"])
    calls = [c for c in doc.get("calls", []) if (c.get("details") or {}).get("compiled")]
    rows = sorted({(c["module"], c["ran"], c["op"], c["count"], c["site"]) for c in calls})
    for row in rows:
        print("  compiled:", row)
    notes = [n for n in doc.get("trace", {}).get("notes", []) if "torch.compile" in n]
    ok = len(rows) >= 4 and all(r[1] not in ("", "unknown") for r in rows)
    ran = sorted({r[1] for r in rows})
    return "compiled Llama (inductor)", (f"{'PASS' if ok else 'FAIL'}: {len(rows)} layers seen inside the graph, ran "
                                         f"{ran}, counts {sorted({r[3] for r in rows})}, site {sorted({r[4] for r in rows})}"
                                         f"; note: {notes[0][:80] if notes else 'none'}")


def case_choice() -> tuple[str, str]:
    """torch._fused_sdp_choice's op against the dispatch mode's, call by call."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from attndoctor.trace.fields import sdpa_op_by_choice
    from attndoctor.trace.recorder import _Observe

    F = torch.nn.functional
    rows, agree = [], 0
    enabled = [None, [SDPBackend.FLASH_ATTENTION, SDPBackend.MATH], [SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH],
               [SDPBackend.CUDNN_ATTENTION, SDPBackend.MATH], [SDPBackend.MATH]]
    for dtype in (torch.bfloat16, torch.float32):
        for d, heads, kv, sq, skv, mask, causal, drop in ((64, 8, 8, 256, 256, None, True, 0.0),
                                                          (128, 16, 4, 512, 512, None, True, 0.0),
                                                          (128, 8, 8, 128, 512, None, False, 0.0),
                                                          (192, 8, 8, 256, 256, None, True, 0.0),
                                                          (80, 8, 8, 256, 256, "bool", False, 0.0),
                                                          (128, 8, 8, 256, 256, "float", False, 0.1),
                                                          (256, 8, 8, 1, 1024, None, False, 0.0)):
            for backends in enabled:
                q = torch.randn(2, heads, sq, d, device="cuda", dtype=dtype, requires_grad=True)
                k, v = (torch.randn(2, kv, skv, d, device="cuda", dtype=dtype, requires_grad=True) for _ in range(2))
                m = None if mask is None else (torch.rand(sq, skv, device="cuda") > 0.2 if mask == "bool"
                                               else torch.randn(sq, skv, device="cuda", dtype=dtype))
                gqa = kv != heads
                context = sdpa_kernel(backends) if backends else _Null()
                with context:
                    chosen = sdpa_op_by_choice(q, k, v, m, drop, causal, None, gqa)
                    mode = _Observe.make()
                    try:
                        with mode:
                            F.scaled_dot_product_attention(q, k, v, attn_mask=m, dropout_p=drop, is_causal=causal,
                                                           enable_gqa=gqa)
                        seen = mode.seen[0][0] if mode.seen else ""
                    except RuntimeError as exc:
                        seen = f"error: {str(exc)[:60]}"
                same = chosen == seen or (seen.startswith("error") and chosen is None)
                agree += same
                rows.append({"dtype": str(dtype), "d": d, "heads": [heads, kv], "len": [sq, skv], "mask": mask,
                             "causal": causal, "dropout": drop, "enabled": [b.name for b in backends or []],
                             "choice": chosen, "dispatch": seen, "same": same})
    (OUT / "choice.json").write_text(json.dumps(rows, indent=1))
    ops = sorted({r["dispatch"].split(".")[1] if "." in r["dispatch"] else r["dispatch"] or "math" for r in rows})
    return "choice == dispatch op", f"{'PASS' if agree == len(rows) else 'FAIL'}: {agree}/{len(rows)} calls; ops {ops}"


def case_kernels() -> tuple[str, str]:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from attndoctor.trace.compiled import kernel_backend, profile_call

    F = torch.nn.functional
    out, mapped = {}, []
    q, k, v = (torch.randn(2, 8, 512, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    for backend, expect in ((SDPBackend.FLASH_ATTENTION, "sdpa-flash"), (SDPBackend.EFFICIENT_ATTENTION,
                                                                          "sdpa-efficient"),
                            (SDPBackend.CUDNN_ATTENTION, "sdpa-cudnn")):
        with sdpa_kernel([backend]):
            F.scaled_dot_product_attention(q, k, v, is_causal=True)
            _, events = profile_call(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
        names = sorted({n for _, n in events or [] if not n.startswith(("aten::", "cuda", "Activity"))})
        out[expect] = [(n, kernel_backend(n)) for n in names]
        mapped.append(f"{expect}:{'ok' if any(b == expect for _, b in out[expect]) else 'UNMAPPED'}")
    (OUT / "kernels.json").write_text(json.dumps(out, indent=1))
    return "kernel names -> backend", ", ".join(mapped)


def case_varlen() -> tuple[str, str]:
    import torch

    import attndoctor

    import importlib.util

    if importlib.util.find_spec("torch.nn.attention.varlen") is None:
        return "varlen_attn", f"torch {torch.__version__} has no torch.nn.attention.varlen"
    with attndoctor.trace() as t:
        from torch.nn.attention.varlen import varlen_attn

        cu = torch.tensor([0, 100, 356], device="cuda", dtype=torch.int32)
        q, k, v = (torch.randn(356, 8, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        try:
            varlen_attn(q, k, v, cu, cu, 256, 256)
        except Exception as exc:  # noqa: BLE001
            return "varlen_attn", f"call failed: {type(exc).__name__}: {str(exc)[:80]}"
    (OUT / "varlen.json").write_text(json.dumps(t.calls, indent=1, default=str))
    got = [(c["ran"], c["config"].get("batch"), c["config"].get("seqlen_q"), c["config"].get("layout")) for c in t.calls]
    return "varlen_attn", f"{'PASS' if got and got[0][0] == 'sdpa-flash' else 'FAIL'}: {got}"


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


MODELS = {
    "mistral-8x2048": dict(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=8,
                           num_attention_heads=16, num_key_value_heads=8, batch=4, seqlen=2048),
    "mistral-4x1024": dict(vocab_size=8192, hidden_size=1024, intermediate_size=2816, num_hidden_layers=4,
                           num_attention_heads=16, num_key_value_heads=4, batch=4, seqlen=1024),
}
"""The overhead models: a GPU-bound step (8 layers, 4 x 2048 tokens) and the launch-bound one of issue 26
(4 layers, 4 x 1024 tokens), both Mistral-style (MistralForCausalLM from a config, random weights)."""


def mistral(name: str) -> tuple:
    """(model, AdamW, input ids) of an overhead model of MODELS: random weights, sdpa, bf16, in training mode."""
    import torch
    from transformers import MistralConfig, MistralForCausalLM

    torch.manual_seed(0)
    shape = dict(MODELS[name])
    batch, seqlen = shape.pop("batch"), shape.pop("seqlen")
    config = MistralConfig(max_position_embeddings=4096, **shape)
    config._attn_implementation = "sdpa"
    model = MistralForCausalLM(config).to("cuda", torch.bfloat16).train()
    model.config._attn_implementation = "sdpa"  # the model's init may pick another where it can
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    return model, opt, torch.randint(0, config.vocab_size, (batch, seqlen), device="cuda")


def paired_differences(step, install, pairs: int) -> tuple[list[float], list[float]]:
    """(traced minus untraced ms, untraced ms) of `pairs` pairs of single steps, the order alternating. `install()`
    returns the function that removes what it installed; it runs before both steps alike (installing disturbs the
    host's caches, not the step), and the untraced step's removal comes before that step starts."""
    import torch

    diffs, untraced = [], []
    for pair in range(pairs):
        got = {}
        for traced in ((False, True) if pair % 2 == 0 else (True, False)):
            remove = install()
            if not traced:
                remove()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            step()
            torch.cuda.synchronize()
            got[traced] = (time.perf_counter() - t0) * 1e3
            if traced:
                remove()
        diffs.append(got[True] - got[False])
        untraced.append(got[False])
    return diffs, untraced


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return q[0], statistics.median(values), q[2]


def overhead(name: str, pairs: int, steps: int) -> tuple[list[tuple[str, str]], dict]:
    """Interleaved pairs of short blocks (untraced, traced; order alternating, so slow drifts of the host and the GPU's
    clocks fall on both sides), each traced block a fresh trace so its first calls count. Per step: wall time and the
    main thread's CPU time up to the synchronisation (the host work tracing adds to; it does not count waiting for
    the GPU). Per pair: traced mean over untraced mean, minus one; the median over pairs is the figure, with the
    quartiles as its spread."""
    import torch

    import attndoctor

    model, opt, ids = mistral(name)

    def block(traced: bool, count: int = steps) -> tuple[list[float], list[float]]:
        wall, host = [], []
        with (attndoctor.trace() if traced else _Null()):
            for _ in range(count):
                torch.cuda.synchronize()
                t0, c0 = time.perf_counter(), time.thread_time()
                model(input_ids=ids, labels=ids).loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
                c1 = time.thread_time()
                torch.cuda.synchronize()
                wall.append((time.perf_counter() - t0) * 1e3)
                host.append((c1 - c0) * 1e3)
        return wall, host

    block(False, 10)  # warm-up: allocator, cuBLAS and cuDNN plans
    block(True, 3)  # the first trace of the process imports the recorder: not a per-run cost
    rows, detail = [], []
    for pair in range(pairs):
        order = (False, True) if pair % 2 == 0 else (True, False)
        got = {flag: block(flag) for flag in order}
        (off, off_host), (on, on_host) = got[False], got[True]
        pct = 100.0 * (statistics.fmean(on) / statistics.fmean(off) - 1.0)
        host_pct = 100.0 * (statistics.fmean(on_host) / statistics.fmean(off_host) - 1.0)
        detail.append({"pair": pair + 1, "order": ["traced" if f else "untraced" for f in order],
                       "untraced_ms": off, "traced_ms": on, "untraced_host_ms": off_host, "traced_host_ms": on_host,
                       "untraced_mean": statistics.fmean(off), "traced_mean": statistics.fmean(on),
                       "overhead_pct": pct, "host_overhead_pct": host_pct,
                       "first_step_ms": [off[0], on[0]], "later_steps_mean_ms": [statistics.fmean(off[1:] or off),
                                                                                  statistics.fmean(on[1:] or on)]})
        rows.append((f"{name} pair {pair + 1} ({'off,on' if order[0] is False else 'on,off'})",
                     f"{statistics.fmean(off):.2f} vs {statistics.fmean(on):.2f} ms/step: {pct:+.2f} % (host "
                     f"{host_pct:+.2f} %; first step {off[0]:.1f} vs {on[0]:.1f})"))
    steady = paired_steps(model, opt, ids, pairs * steps)
    low, median, high = _quartiles([d["overhead_pct"] for d in detail])
    host_low, host_median, host_high = _quartiles([d["host_overhead_pct"] for d in detail])
    first = statistics.median(d["first_step_ms"][1] / d["later_steps_mean_ms"][1] for d in detail)
    first_off = statistics.median(d["first_step_ms"][0] / d["later_steps_mean_ms"][0] for d in detail)
    summary = {"model": f"{name}: MistralForCausalLM {MODELS[name]}, bf16, AdamW", "pairs": detail,
               "steps_per_block": steps, "median_overhead_pct": median, "overhead_quartiles_pct": [low, high],
               "median_host_overhead_pct": host_median, "host_overhead_quartiles_pct": [host_low, host_high],
               "first_step_ratio": {"traced": first, "untraced": first_off}, "paired_steps": steady,
               "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    (OUT / f"overhead-{name}.json").write_text(json.dumps(summary, indent=1))
    rows.append((f"{name} overhead median", f"{median:+.2f} % (quartiles {low:+.2f} to {high:+.2f}) over {pairs} "
                 f"pairs of {steps}-step blocks ({'PASS' if median <= 3 else 'FAIL'} <= 3 %); host CPU "
                 f"{host_median:+.2f} % ({host_low:+.2f} to {host_high:+.2f}); first step / later steps: traced "
                 f"{first:.2f}, untraced {first_off:.2f}"))
    low_ms, high_ms = steady["difference_quartiles_ms"]
    rows.append((f"{name} paired steps", f"{steady['overhead_pct']:+.2f} % (median of {steady['pairs']} step-to-step "
                 f"differences over the median untraced step, {steady['untraced_median_ms']:.2f} ms; quartiles of the "
                 f"differences {low_ms:+.3f} to {high_ms:+.3f} ms)"))
    return rows, summary


def paired_steps(model, opt, ids, pairs: int) -> dict:
    """The settled overhead, with drift cancelled step by step: one recorder, installed for every other step (the
    order alternating per pair), so each traced step is compared with the untraced step beside it; the median of
    the pairs' differences over the median untraced step."""
    from attndoctor.trace.recorder import Recorder

    recorder = Recorder()

    def step() -> None:
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    def install():
        recorder.install()
        return recorder.uninstall

    recorder.install()
    step()
    recorder.uninstall()
    diffs, untraced = paired_differences(step, install, pairs)
    base = statistics.median(untraced)
    low, mid, high = _quartiles(diffs)
    return {"pairs": pairs, "overhead_pct": 100.0 * mid / base, "untraced_median_ms": base,
            "difference_median_ms": mid, "difference_quartiles_ms": [low, high], "differences_ms": diffs}


def run_all(args) -> None:
    import torch
    import transformers

    OUT.mkdir(parents=True, exist_ok=True)
    table = [("machine", f"{torch.cuda.get_device_name()}, torch {torch.__version__}, cuDNN "
                         f"{torch.backends.cudnn.version()}, transformers {transformers.__version__}")]
    for case in (case_qwen2, case_gemma2, case_compiled, case_choice, case_kernels, case_varlen):
        try:
            table.append(case())
        except Exception as exc:  # noqa: BLE001 - one case failing must not hide the others
            table.append((case.__name__, f"ERROR {type(exc).__name__}: {str(exc)[:120]}"))
    for name, pairs, steps in (("mistral-8x2048", args.pairs, args.steps), ("mistral-4x1024", 2 * args.pairs,
                                                                            args.steps)):
        table += overhead(name, pairs, steps)[0]
        torch.cuda.empty_cache()
    (OUT / "table.json").write_text(json.dumps(table, indent=1))
    print("=" * 110)
    for key, value in table:
        print(f"{key:28s} {value}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("all", "compiled", "overhead"))
    parser.add_argument("--pairs", type=int, default=30)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--model", action="append", choices=sorted(MODELS), help="overhead: this model only")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    if args.command == "compiled":
        compiled_program()
    elif args.command == "overhead":
        for name in args.model or list(MODELS):
            for key, value in overhead(name, args.pairs, args.steps)[0]:
                print(f"{key:28s} {value}")
    else:
        run_all(args)


if __name__ == "__main__":
    main()
