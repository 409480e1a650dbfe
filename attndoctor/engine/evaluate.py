"""Evaluate the rule base for one config on one machine: complete three-valued verdicts, verified fixes, selection."""

import functools
import itertools
import re
from types import MappingProxyType
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

from ..config import AttentionConfig, with_changes
from ..environment import (ABSENT, PACKAGE_LABELS, PACKAGES, Environment, as_compared, install_hint, parse_version,
                           place)
from ..errors import UsageError
from ..fields import FACTS
from . import expr
from .rules import BLOCKING, EFFECTS, FIX_RANK, PADDABLE, Backend, Fix, Horizon, Rule, RuleBase

STATUSES = ("supported", "known-bug", "depends", "outside-rules", "unsupported", "api-mismatch", "wrong-results",
            "not-installed")
"""known-bug: it runs, and a known bug bites when the data meet its conditions (an advisory at risk); outside-rules:
a version the rules do not model decides it, so nothing is claimed."""
OUTSIDE = "AD-OUTSIDE-RULES"
NO_RELEASE = "AD-NO-RELEASE-RUNS"
EVERY_RELEASE = "AD-EVERY-RELEASE-RUNS"


EFFECT_ORDER = {effect: i for i, effect in enumerate(EFFECTS)}
"""Findings are listed in this order of effect, definite ones first."""


class Finding(NamedTuple):
    """A rule (or a built-in check) that applies to a backend, or may apply (applies None) given missing facts."""

    id: str
    effect: str
    surfaces: str
    title: str
    message: str
    symptom: str
    fixes: tuple[Fix, ...]
    references: tuple[str, ...]
    applies: bool | None
    condition: str = ""
    missing: tuple[str, ...] = ()
    evidence: str = "source"
    data: tuple[str, ...] = ()
    workaround: str = ""
    fixed_in: Mapping[str, str] = MappingProxyType({})
    advisory: bool = False

    @property
    def blocking(self) -> bool:
        """Whether it stops the backend: a known bug only once the facts say it applies, and never while values the
        config cannot state decide it."""
        return self.effect in BLOCKING and not self.data and not (self.advisory and self.applies is None)

    @property
    def at_risk(self) -> bool:
        """An advisory whose config conditions hold: only the data it names decide whether the bug bites."""
        return self.applies is True and bool(self.data) and self.effect in BLOCKING

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rule": self.id, "effect": self.effect, "applies": self.applies, "surfaces": self.surfaces,
            "title": self.title, "message": self.message, "symptom": self.symptom,
            "fixes": [f.to_dict() for f in self.fixes], "references": list(self.references),
            "evidence": self.evidence,
        }
        if self.applies is None:
            out["applies_if"] = self.condition
            out["missing"] = list(self.missing)
        if self.data:
            from .rules import DATA_CONDITIONS

            out["data"] = [{"name": d, "text": DATA_CONDITIONS[d]} for d in self.data]
        if self.workaround:
            out["workaround"] = self.workaround
        if self.fixed_in:
            out["fixed_in"] = dict(self.fixed_in)
        return out


class FixPlan(NamedTuple):
    """One or more fixes that, applied together, make a refused backend run (checked by re-evaluation)."""

    fixes: tuple[Fix, ...]
    result: str

    def describe(self) -> str:
        return " and ".join(f.describe() for f in self.fixes)

    def to_dict(self) -> dict[str, Any]:
        return {"fixes": [f.to_dict() for f in self.fixes], "text": self.describe(), "result": self.result}


class Verdict(NamedTuple):
    """Everything known about one backend for one config: status, all findings, and the smallest fix."""

    backend: Backend
    status: str
    findings: tuple[Finding, ...]
    fix: FixPlan | None = None
    alternatives: tuple[FixPlan, ...] = ()
    where: tuple[Any, ...] = ()
    """For a `depends` verdict: per reference GPU, the releases of the deciding package that do not refuse it."""

    @property
    def supported(self) -> bool | None:
        if self.status in ("supported", "known-bug"):
            return True
        return None if self.status in ("depends", "outside-rules") else False

    @property
    def advisories(self) -> list[Finding]:
        """The known bugs at risk on this config."""
        return [f for f in self.findings if f.at_risk]

    @property
    def missing(self) -> tuple[str, ...]:
        names: set[str] = set()
        for f in self.findings:
            if f.applies is None and f.blocking:
                names.update(f.missing)
        return tuple(sorted(names))

    def blocking(self, applies: bool | None = True) -> list[Finding]:
        return [f for f in self.findings if f.blocking and f.applies is applies]

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend.id, "framework": self.backend.framework, "supported": self.supported,
            "status": self.status, "findings": [f.to_dict() for f in self.findings],
            "missing": list(self.missing), "fix": self.fix.to_dict() if self.fix else None,
            "alternatives": [a.to_dict() for a in self.alternatives],
            "runs_where": [w.to_dict() for w in self.where],
        }


class Selection(NamedTuple):
    """Which backend a framework would run by default, and whether that run would work."""

    framework: str
    status: str  # selected | fails | wrong-results | depends | none | not-installed
    backend: str | None
    order: tuple[str, ...]
    candidates: tuple[str, ...] = ()
    note: str = ""
    entry: str = ""
    reason: str = ""
    references: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "framework": self.framework, "status": self.status, "backend": self.backend, "order": list(self.order),
            "candidates": list(self.candidates), "note": self.note, "order_rule": self.entry, "reason": self.reason,
            "references": list(self.references),
        }


class ConfigResult(NamedTuple):
    """The verdicts and selections for one config."""

    config: AttentionConfig
    all_verdicts: tuple[Verdict, ...]
    selected: tuple[Selection, ...]
    shown: tuple[str, ...] | None = None

    @property
    def verdicts(self) -> tuple[Verdict, ...]:
        """The verdicts the user asked to see (--backend), in the order asked."""
        if self.shown is None:
            return self.all_verdicts
        by_id = {v.backend.id: v for v in self.all_verdicts}
        return tuple(by_id[b] for b in self.shown)

    def verdict(self, backend_id: str) -> Verdict:
        return next(v for v in self.all_verdicts if v.backend.id == backend_id)

    def to_dict(self) -> dict[str, Any]:
        return {"config": self.config.to_dict(), "label": self.config.label(),
                "verdicts": [v.to_dict() for v in self.verdicts], "selected": [s.to_dict() for s in self.selected]}


