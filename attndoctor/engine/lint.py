"""Checks over the rule corpus that loading alone cannot make: examples replayed, fixes outside their ranges."""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import Version

from ..errors import UsageError
from . import expr
from .facts import build_facts
from .rules import PADDABLE, Rule, RuleBase, example_facts


@dataclass(frozen=True)
class LintProblem:
    """One thing wrong with one rule."""

    rule: str
    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.rule}: {self.message}"


def lint_rule(rule: Rule) -> list[LintProblem]:
    """Every problem of one rule: missing examples, examples that disagree, fixes inside the affected range."""
    problems: list[str] = []
    if not any(e.applies for e in rule.examples):
        problems.append("needs an example where it applies (applies = true)")
    if not any(not e.applies for e in rule.examples):
        problems.append("needs an example where it does not apply (applies = false)")
    for i, example in enumerate(rule.examples, 1):
        try:
            config, env = example_facts(example)
        except UsageError as exc:
            problems.append(f"example {i}: {exc}")
            continue
        facts = build_facts(config, env)
        value = rule.compiled(facts)
        if value is expr.UNKNOWN:
            rest = expr.residual(rule.predicate, facts)
            missing = ", ".join(sorted(expr.free_names(rest)))
            problems.append(f"example {i}: leaves {missing} unknown; give them in config/env")
        elif value is not example.applies:
            problems.append(f"example {i}: expected applies = {str(example.applies).lower()}, "
                            f"the rule says {str(value).lower()}")
    problems.extend(_size_fixes(rule))
    for fix in rule.fixes:
        if fix.kind in ("upgrade", "downgrade") and fix.target in rule.when:
            if rule.when[fix.target].contains(Version(fix.to), prereleases=True):
                problems.append(f"fix {fix.describe()!r}: {fix.to} is inside the affected range "
                                f"{fix.target} {rule.when[fix.target]}")
    return [LintProblem(rule.id, rule.file, rule.line, p) for p in problems]


def _size_fixes(rule: Rule) -> list[str]:
    """Config fixes that are no step where the rule applies: a pad that shrinks, a change to the value already there,
    a pad written as a plain change (the fix search only checks that a `pad` grows)."""
    problems: list[str] = []
    applying = []
    for example in rule.examples:
        if example.applies:
            try:
                config, env = example_facts(example)
            except UsageError:
                continue
            applying.append((config, build_facts(config, env)))
    for fix in rule.fixes:
        if fix.kind not in ("change", "pad") or fix.value_node is None:
            continue
        text = f"set {fix.target} = {fix.to}" if fix.kind == "change" else f"pad {fix.target} to {fix.to}"
        if fix.kind == "change" and fix.target in PADDABLE and "pad" in fix.note.lower():
            problems.append(f"fix {text!r} says it pads: write it as pad = {fix.target!r} "
                            "so the fix search can check that it only grows")
        changed, shrunk = False, []
        for config, facts in applying:
            value = expr.compile_node(fix.value_node)(facts)
            current = getattr(config, fix.target, None)
            if value is expr.UNKNOWN or current is None or value == current:
                continue
            if fix.kind == "pad" and value < current:
                shrunk.append(f"{current} -> {value}")
            else:
                changed = True
        if shrunk and not changed:
            problems.append(f"fix {text!r} shrinks {fix.target} ({shrunk[0]}) where the rule applies: padding only "
                            "grows a size; a smaller value is a model change, not a pad")
        elif applying and not changed:
            problems.append(f"fix {text!r} changes nothing in the examples where the rule applies")
    return problems


def lint(base: RuleBase) -> list[LintProblem]:
    """Lint the whole corpus."""
    problems: list[LintProblem] = []
    for rule in base.rules:
        problems.extend(lint_rule(rule))
    frameworks = {b.framework for b in base.backends}
    for entry in base.selection:
        if entry.framework not in frameworks:
            problems.append(LintProblem(entry.id, "selection", 0, f"unknown framework {entry.framework!r}"))
    return problems
