"""Checks over the rule corpus that loading alone cannot make: examples replayed, fixes outside their ranges."""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import Version

from ..errors import UsageError
from . import expr
from .evaluate import build_facts
from .rules import Rule, RuleBase, example_facts


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
    for fix in rule.fixes:
        if fix.kind in ("upgrade", "downgrade") and fix.target in rule.when:
            if rule.when[fix.target].contains(Version(fix.to), prereleases=True):
                problems.append(f"fix {fix.describe()!r}: {fix.to} is inside the affected range "
                                f"{fix.target} {rule.when[fix.target]}")
    return [LintProblem(rule.id, rule.file, rule.line, p) for p in problems]


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
