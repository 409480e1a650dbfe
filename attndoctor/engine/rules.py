"""Rules as data: one TOML table per upstream fact, validated at load so a bad file fails loudly and precisely."""

import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

from packaging.version import Version

from .._toml import load_toml_file
from ..config import FIELDS
from ..environment import PACKAGES, parse_version
from ..errors import RuleError, UsageError
from ..words import a
from . import expr
from .facts import kept_beta
from .ranges import VersionRange
from .rule_model import (BLOCKING, CHANGEABLE, DATA_CONDITIONS, DEFAULT_SURFACE, EFFECTS, ENV_VAR_PATTERN, EVIDENCE,
                         FIX_KINDS, FIX_RANK, FRAMEWORK_LABELS, ID_PATTERN, PADDABLE, RULE_KEYS, SURFACES, Backend,
                         Example, Fix, Horizon, Rule, RuleBase, SelectionEntry)
from .states import Effect, Evidence, Surface

__all__ = [
    "BLOCKING", "CHANGEABLE", "DATA_CONDITIONS", "DEFAULT_SURFACE", "EFFECTS", "ENV_VAR_PATTERN", "EVIDENCE",
    "FIX_KINDS", "FIX_RANK", "FRAMEWORK_LABELS", "ID_PATTERN", "PADDABLE", "RULE_KEYS", "SURFACES", "Backend",
    "Example", "Fix", "Horizon", "Rule", "RuleBase", "SelectionEntry", "build_rulebase", "bundled_rules_dir",
    "example_facts", "load_rulebase", "read_data_file",
]


def bundled_rules_dir() -> Path:
    """Where the shipped rule files live (inside the wheel as attndoctor_rules)."""
    import attndoctor_rules

    return Path(attndoctor_rules.__file__).resolve().parent


ERROR_CATALOGUE = "errors.toml"
"""The error catalogue of `attndoctor why` lives beside the rules but is not a rule file (attndoctor/why/catalogue.py)."""


@lru_cache(maxsize=8)
def load_rulebase(directory: str | None = None) -> RuleBase:
    """Load and validate every *.toml under a folder (the bundled rules by default)."""
    from ..inputs import FOLDER, describe, locate

    folder = Path(directory) if directory else bundled_rules_dir()
    try:
        locate(folder, describe(folder, "rules folder", "give a folder of rule files (*.toml)"), FOLDER)
    except UsageError as exc:
        raise RuleError(str(exc)) from None
    files = sorted(p for p in folder.rglob("*.toml") if p.name != ERROR_CATALOGUE)
    if not files:
        raise RuleError("no rule files (*.toml) found", file=str(folder))
    return _cached(files, folder)


def _cached(files: list[Path], folder: Path) -> RuleBase:
    """A validated RuleBase, reused from a pickle in the user's cache while no rule file (or attndoctor) changed."""
    import os
    import pickle
    import zlib

    from .._version import __version__
    from .._toml import _cache_dir, prune_cache
    from ..inputs import describe, read_bytes
    from ..inputs.cache import read_cache

    # The key: attndoctor's version, the code of the pickled classes, and every rule file (name, size, CRC-32).
    parts = [__version__.encode()]
    here = Path(__file__).resolve().parent
    modules = ("rules.py", "rule_model.py", "nodes.py", "names.py", "parser.py", "typecheck.py", "ranges.py")
    sources = [here / m for m in modules] + [here.parent / "fields.py"] + files
    for path in sources:
        try:
            data = read_bytes(path, describe(path, "rule file")) if path in files else path.read_bytes()
        except OSError:  # an install without the module sources: no cache
            return build_rulebase(files, root=folder)
        except UsageError as exc:
            raise RuleError(str(exc)) from None
        parts.append(f"{path.name}:{len(data)}:{zlib.crc32(data):08x}".encode())
    key = zlib.crc32(b"|".join(parts))
    cache = _cache_dir()
    target = cache.parent / f"rulebase-{key:08x}-{len(b''.join(parts))}.pickle" if cache else None
    if target is not None:
        try:
            base = pickle.loads(read_cache(target) or b"")
            if isinstance(base, RuleBase):
                return base
        except Exception:  # noqa: BLE001 - a stale or foreign cache file is rebuilt, never trusted
            pass
    base = build_rulebase(files, root=folder)
    if target is not None:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(f".{os.getpid()}.tmp")
            with open(tmp, "wb") as handle:
                pickle.dump(base, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, target)
            prune_cache(target.parent, "rulebase-*.pickle")
        except (OSError, pickle.PicklingError, TypeError, AttributeError):
            pass
    return base


