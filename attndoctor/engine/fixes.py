"""Fixes: resolved into a plan a user can follow, applied to a config and machine, and searched for the smallest
plans that make a refused backend run (each checked by evaluating again)."""

import itertools
from typing import Any, Protocol, Sequence

from ..config import AttentionConfig, with_changes
from ..environment import ABSENT, Environment
from ..errors import UsageError
from . import expr
from .facts import FactCache, RuleValues, build_facts, fix_version
from .results import Finding, FixPlan
from .rule_model import FIX_RANK, PADDABLE, Backend, Fix, RuleBase
from .states import Status


class Trials(Protocol):
    """What the fix search needs of an evaluator (evaluate.Evaluator): facts, findings and statuses to judge trials."""

    base: RuleBase
    fact_cache: FactCache
    rule_values: RuleValues

    def findings(self, backend: Backend, config: AttentionConfig, env: Environment,
                 facts: dict[str, Any]) -> list[Finding]: ...

    def quick_status(self, backend: Backend, config: AttentionConfig, env: Environment) -> Status: ...


def search_fixes(evaluator: Trials, backend: Backend, config: AttentionConfig, env: Environment,
                 blocking: list[Finding]) -> list[FixPlan]:
    """The smallest plans that make the backend run, best first, none another plan dominates."""
    per_finding = [list(dict.fromkeys(f.fixes)) for f in blocking]
    # (fixes, actions): a finding's own config changes applied together count as one action
    # (padding seqlen_q and seqlen_kv to a multiple of 64 is one step for the user).
    candidates: list[tuple[tuple[Fix, ...], int]] = []
    singles = list(dict.fromkeys(fix for fixes in per_finding for fix in fixes))
    candidates.extend(((fix,), 1) for fix in singles)
    for fixes in per_finding:
        changes = [f for f in fixes if f.kind in ("change", "pad")]
        candidates.extend((pair, 1) for pair in itertools.combinations(changes, 2))
    if len(per_finding) > 1 and all(per_finding):
        for combo in itertools.islice(itertools.product(*per_finding), 64):
            unique = tuple(dict.fromkeys(combo))
            if len(unique) > 1:
                candidates.append((unique, len(unique)))
    facts = evaluator.fact_cache.facts(config, env)
    working: list[tuple[FixPlan, int]] = []
    seen: set[tuple[Any, ...]] = set()
    stuck: list[tuple[tuple[Fix, ...], int, AttentionConfig, Environment]] = []
    for round_ in range(2):
        for combo, actions in candidates:
            plan = plan_of(combo, config, env, facts)
            if plan is None:
                continue
            key = _plan_key(plan)
            if key in seen:
                continue
            seen.add(key)
            applied = apply_fixes(plan, config, env, facts)
            if applied is None:
                continue
            new_config, new_env = applied
            result = evaluator.quick_status(backend, new_config, new_env)
            if result in (Status.SUPPORTED, Status.DEPENDS):
                working.append((FixPlan(fixes=plan, result=result), min(actions, len(plan))))
            elif round_ == 0 and len(stuck) < 8:
                stuck.append((plan, actions, new_config, new_env))
        if working or round_:
            break
        # No single step runs it: a step that leaves only new refusals gets their fixes added, once
        # (upgrading flash-attn past a check can leave a case that only dropout = 0 fixes).
        candidates = []
        for plan, actions, new_config, new_env in stuck:
            new_facts = evaluator.fact_cache.facts(new_config, new_env)
            for finding in evaluator.findings(backend, new_config, new_env, new_facts):
                if finding.blocking and finding.applies is True:
                    candidates.extend(((*plan, fix), actions + 1) for fix in finding.fixes)
    if working:
        smallest = min(actions for _, actions in working)
        working = [(p, a) for p, a in working if a == smallest]
    working.sort(key=lambda pa: (pa[0].result != Status.SUPPORTED, sum(FIX_RANK[f.kind] for f in pa[0].fixes),
                                 len(pa[0].fixes)))
    found = [p for p, _ in working]
    return [p for p in found if not any(_dominates(q, p) for q in found if q is not p)]


def advisory_fixes(evaluator: Trials, backend: Backend, config: AttentionConfig, env: Environment,
                   risks: list[Finding]) -> list[FixPlan]:
    """The advisories' own fixes that take the config out of them and keep the backend running, those that
    clear the most advisories first."""
    facts = evaluator.fact_cache.facts(config, env)
    scored = []
    for fix in dict.fromkeys(f for risk in risks for f in risk.fixes):
        applied = apply_fixes((fix,), config, env, facts)
        if applied is None:
            continue
        new_facts = build_facts(*applied)
        cleared = sum(evaluator.rule_values.value(evaluator.base.rule(r.id), new_facts) is False for r in risks)
        if not cleared:
            continue
        result = evaluator.quick_status(backend, *applied)
        if result in (Status.SUPPORTED, Status.OUTSIDE_RULES):  # a fix release may be newer than the rules model
            scored.append((-cleared, FIX_RANK[fix.kind], FixPlan(fixes=_resolved((fix,), facts), result=result)))
    scored.sort(key=lambda s: s[:2])
    return [plan for *_, plan in scored]


