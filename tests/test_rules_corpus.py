"""Every shipped rule loads, passes the lint, and its examples replay as written."""

from __future__ import annotations

import pytest

from attndoctor.engine.lint import lint, lint_rule
from attndoctor.engine.rules import load_rulebase

BASE = load_rulebase()


def test_corpus_loads_with_rules_and_backends():
    assert len(BASE.rules) >= 3
    assert {"sdpa-flash", "sdpa-efficient", "sdpa-cudnn", "sdpa-math", "te-fused", "te-flash"} <= set(BASE.backend_ids)


@pytest.mark.parametrize("rule", BASE.rules, ids=[r.id for r in BASE.rules])
def test_rule_lints_clean_and_examples_replay(rule):
    problems = lint_rule(rule)
    assert not problems, "\n".join(map(str, problems))


def test_selection_entries_are_consistent():
    assert not [p for p in lint(BASE) if p.file == "selection"]
    for framework in {e.framework for e in BASE.selection}:
        entries = [e for e in BASE.selection if e.framework == framework]
        assert entries[-1].condition_text == "" and not entries[-1].predicate.__class__.__name__ == "InRange", \
            f"{framework}: the last order must be an unconditional fallback"