def build_rulebase(files: Iterable[Path], *, root: Path | None = None) -> RuleBase:
    """Parse the given files into one validated RuleBase."""
    rules: list[Rule] = []
    backends: list[Backend] = []
    horizons: list[Horizon] = []
    selection: list[tuple[Path, int, dict[str, Any]]] = []
    names: list[str] = []
    for path in files:
        display = str(path.relative_to(root)) if root and path.is_relative_to(root) else str(path)
        names.append(display)
        text, doc = read_data_file(path, display)
        extra = sorted(set(doc) - {"rule", "backend", "selection", "horizon"})
        if extra:
            raise RuleError(f"unknown top-level key {extra[0]!r}; expected [[rule]], [[backend]] or [[selection]]",
                            file=display)
        for table in _tables(doc, "backend", display):
            backends.append(_backend(table, display, text))
        for table in _tables(doc, "rule", display):
            rules.append(_rule(table, display, text))
        for table in _tables(doc, "horizon", display):
            horizons.append(_horizon(table, display))
        for table in _tables(doc, "selection", display):
            selection.append((path, 0, {**table, "__file": display, "__text": text}))
    backend_ids = {b.id for b in backends}
    if len(backend_ids) != len(backends):
        dup = next(b.id for b in backends if sum(x.id == b.id for x in backends) > 1)
        raise RuleError(f"backend {dup!r} declared twice")
    seen: dict[str, Rule] = {}
    for rule in rules:
        if rule.id in seen:
            raise RuleError(f"duplicate rule id (also at {seen[rule.id].file}:{seen[rule.id].line})",
                            file=rule.file, rule=rule.id, position=f"line {rule.line}")
        seen[rule.id] = rule
        for backend in rule.backends:
            if backend_ids and backend not in backend_ids:
                raise RuleError(f"unknown backend {backend!r}; known: {', '.join(sorted(backend_ids))}",
                                file=rule.file, rule=rule.id, position=f"line {rule.line}")
    entries = [_selection(t, backend_ids) for _, _, t in selection]
    pool: dict[tuple[Any, ...], expr.Node] = {}
    rules = [r._replace(predicate=expr.shared(r.predicate, pool),
                        fixes=tuple(f._replace(value_node=expr.shared(f.value_node, pool)) if f.value_node else f
                                    for f in r.fixes)) for r in rules]
    entries = [e._replace(predicate=expr.shared(e.predicate, pool)) for e in entries]
    for horizon in horizons:
        for backend in horizon.backends:
            if backend_ids and backend not in backend_ids:
                raise RuleError(f"horizon {horizon.package}: unknown backend {backend!r}")
    return RuleBase(rules=tuple(rules), backends=tuple(backends), selection=tuple(entries), files=tuple(names),
                    horizons=tuple(horizons))


def read_data_file(path: Path, display: str) -> tuple[str, dict[str, Any]]:
    """A data file's text and TOML document; an unreadable or malformed file is a RuleError naming it."""
    try:
        return load_toml_file(path, "rule file")
    except UsageError as exc:
        raise RuleError(str(exc)) from None
    except ValueError as exc:
        raise RuleError(f"not valid TOML: {exc}", file=display) from None


def _tables(doc: Mapping[str, Any], key: str, file: str) -> list[dict[str, Any]]:
    value = doc.get(key, [])
    if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
        raise RuleError(f"'{key}' must be an array of tables ([[{key}]])", file=file)
    return value


_ID_LINE = r'(?m)^\s*id\s*=\s*["\']([^"\']+)["\']'
_LINES: dict[int, tuple[str, dict[str, int]]] = {}


def _line_of(text: str, ident: str) -> int:
    """The line of `id = "IDENT"` in a file's text (indexed once per file)."""
    hit = _LINES.get(id(text))
    if hit is None or hit[0] is not text:
        index: dict[str, int] = {}
        for match in re.finditer(_ID_LINE, text):
            index.setdefault(match.group(1), text.count("\n", 0, match.start()) + 1)
        hit = _LINES[id(text)] = (text, index)
    return hit[1].get(ident, 0)


