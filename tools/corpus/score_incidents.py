"""Scores `attndoctor explain` against the incident corpus (tests/corpus/incidents): each case is asked as a user
would ask it, with only the facts its thread gives, and the verdict is compared with the outcome the thread shows.

    python tools/corpus/score_incidents.py [--half heldout|tuning|both] [--cases] [--json FILE]
The held-out half is for reporting only: never tune the rules on its cases.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus_common import contaminated, load_cases, report, run_cli  # noqa: E402

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "corpus" / "incidents"
CONFIG_FLAGS = {"batch": "--batch", "heads": "--heads", "kv_heads": "--kv-heads", "seqlen_q": "--seqlen-q",
                "seqlen_kv": "--seqlen-kv", "hdim": "--hdim", "hdim_v": "--hdim-v", "dtype": "--dtype",
                "mask": "--mask", "window": "--window", "dropout": "--dropout", "softcap": "--softcap",
                "bias": "--bias", "layout": "--layout", "cp": "--cp", "cp_comm": "--cp-comm"}
SWITCHES = {"deterministic": "--deterministic", "paged_kv": "--paged-kv", "sinks": "--sinks", "qkv_fused": "--qkv-fused"}
ENV_FLAGS = {"gpu": "--gpu", "torch": "--torch", "cuda": "--cuda", "cudnn": "--cudnn", "flash_attn": "--flash-attn",
             "flash_attn_3": "--flash-attn-3", "flash_attn_4": "--flash-attn-4", "te": "--te",
             "cutlass_dsl": "--cutlass-dsl", "cudnn_frontend": "--cudnn-frontend", "driver": "--driver"}
PREDICTED = {"supported": "runs", "known-bug": "bug", "unsupported": "refuses", "api-mismatch": "refuses",
             "wrong-results": "wrong", "depends": "depends", "outside-rules": "depends", "not-installed": "refuses"}
AGREES = {"runs": ("runs", "bug"), "refused": ("refuses",), "fails": ("refuses", "wrong", "bug"),
          "wrong-results": ("wrong", "bug")}


def argv(case: dict) -> tuple[list[str], list[str]]:
    """The explain command line for a case, and the facts it gives that explain has no flag for."""
    args = ["explain", "--backend", case["backend"], "--format", "json"]
    dropped = []
    for key, value in (case.get("config") or {}).items():
        if value is None:
            continue
        if key == "train":
            args.append("--train" if value else "--infer")
        elif key in SWITCHES:
            if value:
                args.append(SWITCHES[key])
        elif key == "cp":
            args += ["--cp", str(int(value) if not isinstance(value, bool) else (2 if value else 1))]
        elif key == "window" and isinstance(value, (list, tuple)):
            args += ["--window", ",".join(str(v) for v in value)]
        elif key in CONFIG_FLAGS:
            args += [CONFIG_FLAGS[key], str(value)]
        else:
            dropped.append(key)
    for key, value in (case.get("env") or {}).items():
        if value in (None, ""):
            continue
        if key in ENV_FLAGS:
            args += [ENV_FLAGS[key], str(value)]
        else:
            dropped.append(key)
    return args, dropped


def ask(case: dict) -> dict:
    """The verdict explain gives for the case's backend, or the error that stopped it."""
    args, dropped = argv(case)
    code, out, err = run_cli(args)
    if code not in (0, 1):
        return {"status": "error", "error": err.strip()[:300], "dropped": dropped}
    doc = json.loads(out)
    verdict = doc["results"][0]["verdicts"][0]
    return {"status": verdict["status"], "dropped": dropped,
            "rules": [f["rule"] for f in verdict.get("findings", []) if f.get("applies") is True]}


def judge(case: dict, status: str) -> dict:
    predicted = PREDICTED.get(status, "error")
    outcome = case["outcome"]
    agree = predicted in AGREES[outcome]
    return {"predicted": predicted, "agree": agree,
            "false_runs": outcome != "runs" and predicted == "runs",
            "false_refusal": outcome == "runs" and predicted in ("refuses", "wrong"),
            "depends": predicted == "depends"}


def load(half: str, part: str | None = None) -> list[dict]:
    return load_cases(CORPUS, half, part)


def score(cases: list[dict]) -> dict:
    """The figures the corpus is reported by, and each case's result."""
    rows = []
    for case in cases:
        answer = ask(case)
        rows.append({"id": case["id"], "outcome": case["outcome"], "decidable": bool(case.get("decidable")),
                     **answer, **judge(case, answer["status"])})
    decidable = [r for r in rows if r["decidable"]]
    rest = [r for r in rows if not r["decidable"]]
    return {"cases": len(rows),
            "false_runs": sum(r["false_runs"] for r in rows),
            "false_refusals": sum(r["false_refusal"] for r in rows),
            "errors": sum(r["predicted"] == "error" for r in rows),
            "decidable": len(decidable), "decidable_agree": sum(r["agree"] for r in decidable),
            "undecidable": len(rest), "undecidable_depends_or_agree": sum(r["agree"] or r["depends"] for r in rest),
            "rows": rows}


def summary(name: str, result: dict) -> str:
    d, a = result["decidable"], result["decidable_agree"]
    u, ua = result["undecidable"], result["undecidable_depends_or_agree"]
    pct = f"{100 * a / d:.0f} %" if d else "-"
    return (f"{name:8} {result['cases']:4} cases  false runs {result['false_runs']:2}  false refusals "
            f"{result['false_refusals']:2}  agree on decidable {a}/{d} ({pct})  depends-or-agree on the rest {ua}/{u}"
            f"  errors {result['errors']}")


def row(r: dict) -> str:
    mark = "ok " if r["agree"] or (not r["decidable"] and r["depends"]) else "MISS"
    return (f"{mark} {r['id']:28} outcome {r['outcome']:13} got {r['status']:13} decidable {r['decidable']}"
            f" {r.get('error', '')}")


def main(argv_: list[str] | None = None) -> int:
    return report(__doc__.splitlines()[0], load, score, row, summary, argv_)


if __name__ == "__main__":
    sys.exit(main())