def _resolved(fixes: Sequence[Fix], facts: dict[str, Any]) -> tuple[Fix, ...]:
    """The fixes with each config change's expression replaced by the value it gives for these facts."""
    out = []
    for fix in fixes:
        if fix.kind in ("change", "pad") and fix.value_node is not None:
            value = expr.compile_node(fix.value_node)(facts)
            fix = Fix(fix.kind, fix.target, value, fix.note)
        out.append(fix)
    return tuple(out)


def _current(config: AttentionConfig, field: str) -> Any:
    if field in ("window_left", "window_right"):
        return config.window[0 if field == "window_left" else 1]
    return getattr(config, field, None)


def plan_of(fixes: Sequence[Fix], config: AttentionConfig, env: Environment,
            facts: dict[str, Any] | None = None) -> tuple[Fix, ...] | None:
    """Fixes as one plan a user can follow: resolved for this config, steps that change nothing left out, two bounds
    on one package merged into the tighter; None when two steps want different values of one field, or a pad would
    not grow its field (padding never cuts)."""
    facts = build_facts(config, env) if facts is None else facts
    steps: dict[tuple[str, str], Fix] = {}
    for fix in _resolved(fixes, facts):
        if fix.kind in ("change", "pad"):
            if fix.to is expr.UNKNOWN:
                return None
            current = _current(config, fix.target)
            if fix.kind == "pad" and (current is None or fix.to < current):
                return None
            if current is not None and fix.to == current:
                continue
            if fix.kind == "change" and fix.target in PADDABLE and current is not None and fix.to < current:
                fix = fix._replace(note="a model change" + (f"; {fix.note}" if fix.note else ""))
            key = ("field", fix.target)
        elif fix.kind in ("upgrade", "downgrade"):
            current = env.versions.get(fix.target)
            if current == ABSENT:
                return None
            if current is not None:
                now, to = fix_version(current, fix.target), fix_version(fix.to, fix.target)
                if now >= to if fix.kind == "upgrade" else now <= to:
                    continue
            key = ("package", fix.target)
        else:
            if env.env_vars.get(fix.target) == fix.to:
                continue
            key = ("env", fix.target)
        other = steps.get(key)
        if other is None:
            steps[key] = fix
        elif other[:3] == fix[:3]:
            continue
        elif fix.kind == other.kind and fix.kind in ("upgrade", "downgrade"):
            later = fix_version(fix.to, fix.target) > fix_version(other.to, fix.target)
            if later == (fix.kind == "upgrade"):
                steps[key] = fix
        else:
            return None
    return tuple(steps.values()) or None


def _plan_key(plan: Sequence[Fix]) -> tuple[Any, ...]:
    """A plan's identity: its steps, whatever notes the rules gave them."""
    return tuple(sorted((f.kind, f.target, str(f.to)) for f in plan))


def _dominates(a: FixPlan, b: FixPlan) -> bool:
    """True when plan a asks no more than plan b (the same steps, lower upgrade bounds) for as good a result."""
    if a.result != Status.SUPPORTED and b.result == Status.SUPPORTED:
        return False
    theirs = {(f.kind, f.target): f for f in b.fixes}
    for f in a.fixes:
        g = theirs.get((f.kind, f.target))
        if g is None:
            return False
        if f.kind in ("upgrade", "downgrade"):
            lower = fix_version(f.to, f.target) <= fix_version(g.to, g.target)
            if lower != (f.kind == "upgrade") and f.to != g.to:
                return False
        elif f.to != g.to:
            return False
    return True


def apply_fixes(fixes: Sequence[Fix], config: AttentionConfig, env: Environment,
                facts: dict[str, Any] | None = None) -> tuple[AttentionConfig, Environment] | None:
    """The config and environment with fixes applied, or None when a fix does not make sense here."""
    changes: dict[str, Any] = {}
    facts = build_facts(config, env) if facts is None else facts
    for fix in fixes:
        if fix.kind in ("upgrade", "downgrade"):
            current = env.versions.get(fix.target)
            if current == ABSENT:
                return None
            env = env.with_version(fix.target, fix.to)
        elif fix.kind == "set":
            env = env.with_env_var(fix.target, fix.to)
        elif fix.kind == "unset":
            env = env.with_env_var(fix.target, None)
        else:
            value = expr.compile_node(fix.value_node)(facts) if fix.value_node is not None else fix.to
            if value is expr.UNKNOWN:
                return None
            if fix.target in ("window_left", "window_right"):
                window = list(changes.get("window", config.window))
                window[0 if fix.target == "window_left" else 1] = value
                changes["window"] = window
            elif fix.target != "qkv_format":
                changes[fix.target] = value
    if changes:
        if all(getattr(config, k, None) == v for k, v in changes.items() if k != "window") and \
                changes.get("window", list(config.window)) == list(config.window):
            return None
        try:
            config = with_changes(config, changes)
        except UsageError:
            return None
    return config, env