def _str_list(value: Any, what: str, err: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise err(f"{what}: expected a list of text")
    return tuple(value)


def _backend(table: dict[str, Any], file: str, text: str) -> Backend:
    ident = table.get("id", "")

    def err(msg: str) -> RuleError:
        return RuleError(msg, file=file, rule=str(ident), position=f"line {_line_of(text, str(ident))}")

    if not isinstance(ident, str) or not re.match(r"^[a-z0-9]+(-[a-z0-9]+)*$", ident):
        raise err("backend id: expected lowercase words joined by '-'")
    extra = sorted(set(table) - {"id", "framework", "label", "requires", "select", "references", "cpu"})
    if extra:
        raise err(f"unknown key {extra[0]!r}")
    requires = _str_list(table.get("requires", []), "requires", err)
    for pkg in requires:
        if pkg not in PACKAGES:
            raise err(f"requires: unknown package {pkg!r}; known: {', '.join(PACKAGES)}")
    framework = table.get("framework")
    if not isinstance(framework, str) or not framework:
        raise err("framework: required")
    return Backend(id=ident, framework=framework, label=str(table.get("label", ident)), requires=requires,
                   select=str(table.get("select", "")), cpu=bool(table.get("cpu", False)),
                   references=_str_list(table.get("references", []), "references", err))


def _horizon(table: dict[str, Any], file: str) -> Horizon:
    package = table.get("package")

    def err(msg: str) -> RuleError:
        return RuleError(f"horizon {package}: {msg}", file=file)

    extra = sorted(set(table) - {"package", "backends", "oldest", "newest", "references"})
    if extra:
        raise err(f"unknown key {extra[0]!r}")
    if package not in PACKAGES:
        raise err(f"package: expected one of {', '.join(PACKAGES)}")
    versions = []
    for key in ("oldest", "newest"):
        try:
            versions.append(parse_version(table.get(key), what=key, strict=True))
        except UsageError as exc:
            raise err(str(exc)) from None
    if versions[0] > versions[1]:
        raise err("oldest is newer than newest")
    references = _str_list(table.get("references", []), "references", err)
    if not references:
        raise err("references: say which releases the rules were read at")
    return Horizon(package=package, backends=_str_list(table.get("backends"), "backends", err),
                   oldest=str(table["oldest"]), newest=str(table["newest"]), references=references)


def _predicate(when: Mapping[str, Any], condition: str | None, err: Any) -> tuple[dict[str, VersionRange],
                                                                                 expr.Node]:
    if not isinstance(when, Mapping):
        raise err("when: expected a table such as { cudnn = '>=9.1,<9.5', sm = '==90' }")
    parts: list[expr.Node] = []
    specs: dict[str, VersionRange] = {}
    for name, spec in when.items():
        if not isinstance(spec, str):
            raise err(f"when.{name}: expected a specifier text such as '>=9.1,<9.5'")
        try:
            node = expr.in_range(name, spec)
        except expr.ExprError as exc:
            raise err(str(exc).rsplit(" (column", 1)[0]) from None
        if name != "sm" and _empty_range(node.spec):
            raise err(f"when.{name}: the range {spec!r} contains no version")
        specs[name] = node.spec
        parts.append(node)
    if condition is not None:
        if not isinstance(condition, str):
            raise err("condition: expected text")
        try:
            parts.append(expr.parse(condition))
        except expr.ExprError as exc:
            raise err(f"condition: {exc}") from None
    if not parts:
        return specs, expr.Const(1, True)
    flat: list[expr.Node] = []
    for p in parts:
        flat.extend(p.items if isinstance(p, expr.BoolOp) and p.op == "and" else (p,))
    return specs, flat[0] if len(flat) == 1 else expr.BoolOp(1, "and", tuple(flat))


def _empty_range(spec: VersionRange) -> bool:
    """True when no release version can satisfy the set (checked on a grid of plausible versions)."""
    bounds = {Version(s.version.replace(".*", "")) for s in spec}
    probes = set()
    for b in bounds:
        rel = list(b.release) + [0, 0, 0]
        for delta in (-1, 0, 1):
            for i in range(3):
                cand = rel[:3]
                cand[i] = max(0, cand[i] + delta)
                probes.add(Version(".".join(map(str, cand))))
                probes.add(Version(".".join(map(str, cand[: i + 1]))))
    probes |= {Version("0"), Version("999")}
    return not any(spec.contains(p, prereleases=True) for p in probes)


def _fix(raw: Any, err: Any) -> Fix:
    if not isinstance(raw, Mapping):
        raise err("fixes: each fix is a table such as { upgrade = 'cudnn', to = '9.5.0' }")
    kinds = [k for k in FIX_KINDS if k in raw]
    if len(kinds) != 1:
        raise err(f"fixes: each fix names exactly one of {', '.join(FIX_KINDS)}")
    extra = sorted(set(raw) - set(FIX_KINDS) - {"to", "note"})
    if extra:
        raise err(f"fixes: unknown key {extra[0]!r}")
    kind = kinds[0]
    target = raw[kind]
    to = raw.get("to")
    note = raw.get("note", "")
    if not isinstance(target, str) or not isinstance(note, str):
        raise err(f"fixes: {kind} takes a name")
    if kind in ("upgrade", "downgrade"):
        if target not in PACKAGES:
            raise err(f"fixes: {kind} takes a package, one of {', '.join(PACKAGES)}")
        if not isinstance(to, str):
            raise err(f"fixes: {kind} {target} needs to = 'VERSION'")
        try:
            to = to.strip() if kept_beta(to, target) else str(parse_version(to, what="to"))
        except UsageError as exc:
            raise err(f"fixes: {exc}") from None
        return Fix(kind, target, to, note)
    if kind in ("change", "pad"):
        if target not in CHANGEABLE:
            raise err(f"fixes: {kind} takes a config field, one of {', '.join(sorted(CHANGEABLE))}")
        if kind == "pad" and target not in PADDABLE:
            raise err(f"fixes: pad takes a size field, one of {', '.join(PADDABLE)}")
        if to is None:
            raise err(f"fixes: {kind} {target} needs to = VALUE or an expression over config fields")
        try:
            node, typ = expr.parse_value(to)
        except expr.ExprError as exc:
            raise err(f"fixes: {kind} {target}: {exc}") from None
        want = expr.VARIABLES[target][0]
        if not (typ == want or {typ, want} <= {expr.INT, expr.NUM}):
            raise err(f"fixes: {kind} {target} needs {a(want)}, got {a(typ)}")
        if isinstance(node, expr.Const) and expr.VARIABLES[target][1] and node.value not in expr.VARIABLES[target][1]:
            raise err(f"fixes: {target} is never {node.value!r}")
        free = expr.free_names(node) - expr.CONFIG_VARIABLES
        if free:
            raise err(f"fixes: {kind} {target} may only read config fields, not {sorted(free)[0]}")
        return Fix(kind, target, to, note, node)
    if not re.match(ENV_VAR_PATTERN, target):
        raise err(f"fixes: {kind} takes an environment variable name such as NVTE_FUSED_ATTN")
    if kind == "set" and not isinstance(to, str):
        raise err(f"fixes: set {target} needs to = 'VALUE' (text)")
    return Fix(kind, target, to if kind == "set" else None, note)


def _example(raw: Any, err: Any) -> Example:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("applies"), bool):
        raise err("examples: each example needs applies = true|false, config = {...}, env = {...}")
    extra = sorted(set(raw) - {"applies", "config", "env"})
    if extra:
        raise err(f"examples: unknown key {extra[0]!r}")
    config = raw.get("config", {})
    env = raw.get("env", {})
    if not isinstance(config, Mapping) or not isinstance(env, Mapping):
        raise err("examples: config and env must be tables")
    bad = sorted(set(config) - set(FIELDS) - {"seqlen", "causal"})
    if bad:
        raise err(f"examples: unknown config field {bad[0]!r}")
    return Example(applies=raw["applies"], config=dict(config), env=dict(env))


