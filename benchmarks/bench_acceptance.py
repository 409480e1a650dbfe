"""Acceptance of `attndoctor bench` on a GPU machine, from the repository root:

    python benchmarks/bench_acceptance.py --out DIR [--repeats 3] [--deadline 330]

1. a text run of one shape (what a user sees), then `attndoctor bench --format json` over TRAINING_SHAPES
   (22 training shapes: head dims 64 to 256, MHA/GQA/MQA, causal and not, seqlen 512 to 16k, bf16 and fp16)
   `--repeats` times, each in a fresh process with a fresh seed (fresh inputs);
2. (a) for every shape, the backend run 1 recommends is timed in each later run within 3% of that run's fastest;
   (b) for every (shape, backend, metric) whose median is over 1 ms, the spread of the medians over the runs,
       (max - min) / median, is under 5%;
   (c) TFLOP/s and % of the GPU's dense peak of each backend for the largest shapes;
3. DIR/acceptance.json holds all of it, DIR/runN.json the bench documents; a short table is printed last.

Without attndoctor installed the script puts the repository on PYTHONPATH (kernels/ as attndoctor_kernels, rules/
as attndoctor_rules) for the bench processes. Each run gets what is left of --deadline; runs that would not fit are
skipped and said.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# name, batch, heads, kv_heads, seqlen, hdim, dtype, causal
TRAINING_SHAPES = [
    ("d64-mha-512-causal", 32, 16, 16, 512, 64, "bf16", True),
    ("d64-mha-1k", 16, 16, 16, 1024, 64, "fp16", False),
    ("d64-gqa-2k-causal", 8, 16, 4, 2048, 64, "bf16", True),
    ("d64-mqa-4k-causal", 4, 16, 1, 4096, 64, "fp16", True),
    ("d64-mha-8k", 2, 16, 16, 8192, 64, "bf16", False),
    ("d64-gqa-16k-causal", 1, 16, 4, 16384, 64, "bf16", True),
    ("d96-mha-2k-causal", 8, 16, 16, 2048, 96, "bf16", True),
    ("d128-mha-512", 32, 16, 16, 512, 128, "bf16", False),
    ("d128-gqa-1k-causal", 16, 32, 8, 1024, 128, "bf16", True),
    ("d128-mha-2k-causal", 8, 16, 16, 2048, 128, "fp16", True),
    ("d128-gqa-4k-causal", 4, 32, 8, 4096, 128, "bf16", True),
    ("d128-mqa-4k", 4, 32, 1, 4096, 128, "fp16", False),
    ("d128-mha-8k-causal", 2, 16, 16, 8192, 128, "bf16", True),
    ("d128-gqa-8k", 1, 32, 8, 8192, 128, "fp16", False),
    ("d128-gqa-16k-causal", 1, 32, 8, 16384, 128, "bf16", True),
    ("d128-mha-16k", 1, 16, 16, 16384, 128, "fp16", False),
    ("d256-mha-512-causal", 32, 8, 8, 512, 256, "bf16", True),
    ("d256-gqa-1k", 16, 16, 8, 1024, 256, "fp16", False),
    ("d256-gqa-2k-causal", 8, 16, 8, 2048, 256, "bf16", True),
    ("d256-mqa-4k-causal", 4, 8, 1, 4096, 256, "bf16", True),
    ("d256-mha-8k-causal", 2, 8, 8, 8192, 256, "fp16", True),
    ("d256-gqa-16k-causal", 1, 16, 8, 16384, 256, "bf16", True),
]
TEXT_SHAPE = ["--batch", "2", "--heads", "32", "--kv-heads", "8", "--seqlen", "4096", "--hdim", "128", "--dtype",
              "bf16", "--train", "--causal"]
REC_TOLERANCE = 0.03
SPREAD_LIMIT = 0.05
SPREAD_OVER_MS = 1.0
LARGEST = 4


def shape_configs(tiny: bool = False) -> list[dict]:
    """The shapes as bench configs; `tiny` shrinks them for a dry run of this script on the CPU
    (ATTNDOCTOR_VERIFY_DEVICE=cpu, fp32, sdpa-math)."""
    out = []
    for n, b, h, hk, s, d, dt, c in TRAINING_SHAPES:
        if tiny:
            b, h, hk, s, d, dt = 1, 4, max(1, hk * 4 // h), max(32, s // 128), min(d, 32), "fp32"
        out.append({"name": n, "batch": b, "heads": h, "kv_heads": hk, "seqlen_q": s, "seqlen_kv": s, "hdim": d,
                    "dtype": dt, "train": True, "mask": "causal" if c else "none", "layout": "bshd"})
    return out


def environment() -> dict[str, str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    try:
        import attndoctor_kernels  # noqa: F401
        import attndoctor  # noqa: F401
        return env
    except ImportError:
        pass
    shim = Path(tempfile.mkdtemp(prefix="attndoctor-shim-"))
    (shim / "attndoctor_kernels").symlink_to(ROOT / "kernels")
    (shim / "attndoctor_rules").symlink_to(ROOT / "rules")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), str(shim), env.get("PYTHONPATH", "")) if p)
    return env


def say(text: str) -> None:
    print(text, flush=True)


def run_bench(args: list[str], env: dict[str, str], timeout: float, log) -> tuple[int, float]:
    start = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-m", "attndoctor", "bench", *args], env=env, cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
        code, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        code, out, err = 124, exc.stdout or "", exc.stderr or ""
        out = out.decode() if isinstance(out, bytes) else out
        err = err.decode() if isinstance(err, bytes) else err
    log.write(f"$ attndoctor bench {' '.join(args)}\nexit {code}\n{out[-4000:]}\n--- stderr\n{err[-4000:]}\n")
    log.flush()
    return code, time.monotonic() - start


def medians(doc: dict) -> dict[str, dict[str, dict[str, float]]]:
    """shape -> backend -> metric -> median ms (ok measurements only)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for r in doc["results"]:
        per = out.setdefault(r["config"]["name"], {})
        for m in r["measurements"]:
            if m.get("outcome") != "ok":
                continue
            for metric in ("forward", "forward_backward"):
                if m.get(metric):
                    per.setdefault(m["backend"], {})[metric] = m[metric]["median_ms"]
    return out


