"""Scores `attndoctor why` against the corpus of pasted error texts (tests/corpus/why): each text is given as a
user would give it, with the facts its thread states outside the text as flags, and the top cause is compared with
the cause and fix the thread established.

    python tools/corpus/score_why.py [--half heldout|tuning|both] [--cases] [--json FILE]
The held-out half is for reporting only: never tune on its cases.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus_common import contaminated, load_cases, report, run_cli  # noqa: E402

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "corpus" / "why"
FLAGS = {"gpu": "--gpu", "torch": "--torch", "cuda": "--cuda", "cudnn": "--cudnn", "flash_attn": "--flash-attn",
         "flash_attn_3": "--flash-attn-3", "flash_attn_4": "--flash-attn-4", "te": "--te",
         "cutlass_dsl": "--cutlass-dsl", "cudnn_frontend": "--cudnn-frontend", "driver": "--driver"}
TARGETS = {
    "torch": ("torch", "pytorch"),
    "flash_attn": ("flash-attn", "flash_attn", "flashattention", "flash attention", "flash-attention"),
    "cudnn": ("cudnn",), "transformer_engine": ("transformerengine", "transformer-engine", "transformer_engine", "te "),
    "transformers": ("transformers",), "vllm": ("vllm",), "sglang": ("sglang",), "triton": ("triton",),
    "xformers": ("xformers",), "cudnn_frontend": ("cudnn-frontend", "cudnn_frontend"), "cuda": ("cuda",),
    "driver": ("driver",), "cuda_toolkit_(nvcc)": ("nvcc", "cuda toolkit"),
}
for _n in ("2", "3", "4"):
    TARGETS[f"flash_attn_{_n}"] = TARGETS["flash_attn"]
TARGETS["cudnn_fe"] = TARGETS["cudnn"] + TARGETS["cudnn_frontend"]
ACTIONS = {"upgrade": ("upgrade", "install", "fixed in", ">="), "downgrade": ("downgrade", "<", "pin"),
           "install": ("install",), "reinstall": ("reinstall", "rebuild", "build from source", "--no-build-isolation",
                                                  "matching", "built for"),
           "set-env": ("export", "set ", "="), "change-config": ("set ", "pad ", "change", "use "),
           "disable-backend": ("disable", "enable_", "(false)", "=0", "attn_implementation", "sdpa_kernel"),
           "use-backend": ("use ", "attn_implementation", "sdpa_kernel", "select")}


def argv(case: dict) -> list[str]:
    args = ["why", "--format", "json", "--no-here"]
    for key, value in (case.get("flags") or {}).items():
        if key in FLAGS and value not in (None, ""):
            args += [FLAGS[key], str(value)]
    return args + ["--", case["text"]]


def ask(case: dict) -> dict:
    code, out, err = run_cli(argv(case))
    if code not in (0, 1):
        return {"code": code, "error": err.strip()[:300], "cause": None}
    doc = json.loads(out)
    return {"code": code, "cause": doc.get("cause"), "verdict": doc.get("verdict", ""),
            "messages": [m["id"] for m in doc["understood"]["messages"]]}


def norm(text: str) -> str:
    """Lower case, one space, no quotes and no spaces around '=': `attn_implementation="eager"` is the thread's
    attn_implementation=eager."""
    text = re.sub(r"[\"'`]", "", text.lower())
    return re.sub(r"\s*=\s*", "=", re.sub(r"\s+", " ", text))


_PACKAGE = re.compile(r"(?P<package>[a-z][\w.\-]*?)\s*(?:(?:==|>=|<=|<|>|\s)\s*v?\d[\w.+]*)?\s*(?:\(.*\))?")
"""A target that is one package with a version or a note after it: "xformers (compiled from source)", "torch 2.1.0",
"flash-attn==2.3.3"."""


def target_names(target: str) -> tuple[str, ...]:
    """How a fix may name the thread's target: its known spellings, else the target itself and its package's name."""
    one = _PACKAGE.fullmatch(target)
    names = [target] + ([one["package"]] if one and len(one["package"]) > 2 else [])
    known = [TARGETS.get(n.replace("-", "_").replace(" ", "_")) for n in names]
    spelled = (n for name in names for n in (name, name.replace("_", "-"), name.replace("-", "_")))
    return tuple(dict.fromkeys(n for group in known if group for n in group)) or tuple(dict.fromkeys(spelled))


def fix_right(case_fix: dict | None, fixes: list[str]) -> bool | None:
    """Whether one of the cause's fixes is the thread's fix: the same package, variable, field or backend, and an
    action of the same kind. None when the thread names no fix."""
    if not case_fix:
        return None
    target = norm(str(case_fix.get("target", "")))
    names = target_names(target)
    words = ACTIONS.get(case_fix.get("action", ""), ())
    for fix in fixes:
        text = norm(fix)
        if any(n in text for n in names) and any(w in text for w in words):
            return True
    return False


def judge(case: dict, answer: dict) -> dict:
    cause = answer.get("cause") or {}
    backends = set(cause.get("backends") or ())
    wanted = set(case.get("backend") or ())
    backend_ok = not wanted or bool(backends & wanted) or (not backends and case["cause"].startswith("install"))
    cause_ok = case["cause"] in (cause.get("topics") or ())
    fix = fix_right(case.get("fix"), list(cause.get("fixes") or ()))
    return {"backend_ok": backend_ok, "cause_ok": cause_ok, "right": bool(cause) and backend_ok and cause_ok,
            "fix_ok": fix, "top": cause.get("id"), "topics": cause.get("topics"), "top_backends": sorted(backends)}


def load(half: str, part: str | None = None) -> list[dict]:
    return load_cases(CORPUS, half, part)


def score(cases: list[dict]) -> dict:
    rows = []
    for case in cases:
        answer = ask(case)
        rows.append({"id": case["id"], "cause": case["cause"], "backend": case.get("backend"),
                     "code": answer["code"], "error": answer.get("error", ""), "messages": answer.get("messages", []),
                     **judge(case, answer)})
    with_fix = [r for r in rows if r["fix_ok"] is not None]
    return {"cases": len(rows), "right": sum(r["right"] for r in rows),
            "with_fix": len(with_fix), "fix_right": sum(bool(r["fix_ok"]) and r["right"] for r in with_fix),
            "recognised": sum(bool(r["messages"]) for r in rows), "errors": sum(r["code"] not in (0, 1) for r in rows),
            "rows": rows}


def summary(name: str, r: dict) -> str:
    n, f = r["cases"] or 1, r["with_fix"] or 1
    return (f"{name:8} {r['cases']:4} texts  right backend and cause {r['right']} ({100 * r['right'] / n:.0f} %)  "
            f"thread's fix {r['fix_right']}/{r['with_fix']} ({100 * r['fix_right'] / f:.0f} %)  "
            f"a message recognised {r['recognised']}  errors {r['errors']}")


def row(r: dict) -> str:
    return (f"{'ok ' if r['right'] else 'MISS'} {r['id']:26} want {r['cause']:16} {str(r['backend']):28} got "
            f"{r['top']} {r['topics']} {r['top_backends']} fix {r['fix_ok']} {r['error']}")


def main(argv_: list[str] | None = None) -> int:
    return report(__doc__.splitlines()[0], load, score, row, summary, argv_)


if __name__ == "__main__":
    sys.exit(main())