def _rule(table: dict[str, Any], file: str, text: str) -> Rule:
    ident = table.get("id", "")
    line = _line_of(text, str(ident)) if isinstance(ident, str) else 0

    def err(msg: str) -> RuleError:
        return RuleError(msg, file=file, rule=str(ident or "?"), position=f"line {line}" if line else "")

    if not isinstance(ident, str) or not re.match(ID_PATTERN, ident):
        raise err("id: expected upper-case words joined by '-', e.g. TE-FUSED-SEQ64")
    extra = sorted(set(table) - RULE_KEYS)
    if extra:
        raise err(f"unknown key {extra[0]!r}; accepted: {', '.join(sorted(RULE_KEYS))}")
    for key in ("title", "message"):
        if not isinstance(table.get(key), str) or not table[key].strip():
            raise err(f"{key}: required text")
    backends = _str_list(table.get("backends"), "backends", err)
    effect = table.get("effect")
    if effect not in EFFECTS:
        raise err(f"effect: expected one of {', '.join(EFFECTS)}")
    surfaces = table.get("surfaces", DEFAULT_SURFACE[effect])
    if surfaces not in SURFACES:
        raise err(f"surfaces: expected one of {', '.join(SURFACES)}")
    symptom = table.get("symptom", "")
    if not isinstance(symptom, str):
        raise err("symptom: expected text")
    if effect in BLOCKING and not symptom.strip():
        raise err("symptom: required for a blocking effect (what the user sees)")
    specs, predicate = _predicate(table.get("when", {}), table.get("condition"), err)
    fixes_raw = table.get("fixes", [])
    if not isinstance(fixes_raw, list):
        raise err("fixes: expected a list of tables")
    fixes = tuple(_fix(f, err) for f in fixes_raw)
    references = _str_list(table.get("references", []), "references", err)
    if not references:
        raise err("references: at least one source (repo + path + tag/commit, or issue/PR number)")
    examples_raw = table.get("examples", [])
    if not isinstance(examples_raw, list):
        raise err("examples: expected a list of tables")
    examples = tuple(_example(e, err) for e in examples_raw)
    evidence = table.get("evidence", "source")
    if evidence not in EVIDENCE:
        raise err(f"evidence: expected one of {', '.join(EVIDENCE)}")
    message = table["message"]
    for placeholder in re.findall(r"{([^{}]*)}", message):
        if placeholder not in expr.VARIABLES:
            raise err(f"message: unknown placeholder {{{placeholder}}}")
    data = _str_list(table.get("data", []), "data", err)
    for name in data:
        if name not in DATA_CONDITIONS:
            raise err(f"data: unknown data condition {name!r}; known: {', '.join(DATA_CONDITIONS)}")
    fixed_in = table.get("fixed_in", {})
    if not isinstance(fixed_in, Mapping) or not all(isinstance(v, str) for v in fixed_in.values()):
        raise err("fixed_in: expected a table such as { cudnn = '9.26.0' }")
    for package, version in fixed_in.items():
        if package not in PACKAGES:
            raise err(f"fixed_in: unknown package {package!r}; known: {', '.join(PACKAGES)}")
        try:
            fixed = parse_version(version, what=f"fixed_in.{package}", strict=True)
        except UsageError as exc:
            raise err(str(exc)) from None
        if package in specs and specs[package].contains(fixed):
            raise err(f"fixed_in.{package}: {version} lies inside the affected range {specs[package]}")
    workaround = table.get("workaround", "")
    if not isinstance(workaround, str):
        raise err("workaround: expected text")
    return Rule(
        id=ident, title=table["title"].strip(), backends=backends, effect=Effect(effect), surfaces=Surface(surfaces),
        when=specs, condition_text=table.get("condition") or "", message=message.strip(), symptom=symptom.strip(),
        fixes=fixes, references=references, examples=examples, evidence=Evidence(evidence),
        notes=str(table.get("notes", "")).strip(), file=file, line=line, predicate=predicate,
        names=frozenset(expr.free_names(predicate)), key_names=tuple(sorted(expr.free_names(predicate))),
        data=data, fixed_in=dict(fixed_in), workaround=workaround.strip(),
    )


