"""Every shipped rule loads, passes the lint, and its examples replay as written."""

from __future__ import annotations

import pytest

from attndoctor._toml import loads_toml
from attndoctor.engine.lint import lint, lint_rule
from attndoctor.engine.rules import bundled_rules_dir, load_rulebase

BASE = load_rulebase()
FILES = {p.name: loads_toml(p.read_text(encoding="utf-8")) for p in sorted(bundled_rules_dir().glob("*.toml"))}


def test_every_rule_and_backend_written_is_loaded_once():
    """The base holds exactly the [[rule]] and [[backend]] tables the files hold: none dropped, none doubled."""
    written = [r["id"] for doc in FILES.values() for r in doc.get("rule", [])]
    assert len(written) > 400 and len(written) == len(set(written))
    assert sorted(r.id for r in BASE.rules) == sorted(written)
    backends = [b["id"] for doc in FILES.values() for b in doc.get("backend", [])]
    assert list(BASE.backend_ids) == backends
    assert {"sdpa-flash", "sdpa-efficient", "sdpa-cudnn", "sdpa-math", "te-fused", "te-flash"} <= set(backends)


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


def test_rules_of_torch_2_12_and_later_rest_on_more_than_wheel_strings():
    from packaging.version import Version

    late = [r for r in BASE.rules if any(b.startswith("sdpa-") for b in r.backends)
            and "torch" in r.when and not r.when["torch"].contains(Version("2.11.0"))
            and any(r.when["torch"].contains(Version(v)) for v in ("2.12.0", "2.13.0", "2.14.0", "2.15.0"))]
    assert late, "no SDPA rule starts at torch 2.12 or later"
    for rule in late:
        assert not any("wheel strings" in ref for ref in rule.references), rule.id
        assert any("#" in ref or "@" in ref for ref in rule.references), rule.id
