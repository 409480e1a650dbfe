"""The corpora of real threads (tests/corpus): every case well formed and in the half its thread's hash puts it,
and the scorers ask each case as a user would (only the facts the thread gives)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
BACKENDS = {"sdpa-flash", "sdpa-efficient", "sdpa-cudnn", "sdpa-math", "flex-attention", "flash-attn-2",
            "flash-attn-3", "flash-attn-4", "cudnn-fe", "te-flash", "te-fused", "te-unfused"}


def tool(name: str):
    path = ROOT / "tools" / name
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def cases(folder: str) -> list[tuple[str, dict]]:
    out = []
    for path in sorted((CORPUS / folder).glob("*.jsonl")):
        out += [(path.name, json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return out


def test_the_incident_halves_follow_the_hash_and_hold_enough_cases():
    split = tool("corpus_split.py")
    assert split.check() == []
    incidents = cases("incidents")
    assert len(incidents) >= 120
    for name, case in incidents:
        assert case["backend"] in BACKENDS, case["id"]
        assert case["outcome"] in ("runs", "refused", "fails", "wrong-results"), case["id"]
        assert isinstance(case["decidable"], bool) and case["source"].count("#") == 1


def test_the_error_text_halves_follow_the_hash_and_hold_enough_texts():
    split = tool("corpus_split.py")
    assert split.check(CORPUS / "why") == []
    texts = cases("why")
    assert len(texts) >= 200
    seen = {}
    from attndoctor.why.topics import TOPICS

    for name, case in texts:
        half = "heldout" if name.startswith("heldout") else "tuning"
        assert split.half(case["source"]) == half, f"{name}: {case['source']}"
        assert seen.setdefault(case["source"], name) == name, f"{case['source']} in {name} and {seen[case['source']]}"
        assert case["cause"] in TOPICS, case["id"]
        assert set(case["backend"]) <= BACKENDS and case["text"].strip()


def test_the_incident_scorer_asks_with_the_threads_facts_only():
    score = tool("corpus/score_incidents.py")
    args, dropped = score.argv({"backend": "flash-attn-2", "config": {"hdim": 128, "train": True, "cp": False,
                                                                        "window": [16, 0]},
                                "env": {"gpu": "T4", "triton": "3.1"}})
    assert args[:3] == ["explain", "--backend", "flash-attn-2"]
    assert "--train" in args and args[args.index("--cp") + 1] == "1" and args[args.index("--window") + 1] == "16,0"
    assert dropped == ["triton"]
    result = score.score([{"id": "t", "backend": "flash-attn-2", "config": {"hdim": 128}, "env": {"gpu": "T4"},
                           "outcome": "refused", "decidable": True}])
    assert result["decidable_agree"] == 1 and result["false_runs"] == 0


def test_a_collection_part_is_scored_on_its_own(tmp_path):
    common = tool("corpus/corpus_common.py")
    for name in ("heldout.jsonl", "heldout-2.jsonl", "heldout-12.jsonl", "heldout-old.jsonl", "tuning-2.jsonl"):
        (tmp_path / name).write_text(json.dumps({"source": f"o/r#{name}", "id": name}) + "\n", encoding="utf-8")
    assert [c["id"] for c in common.load_cases(tmp_path, "heldout")] == ["heldout-12.jsonl", "heldout-2.jsonl",
                                                                          "heldout.jsonl"]
    assert [c["id"] for c in common.load_cases(tmp_path, "heldout", "1")] == ["heldout.jsonl"]
    assert [c["id"] for c in common.load_cases(tmp_path, "heldout", "2")] == ["heldout-2.jsonl"]


def test_the_why_scorer_judges_backend_kind_and_fix():
    score = tool("corpus/score_why.py")
    case = {"id": "t", "text": "ImportError: /x/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: "
                               "_ZN3c104cuda9SetDeviceEi", "flags": {}, "backend": ["flash-attn-2"],
            "cause": "install-abi", "fix": {"action": "reinstall", "target": "flash_attn"}}
    result = score.score([case])
    assert result["right"] == 1 and result["fix_right"] == 1
    wrong = dict(case, cause="head-dim")
    assert score.score([wrong])["right"] == 0


def test_the_why_scorer_reads_the_package_of_a_target_with_a_version_or_a_note():
    """A thread's fix written "xformers (compiled from source)" or "flash-attn==2.3.3" names the package xformers or
    flash-attn; a target of several words ("attention head dim (<= 64 ...)") is matched only whole."""
    fix_right = tool("corpus/score_why.py").fix_right
    reinstall = ["reinstall xformers with a build compiled for this GPU"]
    assert fix_right({"action": "reinstall", "target": "xformers (compiled from source)"}, reinstall)
    assert fix_right({"action": "downgrade", "target": "flash-attn==2.3.3"}, ["pin flash-attn to 2.3.3"])
    assert fix_right({"action": "upgrade", "target": "torch 2.1.0"}, ["upgrade torch to 2.1 or later"])
    assert not fix_right({"action": "reinstall", "target": "xformers (compiled from source)"},
                         ["reinstall flash-attn built for this GPU"])
    assert not fix_right({"action": "change-config", "target": "attention head dim (<= 64 for backward on RTX 4090)"},
                         ["change the attention implementation"])


@pytest.mark.parametrize("half", ["heldout", "tuning"])
def test_every_case_can_be_asked(half):
    """Both scorers turn each case into a command line (the scores themselves are reported, not asserted here)."""
    inc, why = tool("corpus/score_incidents.py"), tool("corpus/score_why.py")
    for case in inc.load(half):
        assert inc.argv(case)[0][0] == "explain"
    for case in why.load(half):
        args = why.argv(case)
        assert args[0] == "why" and args[-2:] == ["--", case["text"]]  # a text may start with a dash


def test_no_rule_cites_a_held_out_thread_unless_it_is_left_out_of_the_figures():
    """A held-out case whose thread a rule came to cite is listed in contaminated.txt, and the scorers skip it."""
    import re

    listed = tool("corpus/score_why.py").contaminated()
    text = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "rules").glob("*.toml"))
    held = {case["source"] for name, case in cases("why") + cases("incidents") if name.startswith("heldout")}
    cited = {s for s in held if re.search(re.escape(s) + r"(?!\d)", text)}
    assert cited <= listed, f"held-out threads cited by rules, not listed: {sorted(cited - listed)}"
    assert not {c["source"] for c in tool("corpus/score_why.py").load("heldout")} & listed
