"""Evaluate the rule base for one config on one machine: complete three-valued verdicts, verified fixes, selection.

The evaluator keeps the meaning; the parts live beside it: results (the result model), facts, findings, fixes,
selection, sharing (verdicts shared in a batch) and memo (every cache it keeps).
"""

from typing import Any, Iterable, Sequence

from ..config import AttentionConfig
from ..environment import Environment
from . import expr
from .facts import (ABSTRACTED, BETA, CONFIG_FACTS, CONFIG_FACTS_ALL, PARTNERS, FactCache, RuleValues, build_facts,
                    config_facts, env_facts)
from .findings import BUILTIN_REFERENCE, builtin_findings, make_finding, message_of
from .fixes import advisory_fixes, apply_fixes, plan_of, search_fixes
from .memo import SHARED_LIMIT, Caches
from .results import (EFFECT_ORDER, EVERY_RELEASE, NO_RELEASE, OUTSIDE, STATUSES, ConfigResult, Finding, FixPlan,
                      Report, Selection, Verdict, opens_advisory, status_of)
from .rule_model import Backend, Rule, RuleBase
from .selection import select, settle_data
from .sharing import abstracted_key, share_of
from .states import BLOCKING_STATUSES, STATUS_OF_EFFECT, Effect, Status, Surface

__all__ = [
    "ABSTRACTED", "BETA", "BUILTIN_REFERENCE", "CONFIG_FACTS", "CONFIG_FACTS_ALL", "EFFECT_ORDER", "EVERY_RELEASE",
    "NO_RELEASE", "OUTSIDE", "PARTNERS", "SHARED_LIMIT", "STATUSES", "ConfigResult", "Evaluator", "Finding",
    "FixPlan", "Report", "Selection", "Verdict", "apply_fixes", "build_facts", "config_facts", "env_facts", "plan_of",
    "settle_data", "status_of",
]

SWEPT_REFERENCE = ("attndoctor: each modelled release swept",)


class _Values(dict):  # type: ignore[type-arg]
    """Each rule's value on one config, computed when first read: several backends read most rules."""

    def __init__(self, live: dict[str, expr.Compiled], facts: dict[str, Any]) -> None:
        super().__init__()
        self.live, self.facts = live, facts

    def __missing__(self, rule_id: str) -> Any:
        fn = self.live.get(rule_id)
        value = self[rule_id] = False if fn is None else fn(self.facts)
        return value