def _selection(table: dict[str, Any], backend_ids: set[str]) -> SelectionEntry:
    file, text = table.pop("__file"), table.pop("__text")
    ident = table.get("id", "")

    def err(msg: str) -> RuleError:
        return RuleError(msg, file=file, rule=str(ident), position=f"line {_line_of(text, str(ident))}")

    if not isinstance(ident, str) or not re.match(ID_PATTERN, ident):
        raise err("id: expected upper-case words joined by '-'")
    extra = sorted(set(table) - {"id", "framework", "when", "condition", "order", "note", "references"})
    if extra:
        raise err(f"unknown key {extra[0]!r}")
    order = _str_list(table.get("order"), "order", err)
    for b in order:
        if b not in backend_ids:
            raise err(f"order: unknown backend {b!r}")
    _, predicate = _predicate(table.get("when", {}), table.get("condition"), err)
    references = _str_list(table.get("references", []), "references", err)
    if not references:
        raise err("references: at least one source")
    return SelectionEntry(id=ident, framework=str(table.get("framework", "")), order=order,
                          note=str(table.get("note", "")), references=references,
                          condition_text=str(table.get("condition", "")), predicate=predicate)


def example_facts(example: Example) -> tuple[Any, Any]:
    """The config and environment an example describes (GPU names resolved through the catalogue)."""
    from ..config import make_config
    from ..environment import environment_from_flags

    return make_config(example.config), environment_from_flags(example.env)

