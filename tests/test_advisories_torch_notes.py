"""Advisories read from the torch 2.9-2.14 release notes reach the verdicts of sdpa-efficient, sdpa-flash and flex-attention."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from attndoctor.engine.expr import FUNCTIONS, VARIABLES
from attndoctor.engine.rules import DATA_CONDITIONS, EVIDENCE

RULES = Path(__file__).resolve().parents[1] / "rules" / "advisories_torch_notes.toml"


def applies(explain, rule, *args, backend):
    """Whether `rule` applies to the verdict of `backend` (None when the facts leave it open or it is absent)."""
    doc = explain(*args)
    verdict = next(v for v in doc["results"][0]["verdicts"] if v["backend"] == backend)
    return next((f["applies"] for f in verdict["findings"] if f["rule"] == rule), False)


def test_every_advisory_names_its_sources_fix_and_both_kinds_of_example():
    rules = tomllib.loads(RULES.read_text())["rule"]
    assert len(rules) >= 5
    for rule in rules:
        assert rule["id"].startswith("ADV-"), rule["id"]
        assert rule["evidence"] in EVIDENCE, rule["id"]
        assert any(re.search(r"#\d+", ref) for ref in rule["references"]), rule["id"]
        assert rule["fixed_in"].get("torch"), rule["id"]
        assert {example["applies"] for example in rule["examples"]} == {True, False}, rule["id"]
        assert set(rule.get("data", [])) <= set(DATA_CONDITIONS), rule["id"]
        if rule["evidence"] == "inferred":
            assert rule.get("notes"), rule["id"]


def test_conditions_use_only_known_variables():
    for rule in tomllib.loads(RULES.read_text())["rule"]:
        text = re.sub(r"'[^']*'", "", rule.get("condition", ""))
        names = set(re.findall(r"\b[a-z_][a-z0-9_]*\b", text)) - {"and", "or", "not", "in"} - set(FUNCTIONS)
        assert names <= set(VARIABLES), (rule["id"], names - set(VARIABLES))


DROPOUT = ["--gpu", "A100", "--heads", "16", "--seqlen", "8192", "--hdim", "64", "--dtype", "bf16", "--train",
           "--dropout", "0.1", "--layout", "bhsd"]


def test_efficient_dropout_offset_needs_the_product_past_two_to_the_32(explain):
    rule = "ADV-SDPA-EFFICIENT-DROPOUT-RNG-OFFSET-32BIT-PRE214"
    assert applies(explain, rule, *DROPOUT, "--batch", "8", "--torch", "2.11.0", backend="sdpa-efficient") is True
    # (4 x 16 - 1) x 8192 x 8192 stays below 2^32.
    assert applies(explain, rule, *DROPOUT, "--batch", "4", "--torch", "2.11.0", backend="sdpa-efficient") is False
    assert applies(explain, rule, *DROPOUT, "--batch", "8", "--torch", "2.14.0", backend="sdpa-efficient") is False


VARLEN = ["--gpu", "B200", "--batch", "4", "--heads", "16", "--seqlen", "2048", "--hdim", "128", "--dtype", "bf16",
          "--layout", "thd", "--sdpa-flash-impl", "fa4"]


def test_fa4_varlen_backward_is_refused_on_torch_2_11_only(explain):
    rule = "ADV-SDPA-FLASH-FA4-VARLEN-BWD-WINDOW-REFUSED-211"
    assert applies(explain, rule, *VARLEN, "--train", "--torch", "2.11.0", backend="sdpa-flash") is True
    assert applies(explain, rule, *VARLEN, "--train", "--torch", "2.12.0", backend="sdpa-flash") is False
    assert applies(explain, rule, *VARLEN, "--infer", "--torch", "2.11.0", backend="sdpa-flash") is False