class Evaluator:
    """Evaluates configs against one RuleBase; holds the caches shared across configs (see memo.Caches)."""

    def __init__(self, base: RuleBase, *, ignore: Iterable[str] = (), batch: bool = False) -> None:
        self.base = base
        self.batch = batch
        """Many configs on one machine: pre-evaluate the machine's facts into every rule once (see _live_rules)."""
        self.ignore = frozenset(ignore)
        self.rule_values = RuleValues()
        self.fact_cache = FactCache()
        self.caches = Caches()

    def _live_rules(self, env: Environment) -> dict[str, expr.Compiled]:
        """Each rule with this machine's facts already filled in; rules that cannot apply here are left out.

        Partial evaluation keeps three-valued semantics: what is left reads only config facts (and the machine
        facts nobody gave), so a batch of configs on one machine, and every fix trial on the same machine,
        skips the version and arch tests. Keyed by the machine's facts, not the object.
        """
        same = self.caches.live_env
        if same is not None and same[0] is env:
            return same[1]
        machine = self.fact_cache.env(env)
        key = tuple(sorted(machine.items(), key=lambda kv: kv[0]))
        live = self.caches.live.get(key)
        if live is None:
            live = {}
            for rule in self.base.rules:
                if rule.id in self.ignore:
                    continue
                rest = expr.residual(rule.predicate, machine)
                if isinstance(rest, expr.Const):
                    if rest.value is not False:
                        live[rule.id] = (lambda value: lambda facts: value)(rest.value)
                    continue
                live[rule.id] = expr.compile_node(rest)
            self.caches.live.put(key, live)
        self.caches.live_env = (env, live)
        return live

    def findings(self, backend: Backend, config: AttentionConfig, env: Environment,
                 facts: dict[str, Any], values: dict[str, Any] | None = None) -> list[Finding]:
        """Every finding on the backend, definite ones first; `values`: the rules' values on `facts`, if known."""
        out = list(self._builtin_findings(backend, env, facts))
        rules = self._live_rules_for(backend, values.live) if isinstance(values, _Values) else \
            self.base.rules_for(backend.id)
        for rule in rules:
            if rule.id in self.ignore:
                continue
            value = values[rule.id] if values is not None else self.rule_values.value(rule, facts)
            if value is False:
                continue
            if value is True:
                out.append(self._finding(rule, True, facts))
            else:
                out.append(self._finding(rule, None, facts, *self._open_condition(rule, facts)))
        out.sort(key=lambda f: (f.applies is not True, EFFECT_ORDER[f.effect]))
        return out

    def _live_rules_for(self, backend: Backend, live: dict[str, expr.Compiled]) -> list[Rule]:
        """A backend's rules that can apply on the machine `live` was made for (the others are false there)."""
        key = (backend.id, id(live))
        found = self.caches.live_by_backend.owned(live, key)
        if found is not None:
            return found[1]
        rules = [r for r in self.base.rules_for(backend.id) if r.id in live]
        return self.caches.live_by_backend.put_owned(live, key, rules)

    def _builtin_findings(self, backend: Backend, env: Environment, facts: dict[str, Any]) -> tuple[Finding, ...]:
        """The machine's own findings for a backend: the same for every config on that machine."""
        key = (backend.id, id(env))
        found = self.caches.builtin.owned(env, key)
        if found is not None:
            return found[1]
        return self.caches.builtin.put_owned(env, key, tuple(builtin_findings(backend, env, facts,
                                                                              self.base.horizons)))

    def _no_release_runs(self, verdict: Verdict, config: AttentionConfig, env: Environment) -> Any:
        """where.no_release_runs, once per set of open findings: a sweep only fills in facts nobody gave, so a rule
        that cannot apply now cannot apply at any release, and what the open rules still ask is their condition."""
        from .where import no_release_runs

        key = (verdict.backend.id, id(env), *((f.id, f.applies, f.condition) for f in verdict.findings))
        found = self.caches.no_release.owned(env, key)
        if found is not None:
            return found[1]
        return self.caches.no_release.put_owned(env, key, no_release_runs(self, verdict, config, env))

    def _finding(self, rule: Rule, applies: bool | None, facts: dict[str, Any], condition: str = "",
                 missing: tuple[str, ...] = ()) -> Finding:
        """One Finding object per distinct finding, shared by every config it applies to (many configs stay small)."""
        message = message_of(rule, facts)
        key = (rule.id, applies, message, condition, missing)
        found = self.caches.findings.get(key)
        if found is None:
            found = self.caches.findings.put(key, make_finding(rule, applies, facts, condition, missing, message))
        return found

    def _open_condition(self, rule: Rule, facts: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
        """What is left of a rule's condition, as text, and the facts it still needs; the same for every config
        that agrees on the facts the rule reads."""
        key = (rule.id, *map(facts.get, rule.key_names))
        found = self.caches.open.get(key)
        if found is None:
            rest = expr.residual(rule.predicate, facts)
            found = self.caches.open.put(key, (expr.render(rest), tuple(sorted(expr.free_names(rest)))))
        return found

    def status(self, backend: Backend, findings: Sequence[Finding]) -> Status:
        return status_of(findings)

    def quick_status(self, backend: Backend, config: AttentionConfig, env: Environment, *,
                     sweep: bool = False) -> Status:
        """The status alone, stopping at the first blocking finding (how fix trials are judged). `sweep`: one of
        many machines tried once each (every release on every GPU), where pre-solving the rules per machine costs
        more than it saves."""
        facts = self.fact_cache.facts(config, env)
        builtin = self._builtin_findings(backend, env, facts)
        if builtin:
            return self.status(backend, builtin)
        live = self._live_rules(env) if self.batch and not sweep else None
        unknown = False
        blocking = self.caches.blocking.get(backend.id)
        if blocking is None:
            blocking = self.caches.blocking[backend.id] = [r for r in self.base.rules_for(backend.id)
                                                           if r.blocking and r.id not in self.ignore]
        for rule in blocking:
            if live is None:
                value = self.rule_values.value(rule, facts)
            else:
                fn = live.get(rule.id)
                if fn is None:
                    continue
                value = fn(facts)
            if value is True:
                return STATUS_OF_EFFECT[rule.effect]
            if value is not False and (not rule.advisory or opens_advisory({n for n in rule.names if n not in facts})):
                unknown = True
        return Status.DEPENDS if unknown else Status.SUPPORTED

    def verdict(self, backend: Backend, config: AttentionConfig, env: Environment, *,
                facts: dict[str, Any] | None = None, search_fix: bool = True,
                values: dict[str, Any] | None = None) -> Verdict:
        """The backend's verdict; `values`: the rules' values on `facts`, when the caller has them."""
        facts = self.fact_cache.facts(config, env) if facts is None else facts
        findings = self.findings(backend, config, env, facts, values)
        status = self.status(backend, findings)
        plans: list[FixPlan] = []
        if search_fix and status in BLOCKING_STATUSES:
            plans = search_fixes(self, backend, config, env, [f for f in findings if f.blocking and f.applies is True])
        elif search_fix and status == Status.KNOWN_BUG:
            plans = advisory_fixes(self, backend, config, env, [f for f in findings if f.at_risk])
        verdict = Verdict(backend=backend, status=status, findings=tuple(findings),
                          fix=plans[0] if plans else None, alternatives=tuple(plans[1:]))
        if status == Status.DEPENDS:
            swept = self._no_release_runs(verdict, config, env)
            if swept is not None:
                return _swept(verdict, swept)
        if search_fix and status == Status.DEPENDS and not self.batch:
            from .where import where_it_runs

            places = where_it_runs(self, verdict, config, env)
            if places and any(p.swept for p in places) or env.sm is None:
                verdict = verdict._replace(where=places)
        return verdict

    def evaluate(self, config: AttentionConfig, env: Environment,
                 backends: Sequence[str] | None = None) -> ConfigResult:
        if self.batch:
            return self._evaluate_shared(config, env, backends)
        facts = self.fact_cache.facts(config, env)
        values = {r.id: self.rule_values.value(r, facts) for r in self.base.rules}
        all_verdicts = {b.id: self.verdict(b, config, env, facts=facts, values=values) for b in self.base.backends}
        selections = tuple(self.select(framework, all_verdicts, facts) for framework in self.frameworks())
        return ConfigResult(config=config, all_verdicts=tuple(all_verdicts.values()), selected=selections,
                            shown=tuple(dict.fromkeys(backends)) if backends else None)

    def _evaluate_shared(self, config: AttentionConfig, env: Environment,
                         backends: Sequence[str] | None) -> ConfigResult:
        """A batch: each backend's verdict is computed once per distinct value of the facts it can depend on, and
        each framework's selection once per distinct set of verdicts; configs share the objects."""
        caches = self.caches
        if caches.shared_env is not env:
            caches.shared_env = env
            caches.forget_machine()
        facts = self.fact_cache.facts(config, env)
        values = _Values(self._live_rules(env), facts)
        all_verdicts: dict[str, Verdict] = {}
        for backend in self.base.backends:
            share = caches.shared.get(backend.id)
            if share is None:
                share = caches.shared[backend.id] = share_of(
                    [r for r in self.base.rules_for(backend.id) if r.id not in self.ignore], env)
            key = tuple(map(facts.get, share.names))
            if share.abstract:
                key += abstracted_key(share, facts)
            for rule, read in share.by_value:
                found = values[rule.id]
                key += (found,) if found is False else (found, *map(facts.get, read))
            verdict = share.cache.get(key)
            if verdict is None:
                verdict = share.cache.put(key, self.verdict(backend, config, env, facts=facts, values=values))
            all_verdicts[backend.id] = verdict
        selections = tuple(self._shared_select(framework, all_verdicts, facts) for framework in self.frameworks())
        return ConfigResult(config=config, all_verdicts=tuple(all_verdicts.values()), selected=selections,
                            shown=tuple(dict.fromkeys(backends)) if backends else None)

    def _shared_select(self, framework: str, verdicts: dict[str, Verdict], facts: dict[str, Any]) -> Selection:
        names = self.caches.selection_names.get(framework)
        if names is None:
            entries = [e for e in self.base.selection if e.framework == framework]
            names = self.caches.selection_names[framework] = (
                tuple(sorted(set().union(*(expr.free_names(e.predicate) for e in entries)))),
                tuple(dict.fromkeys(b for e in entries for b in e.order if b in verdicts)))
        # A framework's walk reads each verdict's status and the findings that block it or put it at risk (shared
        # objects), not its fixes: verdicts that differ in those alone share a selection.
        read = tuple((v.status, *(f for f in v.findings if f.at_risk or (f.applies is True and f.blocking)))
                     for v in (verdicts[b] for b in names[1]))
        key = (framework, *(tuple(map(id, r)) for r in read), *map(facts.get, names[0]))
        found = self.caches.selections.get(key)
        if found is not None and all(a is b for x, y in zip(found[0], read) for a, b in zip(x[1:], y[1:])):
            return found[1]
        selection = self.select(framework, verdicts, facts)
        self.caches.selections.put(key, (read, selection))
        return selection

    def frameworks(self) -> list[str]:
        return list(dict.fromkeys(e.framework for e in self.base.selection))

    def select(self, framework: str, verdicts: dict[str, Verdict], facts: dict[str, Any]) -> Selection:
        return select(self.base.selection, framework, verdicts, facts)


def _swept(verdict: Verdict, swept: tuple[str, str]) -> Verdict:
    """A `depends` verdict once every modelled release was swept: no release runs it, or every release does."""
    if swept[0] == Status.UNSUPPORTED:
        finding = Finding(id=NO_RELEASE, effect=Effect.UNSUPPORTED, surfaces=Surface.DISPATCH,
                          title=swept[1].split(";")[0], message=swept[1], symptom="", fixes=(),
                          references=SWEPT_REFERENCE, applies=True)
        return Verdict(backend=verdict.backend, status=Status.UNSUPPORTED, findings=(finding, *verdict.findings))
    finding = Finding(id=EVERY_RELEASE, effect=Effect.INFO, surfaces=Surface.DISPATCH, title=swept[1],
                      message=swept[1], symptom="", fixes=(), references=SWEPT_REFERENCE, applies=True)
    return Verdict(backend=verdict.backend, status=Status.SUPPORTED,
                   findings=(finding, *(f for f in verdict.findings if not f.blocking or f.applies is False)))