def check_recommendations(runs: list[dict]) -> list[dict]:
    first = runs[0]
    rows = []
    for r in first["results"]:
        name = r["config"]["name"]
        rec = r["recommendation"]["backend"]
        row = {"shape": name, "recommended": rec, "default": r["recommendation"]["default"],
               "speedup_vs_default": r["recommendation"]["speedup_vs_default"], "later": []}
        for i, other in enumerate(runs[1:], 2):
            times = {b: v.get("forward_backward") for b, v in medians(other).get(name, {}).items()}
            times = {b: t for b, t in times.items() if t}
            if not times or rec not in times:
                row["later"].append({"run": i, "ok": False, "why": "not measured"})
                continue
            fastest = min(times, key=times.get)
            excess = times[rec] / times[fastest] - 1.0
            row["later"].append({"run": i, "fastest": fastest, "rec_ms": times[rec], "fastest_ms": times[fastest],
                                 "excess": excess, "ok": excess <= REC_TOLERANCE})
        row["ok"] = bool(row["later"]) and all(x["ok"] for x in row["later"])
        rows.append(row)
    return rows


def check_spread(runs: list[dict]) -> list[dict]:
    per_run = [medians(d) for d in runs]
    rows = []
    for name, backends in per_run[0].items():
        for backend, metrics in backends.items():
            for metric, ms in metrics.items():
                values = [m.get(name, {}).get(backend, {}).get(metric) for m in per_run]
                if any(v is None for v in values) or statistics.median(values) <= SPREAD_OVER_MS:
                    continue
                med = statistics.median(values)
                spread = (max(values) - min(values)) / med
                rows.append({"shape": name, "backend": backend, "metric": metric, "medians_ms": values,
                             "spread": spread, "ok": spread < SPREAD_LIMIT})
    return rows


