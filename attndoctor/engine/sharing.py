"""Shared verdicts in a batch: what a backend's verdict can read on one machine, so that configs which agree on it
share one Verdict object; lengths and batch sizes join the key only through the comparisons that read them."""

from typing import Any, Iterable, NamedTuple, Sequence

from ..config import AttentionConfig, with_changes
from ..environment import ABSENT, Environment
from ..errors import UsageError
from . import expr
from .facts import ABSTRACTED, CONFIG_FACTS, CONFIG_FACTS_ALL, PARTNERS, env_facts, fix_version
from .findings import placeholders
from .memo import SHARED_LIMIT, Memo
from .rule_model import Fix, Rule


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
                    now, to = fix_version(current, fix.target), fix_version(fix.to, fix.target)
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


class Share(NamedTuple):
    """What the verdicts of one backend on one machine are shared by (see share_of)."""

    names: tuple[str, ...]
    abstract: tuple[str, ...]
    atoms: tuple[tuple[expr.Compiled, tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...]
    """Each comparison that reads an abstracted fact: what it reads, which of those fixes change, and the facts
    those changes are computed from."""
    fixers: tuple[_Fixer, ...]
    reach: Reach
    by_value: tuple[tuple[Rule, tuple[str, ...]], ...]
    cache: Memo
    """The verdicts, by key (see Evaluator._evaluate_shared)."""
    overlays: Memo
    inputs: tuple[str, ...]
    """Every fact abstracted_key reads: configs that agree on them get the same abstracted key."""
    abstracted: Memo


RAW = "raw"
"""Marks a key that holds the lengths themselves: a rule that would change one may apply."""


def abstracted_key(share: Share, facts: dict[str, Any]) -> tuple[Any, ...]:
    """The part of a verdict's key that stands for the abstracted facts: the comparisons' values at every trial, or
    the facts themselves where a fixer applies at a trial (only the fixes of a finding that applies are tried)."""
    at_inputs = tuple(map(facts.get, share.inputs))
    found = share.abstracted.get(at_inputs)
    return found if found is not None else share.abstracted.put(at_inputs, _abstract(share, facts))


def _abstract(share: Share, facts: dict[str, Any]) -> tuple[Any, ...]:
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
                overlays = share.overlays.put(at, _overlays(changed, share.reach, facts))
        for overlay in overlays:
            value = fn({**facts, **overlay} if overlay else facts)
            out += (value,) if value is not expr.UNKNOWN else (value, *map(facts.get, reads))
    return out


def share_of(rules: list[Rule], env: Environment) -> Share:
    """What a backend's verdict can read on this machine (`rules`: its rules, less those ignored), for the key of the
    verdicts configs share.

    The config facts its rules' conditions, messages, fix values and targets read, leaving out rules that no fix
    can bring to apply here. Lengths and batch sizes (ABSTRACTED) have many values but are read through a few
    comparisons: where no rule that would change them can apply on any machine and config a fix trial reaches
    (`fixers`, checked per config), they join the key by those comparisons' values at every value the trials give
    the other fields they read (the fixes set those to constants). Advisories, and rules whose message shows a
    length, join it by their value, with the facts they read where they may apply.
    """
    config_names = set(CONFIG_FACTS_ALL)
    steps = _steps(rules, env)
    rules = [r for r in rules if not _never_applies(r, env, steps)]

    def touched(fix: Fix) -> set[str]:
        names = set(PARTNERS.get(fix.target, (fix.target,)))
        if fix.value_node is not None:
            names.update(expr.free_names(fix.value_node))
        return names

    def read(rule: Rule) -> set[str]:
        names = set(rule.key_names) | set(placeholders(rule.message))
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
        shown = abstract.intersection(placeholders(rule.message))
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
    return Share(tuple(sorted(names)), tuple(sorted(abstract)), tuple(keyed), checks, reach, tuple(by_value),
                 Memo(SHARED_LIMIT, fifo=True), Memo(SHARED_LIMIT), tuple(sorted(read_by)), Memo(SHARED_LIMIT))
