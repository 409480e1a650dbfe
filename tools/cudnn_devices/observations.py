"""Turns probe.py's descriptor answers into observations the replay test holds the cudnn-fe rules to.

    python tools/cudnn_devices/observations.py tools/cudnn_devices/out/h100_cudnn9.19_fe1.32.jsonl \
        tests/observations/descriptors_cudnn9.19_fe1.32.jsonl
A training config is accepted when cuDNN accepted both its forward graph (with stats) and its backward graph
(deterministic when the config asks for it); an inference config when it accepted the forward graph. Answers are
cuDNN's check_support against the target's descriptor, not kernels that ran: each record says so in `observed_by`.
"""
from __future__ import annotations

import json
import sys

GPU = {"H100 (as a descriptor)": "H100", "A100": "A100 80GB", "RTX A6000 (sm86)": "RTX A6000", "L40S": "L40S", "H100 (this GPU)": "H100",
       "B200": "B200", "B300": "B300", "RTX PRO 6000 (sm120)": "RTX PRO 6000 Blackwell", "T4": "T4"}
SM = {"H100 (as a descriptor)": 90, "T4": 75, "A100": 80, "RTX A6000 (sm86)": 86, "L40S": 89, "H100 (this GPU)": 90, "B200": 100, "B300": 103,
      "RTX PRO 6000 (sm120)": 120}
DTYPE = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8"}


def configs(rows: list[dict]) -> list[tuple[dict, str, list[dict]]]:
    """(config, target, the graph answers it rests on) for every inference and training config of the grid."""
    by_key: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        key = (r["target"], r["variant"], r["dtype"], r["hdim"], r["hdim_v"], json.dumps(r["options"], sort_keys=True))
        by_key.setdefault(key, {})[r["phase"]] = r
    out = []
    for (target, variant, dtype, hdim, hdim_v, opts_text), phases in sorted(by_key.items()):
        opts = json.loads(opts_text)
        sq = opts.get("sq", 1024)
        base = {"batch": 2, "heads": 8, "kv_heads": 8, "seqlen_q": sq, "seqlen_kv": 1024, "hdim": hdim,
                "hdim_v": hdim_v, "dtype": DTYPE[dtype], "layout": "bhsd",
                "mask": "causal" if opts.get("causal", True) and sq == 1024 else "none"}
        if opts.get("window"):
            base["window"] = f"{opts['window'] - 1},0"
        if opts.get("dropout"):
            base["dropout"] = opts["dropout"]
        if opts.get("sinks"):
            base["sinks"] = True
        if "fwd-infer" in phases:
            out.append((dict(base, train=False), target, [phases["fwd-infer"]]))
        for bwd, deterministic in (("bwd", False), ("bwd-deterministic", True)):
            if "fwd-train" in phases and bwd in phases:
                out.append((dict(base, train=True, deterministic=deterministic), target,
                            [phases["fwd-train"], phases[bwd]]))
    return out


def main(src: str, dst: str) -> int:
    lines = [json.loads(line) for line in open(src, encoding="utf-8")]
    run, rows = lines[0], [r for r in lines[1:] if r.get("kind") == "check"]
    backend = run["cudnn_backend"]
    cudnn = f"{backend // 10000}.{backend // 100 % 100}.{backend % 100}"
    with open(dst, "w", encoding="utf-8") as out:
        for config, target, answers in configs(rows):
            refused = [a for a in answers if a["answer"] != "supported"]
            env = {"source": "what-if", "gpu": GPU[target], "sm": SM[target],
                   "versions": {"cudnn": cudnn, "cudnn_frontend": run["cudnn_frontend"]}}
            record = {"schema_version": 1, "environment": env, "config": config, "backend": "cudnn-fe",
                      "outcome": "rejected" if refused else "ok",
                      "error": refused[0]["message"] if refused else "",
                      "observed_by": f"cuDNN {cudnn} check_support against a {target} device descriptor "
                                     f"(cudnn-frontend {run['cudnn_frontend']}, deviceVer {answers[0]['deviceVer']}); "
                                     "graphs: " + ", ".join(a["phase"] for a in answers)}
            out.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
