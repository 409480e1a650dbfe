"""Advisories: known bugs of kernels that accept the call. A backend with one at risk is not `✓ runs`; the data it
needs stay open ("at risk if ..."), the workaround is shown, and the gate fails only where nothing is left open."""

from __future__ import annotations

import json

import pytest

from attndoctor.engine.rules import build_rulebase
from attndoctor.errors import RuleError

CASE = ["explain", "--gpu", "H100", "--torch", "2.11.0", "--cudnn", "9.19.0", "--heads", "1", "--hdim", "64",
        "--dtype", "bf16", "--mask", "arbitrary"]
ADVISORY = "ADV-CUDNN-SM90-BWD-KV64-LSE-NAN"


def verdict(cli, *extra, backend="sdpa-cudnn"):
    code, out, err = cli(*CASE, *extra, "--format", "json")
    doc = json.loads(out)
    return code, doc, next(v for v in doc["results"][0]["verdicts"] if v["backend"] == backend)


def test_pytorch_196678_is_a_known_bug_of_sdpa_cudnn_at_seqlen_704(cli):
    code, doc, v = verdict(cli, "--seqlen", "704", "--train")
    assert v["status"] == "known-bug" and v["supported"] is True
    finding = next(f for f in v["findings"] if f["rule"] == ADVISORY)
    assert finding["applies"] is True and [d["name"] for d in finding["data"]] == ["low-lse"]
    assert "is_causal=True" in finding["workaround"] and finding["fixed_in"] == {"cudnn": "9.26.0"}
    assert "pytorch/pytorch#196678" in finding["references"]
    assert v["fix"]["text"].startswith("upgrade cuDNN to 9.26.0")
    pytorch = next(s for s in doc["results"][0]["selected"] if s["framework"] == "pytorch")
    assert pytorch["status"] == "selected" and pytorch["backend"] == "sdpa-cudnn" and ADVISORY in pytorch["reason"]
    assert code == 0, "an open data condition does not fail the default gate"


@pytest.mark.parametrize("extra, status", [
    (["--seqlen", "640", "--train"], "known-bug"),  # another advisory (a float32 mask) stays at risk
    (["--seqlen", "704", "--infer"], "known-bug"),
    # fixed there; the float32-mask advisory (torch 2.11) still stays at risk
    (["--seqlen", "704", "--train", "--cudnn", "9.26.0"], "known-bug"),
    # 9.27 and 9.28 are read through cudnn-frontend 1.32's checks (rules/horizons.toml); 9.29 is past every source
    (["--seqlen", "704", "--train", "--cudnn", "9.28.1"], "known-bug"),
    (["--seqlen", "704", "--train", "--cudnn", "9.29.0"], "outside-rules"),
])
def test_not_at_640_nor_in_inference_nor_once_fixed(cli, extra, status):
    _, _, v = verdict(cli, *extra)
    assert v["status"] == status and not [f for f in v["findings"] if f["rule"] == ADVISORY]


def test_text_says_known_bug_at_risk_and_the_workaround(cli):
    code, out, _ = cli(*CASE, "--seqlen", "704", "--train", "--backend", "sdpa-cudnn")
    assert "✓! runs, known bug" in out and "⚠ runs" not in out and "at risk if a query row's logsumexp" in out
    assert "workaround: pass is_causal=True" in out and "runs sdpa-cudnn — known bug " in out
    selection = out[out.index("PyTorch SDPA: runs sdpa-cudnn"):out.index("TransformerEngine:")]
    assert ADVISORY in selection


def test_fail_on_wrong_results_fails_on_an_advisory_at_risk(cli):
    code, out, _ = cli(*CASE, "--seqlen", "704", "--train", "--fail-on", "wrong-results", "--format", "json")
    failed = [c for c in json.loads(out)["gate"]["checks"] if not c["passed"]]
    assert code == 1 and any(ADVISORY in r for c in failed for r in c["reasons"])


def test_rules_list_effect_and_advisories(cli):
    code, out, _ = cli("rules", "list", "--advisories", "--format", "json")
    ids = {r["id"] for r in json.loads(out)}
    assert code == 0 and ADVISORY in ids and all(i.startswith("ADV-") for i in ids)
    code, out, _ = cli("rules", "list", "--effect", "wrong-results", "--format", "json")
    assert ADVISORY in {r["id"] for r in json.loads(out)}
    code, _, err = cli("rules", "list", "--effect", "nan")
    assert code == 2 and "--effect" in err and "wrong-results" in err


BASE = '''
[[backend]]
id = "alpha"
framework = "fw"
requires = ["torch"]

[[rule]]
id = "ADV-T"
title = "t"
backends = ["alpha"]
effect = "wrong-results"
when = { torch = ">=2.5,<2.7" }
message = "m"
symptom = "NaN"
references = ["x#1"]
'''


@pytest.mark.parametrize("extra, words", [
    ('data = ["cosmic-rays"]', "unknown data condition"),
    ('fixed_in = { torch = "2.6.0" }', "inside the affected range"),
    ('fixed_in = { pytorch = "2.7.0" }', "unknown package"),
    ('workaround = 3', "workaround"),
])
def test_advisory_fields_are_checked_at_load(tmp_path, extra, words):
    path = tmp_path / "r.toml"
    path.write_text(BASE + extra + "\n")
    with pytest.raises(RuleError, match=words):
        build_rulebase([path])


def test_at_least_forty_sourced_advisories_each_with_both_examples():
    from attndoctor.engine.rules import load_rulebase

    advisories = [r for r in load_rulebase().rules if r.advisory]
    assert len(advisories) >= 40
    for rule in advisories:
        assert rule.references and rule.symptom and (rule.workaround or rule.fixes), rule.id
        assert {e.applies for e in rule.examples} == {True, False}, rule.id


def test_the_matrix_tells_a_known_bug_from_wrong_results(cli, tmp_path):
    path = tmp_path / "many.jsonl"
    path.write_text("\n".join(json.dumps({"name": f"c{i}", "heads": 1, "hdim": 64, "seqlen": 704, "dtype": "bf16",
                                           "mask": "arbitrary", "train": True, "batch": 1 + i}) for i in range(8)))
    code, out, _ = cli("explain", "--gpu", "H100", "--torch", "2.11.0", "--cudnn", "9.19.0", "--config-file",
                       str(path), "--backend", "sdpa-cudnn", "--backend", "sdpa-math")
    assert "✓!" in out and "✓! runs, known bug at risk" in out