def largest(doc: dict) -> list[dict]:
    results = sorted(doc["results"], key=lambda r: -r["flops"]["forward"])[:LARGEST]
    rows = []
    for r in results:
        for m in r["measurements"]:
            if m.get("outcome") != "ok":
                continue
            f, t = m.get("forward") or {}, m.get("forward_backward") or {}
            rows.append({"shape": r["config"]["name"], "backend": m["backend"], "mode": m.get("mode"),
                         "fwd_ms": f.get("median_ms"), "fwd_tflops": f.get("tflops"), "fwd_peak_pct": f.get("peak_pct"),
                         "train_ms": t.get("median_ms"), "train_tflops": t.get("tflops"),
                         "train_peak_pct": t.get("peak_pct"), "mem_peak": m.get("mem_peak")})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.environ.get("OUT", "bench-out"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--deadline", type=float, default=330.0, help="seconds for the whole script")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--tiny", action="store_true", help="dry run on the CPU (ATTNDOCTOR_VERIFY_DEVICE=cpu)")
    args = parser.parse_args()
    started = time.monotonic()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = environment()
    shapes = Path(tempfile.mkdtemp(prefix="bench-shapes-")) / "shapes.jsonl"
    shapes.write_text("".join(json.dumps(c) + "\n" for c in shape_configs(args.tiny)))
    extra = ["--backend", "sdpa-math"] if args.tiny else []
    text_shape = ["--seqlen", "64", "--hdim", "16", "--dtype", "fp32", "--train", "--causal"] if args.tiny else TEXT_SHAPE
    log = open(out / "log.txt", "w", encoding="utf-8")
    left = lambda: args.deadline - (time.monotonic() - started)  # noqa: E731
    code, took = run_bench([*text_shape, *extra, "--seed", "1", "--output", str(out / "text.txt")], env, min(90, left()), log)
    say(f"text run: exit {code} in {took:.1f} s")
    docs, durations, skipped = [], [], []
    for rep in range(1, args.repeats + 1):
        need = 1.15 * max(durations) if durations else 0.0
        if durations and left() < need:
            skipped.append(rep)
            say(f"run {rep}: skipped, {left():.0f} s left and a run takes {max(durations):.0f} s")
            continue
        target = out / f"run{rep}.json"
        code, took = run_bench(["--config-file", str(shapes), *extra, "--format", "json", "--runs", str(args.runs),
                                "--seed", str(1000 * rep + 7), "--output", str(target)], env, max(10.0, left()), log)
        durations.append(took)
        say(f"run {rep}: exit {code} in {took:.1f} s")
        if target.exists() and target.stat().st_size:
            docs.append(json.loads(target.read_text()))
    if not docs:
        say("no bench run produced a document; see log.txt")
        return 1
    gpu = docs[0]["gpu"]
    rec_rows = check_recommendations(docs) if len(docs) > 1 else []
    spread_rows = check_spread(docs) if len(docs) > 1 else []
    big = largest(docs[0])
    summary = {
        "gpu": gpu, "worker": docs[0].get("worker"), "shapes": len(TRAINING_SHAPES), "runs": len(docs),
        "skipped_runs": skipped, "run_seconds": durations,
        "a_recommendation_within_3pct": {"passed": sum(r["ok"] for r in rec_rows), "of": len(rec_rows)},
        "b_spread_under_5pct": {"passed": sum(r["ok"] for r in spread_rows), "of": len(spread_rows),
                                "worst": max((r["spread"] for r in spread_rows), default=None)},
        "recommended": docs[0]["summary"]["recommended"],
        "modes": sorted({f"{m['backend']}:{m.get('mode')}" for r in docs[0]["results"] for m in r["measurements"]}),
    }
    (out / "acceptance.json").write_text(json.dumps({"summary": summary, "recommendations": rec_rows,
                                                     "spread": spread_rows, "largest": big}, indent=1))
    # the short table, last
    say("")
    say(f"GPU {gpu.get('name')} (catalogue {gpu.get('catalogue')}, peak {gpu.get('peak_tflops')}); "
        f"{len(docs)} runs of {len(TRAINING_SHAPES)} shapes in {', '.join(f'{d:.0f}' for d in durations)} s")
    say(f"modes: {', '.join(summary['modes'])}")
    say("(a) recommendation vs fastest of the later runs (fwd+bwd):")
    for r in rec_rows:
        worst = max((x.get("excess", 9.9) for x in r["later"]), default=9.9)
        fast = ",".join(sorted({x.get("fastest", "?") for x in r["later"]}))
        sp = r["speedup_vs_default"]
        say(f"  {r['shape']:<22} rec {r['recommended']:<15} later fastest {fast:<26} worst +{100 * worst:4.1f}% "
            f"{'ok' if r['ok'] else 'FAIL'}  vs default {r['default']} {sp:.2f}x" if sp else
            f"  {r['shape']:<22} rec {r['recommended']:<15} later fastest {fast:<26} worst +{100 * worst:4.1f}% "
            f"{'ok' if r['ok'] else 'FAIL'}  default {r['default']} not timed")
    bad = [r for r in spread_rows if not r["ok"]]
    say(f"(b) spread of medians over {len(docs)} runs, medians > 1 ms: {summary['b_spread_under_5pct']['passed']}/"
        f"{len(spread_rows)} under 5%, worst {100 * (summary['b_spread_under_5pct']['worst'] or 0):.1f}%")
    for r in bad:
        say(f"  over: {r['shape']} {r['backend']} {r['metric']} {r['medians_ms']} ({100 * r['spread']:.1f}%)")
    say("(c) largest shapes, TFLOP/s (% of dense peak):")
    for r in big:
        say(f"  {r['shape']:<22} {r['backend']:<15} {r['mode']:<5} fwd {r['fwd_ms']:7.3f} ms "
            f"{r['fwd_tflops']:5.0f} ({r['fwd_peak_pct'] or 0:4.1f}%)  fwd+bwd {r['train_ms']:7.3f} ms "
            f"{r['train_tflops']:5.0f} ({r['train_peak_pct'] or 0:4.1f}%)")
    a, b = summary["a_recommendation_within_3pct"], summary["b_spread_under_5pct"]
    say(f"ACCEPTANCE (a) {a['passed']}/{a['of']}  (b) {b['passed']}/{b['of']}  total {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