class Report(NamedTuple):
    """A full answer: the environment, one result per config, and what the rule base was."""

    command: str
    environment: Environment
    results: list[ConfigResult]
    rule_count: int
    rule_files: tuple[str, ...] = ()
    ignored: Mapping[str, str] = MappingProxyType({})
    models: tuple[Any, ...] = ()
    """Per-layer plans of the models read with --model (attndoctor.sources.model_plan.ModelPlan)."""


# ---------------------------------------------------------------- facts


SHARED_LIMIT = 8192
"""Shared verdicts, findings and selections kept per backend in a batch; beyond it the oldest are computed again."""
PARTNERS = {"hdim": ("hdim", "hdim_v"), "hdim_v": ("hdim", "hdim_v"), "seqlen_q": ("seqlen_q", "seqlen_kv"),
            "seqlen_kv": ("seqlen_q", "seqlen_kv"), "heads": ("heads", "kv_heads"), "kv_heads": ("heads", "kv_heads"),
            "window_left": ("window_left", "window_right"), "window_right": ("window_left", "window_right"),
            "window": ("window_left", "window_right"), "layout": ("layout", "qkv_format"),
            "qkv_format": ("layout", "qkv_format"), "cp": ("cp", "cp_comm"), "cp_comm": ("cp", "cp_comm")}
"""A config change a fix makes can be judged against the field's partner (hdim_v against hdim): both are read."""

CONFIG_FACTS = FACTS


def config_facts(config: AttentionConfig) -> dict[str, Any]:
    """The config's part of the facts; unknown fields are left out."""
    facts = {name: value for name in CONFIG_FACTS if (value := getattr(config, name)) is not None}
    facts["window_left"], facts["window_right"] = config.window
    facts["qkv_format"] = config.qkv_format
    return facts


def env_facts(env: Environment) -> dict[str, Any]:
    """The environment's part of the facts; unknown facts are left out, absent packages are ABSENT."""
    facts: dict[str, Any] = {}
    if env.sm is not None:
        facts["sm"] = env.sm
    if env.gpu is not None:
        facts["gpu"] = env.gpu
    for package in PACKAGES:
        value = env.versions.get(package)
        if value is None:
            continue
        facts[package] = ABSENT if value == ABSENT else _version(value, package)
    if env.cudnn_compiled:
        facts["cudnn_compiled"] = _version(env.cudnn_compiled, "cudnn_compiled")
    fa2 = env.versions.get("flash_attn")
    if fa2 is not None and fa2 != ABSENT:
        facts["flash_attn_local"] = "+" in str(fa2)
    beta = re.match(BETA, str(env.versions.get("flash_attn_4") or ""))
    if beta:
        facts["flash_attn_4_beta"] = int(beta.group(1))
    for key, value in env.env_vars.items():
        facts[f"env:{key}"] = value
    for key, value in env.api.items():
        facts[f"api:{key}"] = value
    return facts


@functools.lru_cache(maxsize=1024)
def _version(value: str, what: str) -> Any:
    return as_compared(what, parse_version(value, what=what))


class _FactCache:
    """Facts per config and per environment object, so fix trials rebuild only the half they change."""

    def __init__(self) -> None:
        self.configs: dict[int, tuple[AttentionConfig, dict[str, Any]]] = {}
        self.envs: dict[int, tuple[Environment, dict[str, Any]]] = {}

    def env(self, env: Environment) -> dict[str, Any]:
        e = self.envs.get(id(env))
        if e is None or e[0] is not env:
            if len(self.envs) > 4096:
                self.envs.clear()
            e = self.envs[id(env)] = (env, env_facts(env))
        return e[1]

    def facts(self, config: AttentionConfig, env: Environment) -> dict[str, Any]:
        c = self.configs.get(id(config))
        if c is None or c[0] is not config:
            c = self.configs[id(config)] = (config, config_facts(config))
        if len(self.configs) > 4096:
            self.configs.clear()
        return {**self.env(env), **c[1]}


BETA = r"^\s*4\.0\.0(?:\.0)*(?:b|beta)(\d+)"
"""flash-attn 4 is published only as 4.0.0 betas; advisories tell them apart by their number."""


def build_facts(config: AttentionConfig, env: Environment) -> dict[str, Any]:
    """The flat map of names the condition language reads; unknown facts are left out."""
    return {**env_facts(env), **config_facts(config)}


class _Memo:
    """Caches a rule's value by the facts it reads, so many configs and fix trials cost little."""

    def __init__(self) -> None:
        self.cache: dict[Rule, dict[tuple[Any, ...], Any]] = {}

    def value(self, rule: Rule, facts: dict[str, Any]) -> Any:
        per_rule = self.cache.get(rule.id)
        if per_rule is None:
            per_rule = self.cache[rule.id] = {}
        key = tuple(map(facts.get, rule.key_names))
        try:
            return per_rule[key]
        except KeyError:
            result = per_rule[key] = False if _outside_when(rule, facts) else rule.compiled(facts)
            return result


def _outside_when(rule: Rule, facts: dict[str, Any]) -> bool:
    """True when a known version or arch lies outside the rule's `when` ranges: no need to compile the rest."""
    for name, spec in rule.when.items():
        value = facts.get(name)
        if value is None:
            continue
        if value == ABSENT:
            return True
        if not spec.contains(_arch(value) if name == "sm" else value):
            return True
    return False


@functools.lru_cache(maxsize=64)
def _arch(sm: int) -> Any:
    from packaging.version import Version

    return Version(str(sm))


ABSTRACTED = ("batch", "seqlen_q", "seqlen_kv")
CONFIG_FACTS_ALL = expr.CONFIG_VARIABLES
"""Config facts of many values: where no fix changes them, a verdict reads them only through a few comparisons."""


def _atoms(node: expr.Node) -> Iterable[expr.Node]:
    """The comparisons a condition is made of (and, or, not aside): residual() decides or keeps each whole."""
    if isinstance(node, expr.BoolOp):
        for item in node.items:
            yield from _atoms(item)
    elif isinstance(node, expr.Unary) and node.op == "not":
        yield from _atoms(node.operand)
    else:
        yield node


TRIALS_LIMIT = 256
"""Environments tried per rule to prove it never applies; beyond it the rule is kept."""
Step = tuple[str, str, tuple[Any, ...], frozenset[str]]


def _steps(rules: Sequence[Rule], env: Environment) -> list[Step]:
    """Each package version or variable the rules' fixes set, with the values they set it to and the machine facts
    that change with it (a release sweep only fills in facts nobody gave: those stay open in a residual)."""
    targets: dict[tuple[str, str], dict[Any, None]] = {}
    for rule in rules:
        for fix in rule.fixes:
            if fix.kind in ("upgrade", "downgrade"):
                current = env.versions.get(fix.target)
                if current not in (None, ABSENT):  # plan_of drops a step that would not move the version that way
                    now, to = _version(current, fix.target), _version(fix.to, fix.target)
                    if now >= to if fix.kind == "upgrade" else now <= to:
                        continue
                targets.setdefault(("package", fix.target), {})[fix.to] = None
            elif fix.kind in ("set", "unset"):
                targets.setdefault(("env", fix.target), {})[fix.to if fix.kind == "set" else None] = None
    machine = env_facts(env)
    steps = []
    for (kind, target), values in targets.items():
        changed: set[str] = set()
        for value in values:
            moved = env_facts(_moved(env, kind, target, value))
            changed.update(k for k in {*machine, *moved} if machine.get(k) != moved.get(k))
        steps.append((kind, target, tuple(values), frozenset(changed)))
    return steps


def _moved(env: Environment, kind: str, target: str, value: Any) -> Environment:
    return env.with_version(target, value) if kind == "package" else env.with_env_var(target, value)


def _never_applies(rule: Rule, env: Environment, steps: Sequence[Step]) -> bool:
    """True when the rule is false on this machine and on every machine the fixes' steps lead to, in any
    combination."""
    envs = [env]
    for kind, target, values, changed in steps:
        if changed.isdisjoint(rule.key_names):
            continue
        if len(envs) * (len(values) + 1) > TRIALS_LIMIT:
            return False
        envs = [m for e in envs for m in (e, *(_moved(e, kind, target, v) for v in values))]
    for trial in envs:
        rest = expr.residual(rule.predicate, env_facts(trial))
        if not (isinstance(rest, expr.Const) and rest.value is False):
            return False
    return True


Reach = dict[str, "tuple[tuple[expr.Compiled, frozenset[str]], ...] | None"]
"""Each config fact fixes change, with the expressions that give its new value (read on the config being fixed);
None where a change also moves a fact beside it (a layout its format, a window its other side)."""


def _reachable(rules: Iterable[Rule]) -> Reach:
    """The config facts the rules' fixes change, and how (see Reach)."""
    reach: Reach = {}
    for rule in rules:
        for fix in rule.fixes:
            if fix.kind not in ("change", "pad"):
                continue
            if fix.target in ("layout", "qkv_format") or fix.target.startswith("window") or \
                    fix.target not in CONFIG_FACTS or fix.value_node is None:
                for name in PARTNERS.get(fix.target, (fix.target,)):
                    reach[name] = None
            elif reach.get(fix.target, ()) is not None:
                source = (expr.compile_node(fix.value_node), frozenset(expr.free_names(fix.value_node)))
                reach[fix.target] = tuple(dict.fromkeys((*(reach.get(fix.target) or ()), source)))
    return reach


def _trial_values(name: str, sources: Sequence[tuple[expr.Compiled, frozenset[str]]],
                  facts: dict[str, Any]) -> list[Any]:
    """The values fixes would give a config fact, as with_changes holds them (apply_fixes tries no other)."""
    out: list[Any] = []
    for fn, _ in sources:
        value = fn(facts)
        if value is expr.UNKNOWN:
            continue
        try:
            value = getattr(with_changes(AttentionConfig(), {name: value}), name)
        except (UsageError, TypeError):
            continue
        if value != facts.get(name) and value not in out:
            out.append(value)
    return out


def _overlays(reads: Iterable[str], reach: Reach, facts: dict[str, Any]) -> list[dict[str, Any]]:
    """The values fix trials may give the facts a condition reads, the config's own first (the empty overlay)."""
    out: list[dict[str, Any]] = [{}]
    for name in reads:
        sources = reach.get(name)
        if sources:
            values = _trial_values(name, sources, facts)
            out += [{**o, name: v} for o in out for v in values]
    return out


class _Fixer(NamedTuple):
    """A rule whose fixes change an abstracted fact, as it reads on each machine a fix trial reaches."""

    rule: Rule
    residuals: tuple[expr.Compiled, ...]
    changed: tuple[str, ...]
    reads: tuple[str, ...]
    memo: dict[tuple[Any, ...], bool]


def _fixer(rule: Rule, env: Environment, steps: Sequence[Step], reach: Reach, abstract: set[str]) -> _Fixer:
    """The rule read on every machine the fixes' steps reach (what is left once each machine's facts are in)."""
    envs = [env]
    for kind, target, values, changed in steps:
        if not changed.isdisjoint(rule.key_names):
            envs = [m for e in envs for m in (e, *(_moved(e, kind, target, v) for v in values))]
        if len(envs) > TRIALS_LIMIT:  # too many machines to read it on: taken to apply (the lengths stay in keys)
            return _Fixer(rule, (lambda facts: True,), (), (), {})
    residuals: dict[str, expr.Compiled] = {}
    for trial in envs:
        rest = expr.residual(rule.predicate, env_facts(trial))
        if not (isinstance(rest, expr.Const) and rest.value is False):
            residuals.setdefault(expr.render(rest), expr.compile_node(rest))
    changed = tuple(n for n in rule.key_names if reach.get(n))
    reads = set(rule.key_names) - abstract
    for name in changed:
        reads.update(*(names for _, names in reach[name] or ()))  # type: ignore[union-attr]
    return _Fixer(rule, tuple(residuals.values()), changed, tuple(sorted(reads)), {})


class _Share(NamedTuple):
    """What the verdicts of one backend on one machine are shared by (see Evaluator._share)."""

    names: tuple[str, ...]
    abstract: tuple[str, ...]
    atoms: tuple[tuple[expr.Compiled, tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...]
    """Each comparison that reads an abstracted fact: what it reads, which of those fixes change, and the facts
    those changes are computed from."""
    fixers: tuple[_Fixer, ...]
    reach: Reach
    by_value: tuple[tuple[Rule, tuple[str, ...]], ...]
    cache: dict[tuple[Any, ...], Verdict]
    overlays: dict[tuple[Any, ...], list[dict[str, Any]]]
    inputs: tuple[str, ...]
    """Every fact _abstracted reads: configs that agree on them get the same abstracted key."""
    abstracted: dict[tuple[Any, ...], tuple[Any, ...]]


RAW = "raw"
"""Marks a key that holds the lengths themselves: a rule that would change one may apply."""


def _abstracted(share: _Share, facts: dict[str, Any]) -> tuple[Any, ...]:
    """The part of a verdict's key that stands for the abstracted facts: the comparisons' values at every trial, or
    the facts themselves where a fixer applies at a trial (only the fixes of a finding that applies are tried)."""
    at_inputs = tuple(map(facts.get, share.inputs))
    found = share.abstracted.get(at_inputs)
    if found is None:
        if len(share.abstracted) >= SHARED_LIMIT:
            share.abstracted.clear()
        found = share.abstracted[at_inputs] = _abstract(share, facts)
    return found


def _abstract(share: _Share, facts: dict[str, Any]) -> tuple[Any, ...]:
    for fixer in share.fixers:
        at = tuple(map(facts.get, fixer.reads))
        may = fixer.memo.get(at)
        if may is None:
            config = {k: v for k, v in facts.items() if k in CONFIG_FACTS_ALL and k not in share.abstract}
            overlays = _overlays(fixer.changed, share.reach, facts)
            may = fixer.memo[at] = any(fn({**config, **o}) is True for fn in fixer.residuals for o in overlays)
        if may:
            return (RAW, *map(facts.get, share.abstract))
    out: tuple[Any, ...] = ()
    for fn, reads, changed, inputs in share.atoms:
        overlays: Sequence[dict[str, Any]] = ({},)
        if changed:
            at = (changed, *map(facts.get, inputs))
            overlays = share.overlays.get(at)  # type: ignore[assignment]
            if overlays is None:
                if len(share.overlays) >= SHARED_LIMIT:
                    share.overlays.clear()
                overlays = share.overlays[at] = _overlays(changed, share.reach, facts)
        for overlay in overlays:
            value = fn({**facts, **overlay} if overlay else facts)
            out += (value,) if value is not expr.UNKNOWN else (value, *map(facts.get, reads))
    return out


class _Values(dict):  # type: ignore[type-arg]
    """Each rule's value on one config, computed when first read: several backends read most rules."""

    def __init__(self, live: dict[str, expr.Compiled], facts: dict[str, Any]) -> None:
        super().__init__()
        self.live, self.facts = live, facts

    def __missing__(self, rule_id: str) -> Any:
        fn = self.live.get(rule_id)
        value = self[rule_id] = False if fn is None else fn(self.facts)
        return value


class _Formatter(dict):
    def __missing__(self, key: str) -> str:
        return "?"


@functools.lru_cache(maxsize=1024)
def _placeholders(message: str) -> tuple[str, ...]:
    return tuple(re.findall(r"{([^{}]*)}", message))


def _message(rule: Rule, facts: dict[str, Any]) -> str:
    """The rule's message with facts filled in; its title when a fact it names is unknown."""
    names = _placeholders(rule.message)
    if any(facts.get(n) is None for n in names):
        return rule.title
    return rule.message.format_map(_Formatter({n: str(facts[n]) for n in names}))


# ---------------------------------------------------------------- verdicts


class Evaluator:
    """Evaluates configs against one RuleBase; holds the cache shared across configs."""

    def __init__(self, base: RuleBase, *, ignore: Iterable[str] = (), batch: bool = False) -> None:
        self.base = base
        self.batch = batch
        """Many configs on one machine: pre-evaluate the machine's facts into every rule once (see _live_rules)."""
        self.ignore = frozenset(ignore)
        self.memo = _Memo()
        self.fact_cache = _FactCache()
        self._values_for: dict[str, Any] | None = None
        self._values: dict[str, Any] = {}
        self._live_by_backend: dict[tuple[str, int], tuple[dict[str, expr.Compiled], list[Rule]]] = {}
        self._live: dict[tuple[Any, ...], dict[str, expr.Compiled]] = {}
        self._live_env: tuple[Environment, dict[str, expr.Compiled]] | None = None
        self._open: dict[tuple[Any, ...], tuple[str, tuple[str, ...]]] = {}
        self._blocking: dict[str, list[Rule]] = {}
        self._finding_memo: dict[tuple[Any, ...], Finding] = {}
        self._shared: dict[str, tuple[tuple[str, ...], dict[tuple[Any, ...], Verdict]]] = {}
        self._shared_env: Environment | None = None
        self._selections: dict[tuple[Any, ...], tuple[tuple[tuple[Any, ...], ...], Selection]] = {}
        self._selection_names: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self._builtin: dict[tuple[str, int], tuple[Environment, tuple[Finding, ...]]] = {}
        self._no_release: dict[tuple[Any, ...], tuple[Environment, str | None]] = {}

    def _live_rules(self, env: Environment) -> dict[str, expr.Compiled]:
        """Each rule with this machine's facts already filled in; rules that cannot apply here are left out.

        Partial evaluation keeps three-valued semantics: what is left reads only config facts (and the machine
        facts nobody gave), so a batch of configs on one machine, and every fix trial on the same machine,
        skips the version and arch tests. Keyed by the machine's facts, not the object.
        """
        same = self._live_env
        if same is not None and same[0] is env:
            return same[1]
        machine = self.fact_cache.env(env)
        key = tuple(sorted(machine.items(), key=lambda kv: kv[0]))
        live = self._live.get(key)
        if live is not None:
            self._live_env = (env, live)
            return live
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
        if len(self._live) > 256:
            self._live.clear()
        self._live[key] = live
        self._live_env = (env, live)
        return live

    def findings(self, backend: Backend, config: AttentionConfig, env: Environment,
                 facts: dict[str, Any]) -> list[Finding]:
        out = list(self._builtin_findings(backend, env, facts))
        values = self._values if self._values_for is facts else None
        rules = self._live_rules_for(backend, values.live) if isinstance(values, _Values) else \
            self.base.rules_for(backend.id)
        for rule in rules:
            if rule.id in self.ignore:
                continue
            value = values[rule.id] if values is not None else self.memo.value(rule, facts)
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
        found = self._live_by_backend.get(key)
        if found is None or found[0] is not live:
            if len(self._live_by_backend) > SHARED_LIMIT:
                self._live_by_backend.clear()
            found = self._live_by_backend[key] = (live, [r for r in self.base.rules_for(backend.id) if r.id in live])
        return found[1]

    def _builtin_findings(self, backend: Backend, env: Environment, facts: dict[str, Any]) -> tuple[Finding, ...]:
        """The machine's own findings for a backend: the same for every config on that machine."""
        key = (backend.id, id(env))
        found = self._builtin.get(key)
        if found is None or found[0] is not env:
            if len(self._builtin) > SHARED_LIMIT:
                self._builtin.clear()
            found = self._builtin[key] = (env, tuple(_builtin_findings(backend, env, facts, self.base.horizons)))
        return found[1]

    def _no_release_runs(self, verdict: Verdict, config: AttentionConfig, env: Environment) -> str | None:
        """where.no_release_runs, once per set of open findings: a sweep only fills in facts nobody gave, so a rule
        that cannot apply now cannot apply at any release, and what the open rules still ask is their condition."""
        from .where import no_release_runs

        key = (verdict.backend.id, id(env), *((f.id, f.applies, f.condition) for f in verdict.findings))
        found = self._no_release.get(key)
        if found is None or found[0] is not env:
            if len(self._no_release) > SHARED_LIMIT:
                self._no_release.clear()
            found = self._no_release[key] = (env, no_release_runs(self, verdict, config, env))
        return found[1]

    def _finding(self, rule: Rule, applies: bool | None, facts: dict[str, Any], condition: str = "",
                 missing: tuple[str, ...] = ()) -> Finding:
        """One Finding object per distinct finding, shared by every config it applies to (many configs stay small)."""
        message = _message(rule, facts)
        key = (rule.id, applies, message, condition, missing)
        found = self._finding_memo.get(key)
        if found is None:
            if len(self._finding_memo) > SHARED_LIMIT:
                self._finding_memo.clear()
            found = self._finding_memo[key] = _finding(rule, applies, facts, condition, missing, message)
        return found

    def _open_condition(self, rule: Rule, facts: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
        """What is left of a rule's condition, as text, and the facts it still needs; the same for every config
        that agrees on the facts the rule reads."""
        key = (rule.id, *map(facts.get, rule.key_names))
        found = self._open.get(key)
        if found is None:
            rest = expr.residual(rule.predicate, facts)
            found = self._open[key] = (expr.render(rest), tuple(sorted(expr.free_names(rest))))
        return found

    def status(self, backend: Backend, findings: Sequence[Finding]) -> str:
        return status_of(findings)

    def quick_status(self, backend: Backend, config: AttentionConfig, env: Environment, *,
                     sweep: bool = False) -> str:
        """The status alone, stopping at the first blocking finding (how fix trials are judged). `sweep`: one of
        many machines tried once each (every release on every GPU), where pre-solving the rules per machine costs
        more than it saves."""
        facts = self.fact_cache.facts(config, env)
        builtin = self._builtin_findings(backend, env, facts)
        if builtin:
            return self.status(backend, builtin)
        live = self._live_rules(env) if self.batch and not sweep else None
        unknown = False
        blocking = self._blocking.get(backend.id)
        if blocking is None:
            blocking = self._blocking[backend.id] = [r for r in self.base.rules_for(backend.id)
                                                     if r.blocking and r.id not in self.ignore]
        for rule in blocking:
            if live is None:
                value = self.memo.value(rule, facts)
            else:
                fn = live.get(rule.id)
                if fn is None:
                    continue
                value = fn(facts)
            if value is True:
                return rule.effect
            if value is not False and not rule.advisory:
                unknown = True
        return "depends" if unknown else "supported"

    def verdict(self, backend: Backend, config: AttentionConfig, env: Environment, *,
                facts: dict[str, Any] | None = None, search_fix: bool = True) -> Verdict:
        facts = self.fact_cache.facts(config, env) if facts is None else facts
        findings = self.findings(backend, config, env, facts)
        status = self.status(backend, findings)
        plans: list[FixPlan] = []
        if search_fix and status in BLOCKING:
            plans = self._fixes(backend, config, env, [f for f in findings if f.blocking and f.applies is True])
        elif search_fix and status == "known-bug":
            plans = self._advisory_fixes(backend, config, env, [f for f in findings if f.at_risk])
        verdict = Verdict(backend=backend, status=status, findings=tuple(findings),
                          fix=plans[0] if plans else None, alternatives=tuple(plans[1:]))
        if status == "depends":
            swept = self._no_release_runs(verdict, config, env)
            if swept is not None and swept[0] == "unsupported":
                finding = Finding(NO_RELEASE, "unsupported", "dispatch", swept[1].split(";")[0], swept[1], "", (),
                                  ("attndoctor: each modelled release swept",), True)
                return Verdict(backend=backend, status="unsupported", findings=(finding, *findings))
            if swept is not None:
                finding = Finding(EVERY_RELEASE, "info", "dispatch", swept[1], swept[1], "", (),
                                  ("attndoctor: each modelled release swept",), True)
                return Verdict(backend=backend, status="supported",
                               findings=(finding, *(f for f in findings if not f.blocking or f.applies is False)))
        if search_fix and status == "depends" and not self.batch:
            from .where import where_it_runs

            places = where_it_runs(self, verdict, config, env)
            if places and any(p.swept for p in places) or env.sm is None:
                verdict = verdict._replace(where=places)
        return verdict

    def _fixes(self, backend: Backend, config: AttentionConfig, env: Environment,
               blocking: list[Finding]) -> list[FixPlan]:
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
        facts = self.fact_cache.facts(config, env)
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
                result = self.quick_status(backend, new_config, new_env)
                if result in ("supported", "depends"):
                    working.append((FixPlan(fixes=plan, result=result), min(actions, len(plan))))
                elif round_ == 0 and len(stuck) < 8:
                    stuck.append((plan, actions, new_config, new_env))
            if working or round_:
                break
            # No single step runs it: a step that leaves only new refusals gets their fixes added, once
            # (upgrading flash-attn past a check can leave a case that only dropout = 0 fixes).
            candidates = []
            for plan, actions, new_config, new_env in stuck:
                new_facts = self.fact_cache.facts(new_config, new_env)
                for finding in self.findings(backend, new_config, new_env, new_facts):
                    if finding.blocking and finding.applies is True:
                        candidates.extend(((*plan, fix), actions + 1) for fix in finding.fixes)
        if working:
            smallest = min(actions for _, actions in working)
            working = [(p, a) for p, a in working if a == smallest]
        working.sort(key=lambda pa: (pa[0].result != "supported", sum(FIX_RANK[f.kind] for f in pa[0].fixes),
                                     len(pa[0].fixes)))
        found = [p for p, _ in working]
        return [p for p in found if not any(_dominates(q, p) for q in found if q is not p)]

    def _advisory_fixes(self, backend: Backend, config: AttentionConfig, env: Environment,
                        risks: list[Finding]) -> list[FixPlan]:
        """The advisories' own fixes that take the config out of them and keep the backend running, those that
        clear the most advisories first."""
        facts = self.fact_cache.facts(config, env)
        scored = []
        for fix in dict.fromkeys(f for risk in risks for f in risk.fixes):
            applied = apply_fixes((fix,), config, env, facts)
            if applied is None:
                continue
            new_facts = build_facts(*applied)
            cleared = sum(self.memo.value(self.base.rule(r.id), new_facts) is False for r in risks)
            if not cleared:
                continue
            result = self.quick_status(backend, *applied)
            if result in ("supported", "outside-rules"):  # a fix release may be newer than the rules model
                scored.append((-cleared, FIX_RANK[fix.kind], FixPlan(fixes=_resolved((fix,), facts), result=result)))
        scored.sort(key=lambda s: s[:2])
        return [plan for *_, plan in scored]

    def evaluate(self, config: AttentionConfig, env: Environment,
                 backends: Sequence[str] | None = None) -> ConfigResult:
        if self.batch:
            return self._evaluate_shared(config, env, backends)
        facts = self.fact_cache.facts(config, env)
        values = {r.id: self.memo.value(r, facts) for r in self.base.rules}
        self._values_for, self._values = facts, values
        all_verdicts = {b.id: self.verdict(b, config, env, facts=facts) for b in self.base.backends}
        self._values_for = None
        selections = tuple(self.select(framework, all_verdicts, facts) for framework in self.frameworks())
        return ConfigResult(config=config, all_verdicts=tuple(all_verdicts.values()), selected=selections,
                            shown=tuple(dict.fromkeys(backends)) if backends else None)

    def _evaluate_shared(self, config: AttentionConfig, env: Environment,
                         backends: Sequence[str] | None) -> ConfigResult:
        """A batch: each backend's verdict is computed once per distinct value of the facts it can depend on, and
        each framework's selection once per distinct set of verdicts; configs share the objects."""
        if self._shared_env is not env:
            self._shared_env = env
            self._shared.clear()
            self._selections.clear()
        facts = self.fact_cache.facts(config, env)
        live = self._live_rules(env)
        values = _Values(live, facts)

        all_verdicts: dict[str, Verdict] = {}
        for backend in self.base.backends:
            share = self._shared.get(backend.id) or self._share(backend, env)
            key = tuple(map(facts.get, share.names))
            if share.abstract:
                key += _abstracted(share, facts)
            for rule, read in share.by_value:
                found = values[rule.id]
                key += (found,) if found is False else (found, *map(facts.get, read))
            cache = share.cache
            verdict = cache.get(key)
            if verdict is None:
                self._values_for, self._values = facts, values
                verdict = self.verdict(backend, config, env, facts=facts)
                self._values_for = None
                if len(cache) >= SHARED_LIMIT:
                    del cache[next(iter(cache))]
                cache[key] = verdict
            all_verdicts[backend.id] = verdict
        selections = tuple(self._shared_select(framework, all_verdicts, facts) for framework in self.frameworks())
        return ConfigResult(config=config, all_verdicts=tuple(all_verdicts.values()), selected=selections,
                            shown=tuple(dict.fromkeys(backends)) if backends else None)

    def _share(self, backend: Backend, env: Environment) -> "_Share":
        """What a backend's verdict can read on this machine, for the key of the verdicts configs share.

        The config facts its rules' conditions, messages, fix values and targets read, leaving out rules that no fix
        can bring to apply here. Lengths and batch sizes (ABSTRACTED) have many values but are read through a few
        comparisons: where no rule that would change them can apply on any machine and config a fix trial reaches
        (`fixers`, checked per config), they join the key by those comparisons' values at every value the trials give
        the other fields they read (the fixes set those to constants). Advisories, and rules whose message shows a
        length, join it by their value, with the facts they read where they may apply.
        """
        config_names = set(CONFIG_FACTS_ALL)
        rules = [r for r in self.base.rules_for(backend.id) if r.id not in self.ignore]
        steps = _steps(rules, env)
        rules = [r for r in rules if not _never_applies(r, env, steps)]

        def touched(fix: Fix) -> set[str]:
            names = set(PARTNERS.get(fix.target, (fix.target,)))
            if fix.value_node is not None:
                names.update(expr.free_names(fix.value_node))
            return names

        def read(rule: Rule) -> set[str]:
            names = set(rule.key_names) | set(_placeholders(rule.message))
            for fix in rule.fixes:
                if fix.kind in ("change", "pad"):
                    names.update(touched(fix))
            return names & config_names

        fixers = [r for r in rules if any(f.kind in ("change", "pad") and touched(f) & set(ABSTRACTED)
                                          for f in r.fixes)]
        reach = _reachable(r for r in rules if r not in fixers)
        atoms = {id(a): (a, frozenset(expr.free_names(a))) for r in rules for a in _atoms(r.predicate)}

        def steady(reads: Iterable[str]) -> bool:
            return all(n in config_names and reach.get(n, ()) is not None for n in reads)

        # An advisory false on this machine that a fix's machine makes true (a torch upgrade into its range) decides
        # whether that fix runs: what it reads keys the verdict whatever its value here.
        later = [r for r in rules if r.advisory and steps and _never_applies(r, env, ())]
        later_reads = set().union(*(read(r) for r in later)) if later else set()
        abstract = {name for name in ABSTRACTED if name not in reach and name not in later_reads and
                    all(steady(reads) for _, reads in atoms.values() if name in reads)}
        if not all(steady(set(r.key_names) & config_names) for r in fixers):
            abstract = set()
        names: set[str] = {"heads", "kv_heads"} | later_reads  # with_changes checks heads on every fix trial
        by_value = []
        for rule in rules:
            if rule.advisory:
                by_value.append((rule, tuple(sorted(read(rule)))))
                continue
            names.update(read(rule) - abstract)
            shown = abstract.intersection(_placeholders(rule.message))
            if shown:
                by_value.append((rule, tuple(sorted(shown))))
        def inputs(changed: Iterable[str]) -> tuple[str, ...]:
            return tuple(sorted({*changed, *(n for c in changed for _, names in reach[c] or () for n in names)}))

        keyed = []
        for a, reads in atoms.values():
            if reads & abstract:
                changed = tuple(n for n in sorted(reads) if reach.get(n))
                keyed.append((expr.compile_node(a), tuple(sorted(reads)), changed, inputs(changed)))
        checks = tuple(_fixer(r, env, steps, reach, abstract) for r in fixers) if abstract else ()
        read_by = set(abstract).union(*(c.reads for c in checks), *(k[1] for k in keyed), *(k[3] for k in keyed))
        found = self._shared[backend.id] = _Share(tuple(sorted(names)), tuple(sorted(abstract)), tuple(keyed), checks,
                                                  reach, tuple(by_value), {}, {}, tuple(sorted(read_by)), {})
        return found

    def _shared_select(self, framework: str, verdicts: dict[str, Verdict], facts: dict[str, Any]) -> Selection:
        names = self._selection_names.get(framework)
        if names is None:
            entries = [e for e in self.base.selection if e.framework == framework]
            names = self._selection_names[framework] = (
                tuple(sorted(set().union(*(expr.free_names(e.predicate) for e in entries)))),
                tuple(dict.fromkeys(b for e in entries for b in e.order if b in verdicts)))
        # A framework's walk reads each verdict's status and the findings that block it or put it at risk (shared
        # objects), not its fixes: verdicts that differ in those alone share a selection.
        read = tuple((v.status, *(f for f in v.findings if f.at_risk or (f.applies is True and f.blocking)))
                     for v in (verdicts[b] for b in names[1]))
        key = (framework, *(tuple(map(id, r)) for r in read), *map(facts.get, names[0]))
        found = self._selections.get(key)
        if found is not None and all(a is b for x, y in zip(found[0], read) for a, b in zip(x[1:], y[1:])):
            return found[1]
        selection = self.select(framework, verdicts, facts)
        if len(self._selections) >= SHARED_LIMIT:
            self._selections.clear()
        self._selections[key] = (read, selection)
        return selection

    def frameworks(self) -> list[str]:
        return list(dict.fromkeys(e.framework for e in self.base.selection))

    def select(self, framework: str, verdicts: dict[str, Verdict], facts: dict[str, Any]) -> Selection:
        entries = [e for e in self.base.selection if e.framework == framework]
        chosen = None
        possible = []
        for entry in entries:
            value = entry.compiled(facts)
            if value is False:
                continue
            possible.append(entry)
            if value is True:
                chosen = entry
                break
        if not possible:
            return Selection(framework, "none", None, (), note="no priority order applies")
        entry = possible[0]
        own = [verdicts[b] for b in entry.order if b in verdicts]
        if own and all(v.status == "not-installed" for v in own):
            return Selection(framework, "not-installed", None, entry.order, entry=entry.id,
                             references=entry.references)
        if chosen is not entry:
            picks = [_walk(e.order, verdicts) for e in possible]
            candidates = list(dict.fromkeys(b for p in picks for b in ((p.backend,) if p.backend else p.candidates)))
            if len(candidates) == 1 and all(p.status == picks[0].status for p in picks):
                pick = picks[0]
                return Selection(framework, pick.status, pick.backend, entry.order, candidates=pick.candidates,
                                 note="whichever order applies", entry=entry.id, reason=pick.reason,
                                 references=entry.references)
            missing = sorted(set().union(*(expr.free_names(expr.residual(e.predicate, facts)) for e in possible)))
            return Selection(framework, "depends", None, entry.order, candidates=tuple(candidates),
                             note=f"the order depends on {', '.join(missing)}", entry=entry.id,
                             references=entry.references)
        pick = _walk(entry.order, verdicts)
        return Selection(framework, pick.status, pick.backend, entry.order, candidates=pick.candidates,
                         note=entry.note, entry=entry.id, reason=pick.reason, references=entry.references)


def status_of(findings: Sequence[Finding]) -> str:
    """A backend's status from its findings: the worst definite effect, else what keeps it open."""
    if any(f.id == "AD-NOT-INSTALLED" and f.applies for f in findings):
        return "not-installed"
    definite = [f for f in findings if f.blocking and f.applies is True]
    if definite:
        for effect in BLOCKING:
            if any(f.effect == effect for f in definite):
                return effect
    if any(f.id == OUTSIDE for f in findings):
        return "outside-rules"
    if any(f.blocking and f.applies is None for f in findings):
        return "depends"
    if any(f.at_risk for f in findings):
        return "known-bug"
    return "supported"


def settle_data(result: ConfigResult, decided: Mapping[str, tuple[bool, str]]) -> ConfigResult:
    """The result once the data conditions in `decided` are known ((met, what was seen), e.g. from the tensors a
    traced program passed): an advisory whose data are all met applies outright, one with a data condition not met
    does not apply; statuses and each framework's pick follow."""
    verdicts = []
    changed = False
    for verdict in result.all_verdicts:
        findings = []
        for f in verdict.findings:
            known = [decided[d] for d in f.data if d in decided]
            if not f.at_risk or not known or (len(known) < len(f.data) and all(met for met, _ in known)):
                findings.append(f)
                continue
            seen = "; ".join(what for _, what in known)
            if all(met for met, _ in known):
                f = f._replace(data=(), message=f"{f.message} (the data meet it: {seen})")
            else:
                f = f._replace(applies=False, message=f"{f.message} (not met by the data: {seen})")
            findings.append(f)
        status = status_of(findings)
        if tuple(findings) != verdict.findings:
            changed = True
            keep_fix = status not in ("supported", "depends", "outside-rules", "not-installed")
            verdict = verdict._replace(status=status, findings=tuple(findings),
                                       fix=verdict.fix if keep_fix else None,
                                       alternatives=verdict.alternatives if keep_fix else ())
        verdicts.append(verdict)
    if not changed:
        return result
    by_id = {v.backend.id: v for v in verdicts}
    selected = []
    for selection in result.selected:
        if selection.status in ("selected", "wrong-results", "fails") and selection.backend in by_id and \
                selection.note != "whichever order applies":
            pick = _walk(selection.order, by_id)
            selection = selection._replace(status=pick.status, backend=pick.backend, candidates=pick.candidates,
                                           reason=pick.reason)
        selected.append(selection)
    return result._replace(all_verdicts=tuple(verdicts), selected=tuple(selected))


class _Pick(NamedTuple):
    status: str
    backend: str | None
    candidates: tuple[str, ...] = ()
    reason: str = ""


def _walk(order: Sequence[str], verdicts: dict[str, Verdict]) -> _Pick:
    """The framework's own walk: skip what its dispatch refuses; a runtime-only failure is still selected."""
    maybe: list[str] = []
    for backend_id in order:
        v = verdicts.get(backend_id)
        if v is None or v.status == "not-installed":
            continue
        if v.status in ("supported", "known-bug"):
            if maybe:
                return _Pick("depends", None, tuple(maybe + [backend_id]))
            risks = v.advisories
            return _Pick("selected", backend_id,
                         reason="; ".join(f"known bug {f.id}: {f.message}" for f in risks))
        if v.status in ("depends", "outside-rules"):
            maybe.append(backend_id)
            continue
        definite = v.blocking(True)
        if all(f.surfaces != "dispatch" for f in definite):
            if maybe:
                return _Pick("depends", None, tuple(maybe + [backend_id]))
            worst = definite[0]
            status = "wrong-results" if all(f.surfaces == "silent" for f in definite) else "fails"
            return _Pick(status, backend_id, reason=f"{worst.id}: {worst.symptom or worst.message}")
    if maybe:
        return _Pick("depends", None, tuple(maybe))
    return _Pick("none", None)


def _finding(rule: Rule, applies: bool | None, facts: dict[str, Any], condition: str = "",
             missing: tuple[str, ...] = (), message: str | None = None) -> Finding:
    return Finding(id=rule.id, effect=rule.effect, surfaces=rule.surfaces, title=rule.title,
                   message=_message(rule, facts) if message is None else message, symptom=rule.symptom,
                   fixes=rule.fixes,
                   references=rule.references, applies=applies, condition=condition, missing=missing,
                   evidence=rule.evidence, data=rule.data, workaround=rule.workaround, fixed_in=rule.fixed_in,
                   advisory=rule.advisory)


BUILTIN_REFERENCE = ("attndoctor: backend requirements in rules/backends.toml",)


def _beta_outside(horizon: Horizon, facts: dict[str, Any]) -> str:
    """'older' or 'newer' for a flash-attn 4 beta outside the horizon's betas: versions read every beta as 4.0.0."""
    beta = facts.get("flash_attn_4_beta")
    oldest, newest = re.match(BETA, horizon.oldest), re.match(BETA, horizon.newest)
    if horizon.package != "flash_attn_4" or beta is None or not oldest or not newest:
        return ""
    return "older" if beta < int(oldest.group(1)) else "newer" if beta > int(newest.group(1)) else ""


def _builtin_findings(backend: Backend, env: Environment, facts: dict[str, Any],
                      horizons: Sequence[Horizon] = ()) -> Iterable[Finding]:
    """Facts about the machine itself: a backend's package missing or broken, a version the rules do not model, or no
    GPU at all."""
    for horizon in horizons:
        version = facts.get(horizon.package)
        if backend.id not in horizon.backends or version is None or version == ABSENT:
            continue
        side = horizon.outside(version) or _beta_outside(horizon, facts)
        if side:
            label = PACKAGE_LABELS.get(horizon.package, horizon.package)
            if horizon.package == "flash_attn_4" and "flash_attn_4_beta" in facts:
                version = f"4.0.0b{facts['flash_attn_4_beta']}"
            span = f"{horizon.oldest} to {horizon.newest}"
            yield Finding(OUTSIDE, "info", "dispatch", f"{label} {version} lies outside the releases the rules model",
                          f"{label} {version} is {side} than every release the rules about {backend.id} were read at "
                          f"({span}): attndoctor claims nothing for it", "", (), horizon.references, True)
    for package in backend.requires:
        if facts.get(package) == ABSENT:
            label = PACKAGE_LABELS.get(package, package)
            yield Finding("AD-NOT-INSTALLED", "unsupported", "dispatch", f"{label} is not installed",
                          f"{label} is not installed {place(env.source)} ({install_hint(package)})",
                          f"ModuleNotFoundError ({label})", (), BUILTIN_REFERENCE, True)
        elif package in env.import_errors:
            label = PACKAGE_LABELS.get(package, package)
            yield Finding("AD-IMPORT-FAILS", "unsupported", "runtime", f"{label} is installed but does not import",
                          f"{label} fails to import: {env.import_errors[package]}", env.import_errors[package],
                          (), BUILTIN_REFERENCE, True)
    if env.no_gpu and not backend.cpu:
        where = place(env.source)
        yield Finding("AD-NO-GPU", "unsupported", "dispatch", f"no CUDA GPU {where}",
                      f"no NVIDIA GPU {where} (NVML found none)", "RuntimeError: No CUDA GPUs are available",
                      (), BUILTIN_REFERENCE, True)


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
                now, to = _version(current, fix.target), _version(fix.to, fix.target)
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
            later = _version(fix.to, fix.target) > _version(other.to, fix.target)
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
    if a.result != "supported" and b.result == "supported":
        return False
    theirs = {(f.kind, f.target): f for f in b.fixes}
    for f in a.fixes:
        g = theirs.get((f.kind, f.target))
        if g is None:
            return False
        if f.kind in ("upgrade", "downgrade"):
            lower = _version(f.to, f.target) <= _version(g.to, g.target)
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
