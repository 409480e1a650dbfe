"""Rank the rules and advisories by how well they explain a text: catalogue links, symptom words, the facts."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..engine.results import DERIVED_FROM
from .candidate import Candidate
from .fixes import (MIXED_DTYPES_FIX, NOT_THE_KERNELS, another_install, arch_rebuild_fix, caller_package, cudnn_bound_fix,
                    cut_advice, distinct, fixed_value, generic_fix, imports_itself, kernel_package, own_advice, own_fix,
                    own_requirement, package_of, raising_package, retired_fix, rule_fixes, shipped_by, with_caller)
from .own_words import words_cause
from .message_score import CAUSE_AT, message_score, own_positions
from .reader import first_hits
from .remedies import with_alternative
from .similarity import Similarity, tokens
from .topics import entry_topics, install_topics, rule_topics, text_topics

LINK = 3.0
"""A catalogue message that names the rule: the strongest evidence."""
SIMILARITY = 3.0
"""Weight of the symptom similarity (0..1)."""
SPECIFIC = 1.0
"""A value the message names (the argument 'softcap') that the rule's symptom names too."""
HOLDS, OPEN, RULED_OUT = 2.0, 0.5, -3.5
"""The text's facts meet the rule's condition / leave it open / contradict it."""
OTHER_BACKEND = -1.0
"""The text names backends and the rule is about none of them."""
UNSHOWN_PACKAGE = -1.0
"""The rule is open only on the version of its backend's own package, which the user did not give and the text does
not show in use (flash-attn 3's Blackwell refusal for a bare 'no kernel image' from a torch build)."""
INFERRED_SYMPTOM = 0.5
"""The similarity weight of a rule whose evidence is inferred: its symptom text was not observed."""
RESEMBLES = 0.01
"""How far below the text's own message a rule goes that only its symptom's words point at."""
RESEMBLES_ONLY = ("only its symptom's words point at it, and the text holds a library's own message about another "
                  "backend that names a cause")
RULED_OUT_CAUSES = -1.0
"""Added to a message whose every modelled cause the facts rule out: it was printed, so it stays a cause, but its
rules' fixes are not offered and another explanation may rank above it."""
INSTALL_FINDING = 6.0
"""A finding about the installed binaries, handed in by the caller (see explain_text's `install_findings`): read from
this machine, it outweighs a rule that only might apply."""
INSTALL_NAMED = 2.0
"""The text names the finding's file (flash_attn_2_cuda) or, for +1, its package: the error comes from that binary."""
INSTALL_SYMBOL = 1.0
"""The text's undefined symbol is the one the finding names."""
INSTALL_UNSHOWN = 1.0
"""A finding about the installed binaries whose symptom the text does not show: listed, never the cause."""
QUOTED_LITERAL, QUOTED_BY = 20, 2
"""A library message whose words (at least this many characters) the symptoms of at most this many rules quote is
their symptom, as if they named it; one that many rules quote (triton's "out of resource") is too common to say which."""
WHOLE_SCORES = frozenset({"sdpa-math", "te-unfused"})
"""The attention paths that build the whole score matrix: where memory runs out, the ones to move the call off."""
SHARED_LINK = 2 / 3
"""The share of LINK a rule gets from a message any kernel prints (the CUDA runtime's) that also links known bugs of
other libraries' kernels, where the text names none of them: one of several that end this way, it stays beside the
message (within why.service.CLOSE of it) rather than above it."""
CONSIDER_AT = 0.35
"""Symptom similarity from which a rule no message links is considered at all."""
def rank(*, reading: Any, rules: Sequence[Any], result: Any, install_findings: Sequence[Mapping[str, Any]] = (),
         similarity: Similarity | None = None, given: Sequence[str] = (), cudnn: str | None = None) -> list[Candidate]:
    """Every candidate worth showing, best first. `given`: the packages whose versions the user gave (flags, the
    text); where it is one attention package, its backends are those of a cause that names none (a CUDA error).
    `cudnn`: the cuDNN release the facts give."""
    similarity = similarity or Similarity({r.id: f"{r.symptom} {r.title}" for r in rules})
    extra = set().union(*(tokens(" ".join(str(f.get(k, "")) for k in ("title", "message", "symptom")))
                          for f in install_findings)) if install_findings else set()
    windows = similarity.windows(reading.lines, extra)
    found: dict[str, tuple[Any, Any]] = {}
    for verdict in result.all_verdicts:
        for finding in verdict.findings:
            if finding.applies is not False:
                found.setdefault(finding.id, (finding, verdict))
    links = _links(reading, rules)
    own = {v.backend.id: frozenset(r for r in v.backend.requires if r != "torch") for v in result.all_verdicts}
    dispatched = frozenset(b for selection in result.selected for b in selection.order)
    packages = {v.backend.id: package_of(v.backend.requires) for v in result.all_verdicts}
    by_id = {r.id: r for r in rules}
    many = _one_of_many(reading, links, found, by_id, packages)
    out = _rule_candidates(reading, rules, found, similarity, windows, links, own, dispatched,
                           {r for entry_id in many for r in links[entry_id]})
    best_rule = max((c.score for c in out if c.applies is True), default=0.0)
    fallback = _given_backends(given, result)
    out.extend(_message_candidates(reading, by_id, found, best_rule, links, packages, fallback, cudnn, many))
    out.extend(_install_candidates(install_findings, reading, windows))
    out = _own_message_first(out, {h.entry.id for h in reading.hits if h.entry.kind in ("error", "warning")},
                             {h.entry.id for h in reading.hits
                              if h.entry.kind == "error" and h.entry.indexed and not h.resembles})
    if all(c.score < CAUSE_AT for c in out):
        words = words_cause(reading, CAUSE_AT, packages, fallback)
        out.extend((words,) if words else ())
    caller = caller_package(reading.lines)
    if caller:
        out = [with_caller(c, caller) for c in out]
    order: dict[str, int] = {}  # a message's entry lists first the check its words describe: ties go to it
    for linked in links.values():
        for at, rule_id in enumerate(linked):
            order[rule_id] = min(at, order.get(rule_id, at))
    out.sort(key=lambda c: (-c.score, c.kind != "advisory", order.get(c.id, len(order)), c.id))
    return _with_twins_fixes(out)


def _with_twins_fixes(out: list[Candidate]) -> list[Candidate]:
    """The first cause's fixes, then those of a message that another library prints word for word, read on the same
    line at the same score: the text does not say which of the two printed it."""
    from .index import LABELS

    if not out or out[0].kind != "message":
        return out
    first, mine = out[0], out[0].id.rsplit("-", 1)[0].lower()
    extra = [f"where {LABELS[library]} printed it (it prints the same words): {fix}"
             for c in out[1:] for library in [c.id.rsplit("-", 1)[0].lower()]
             if c.kind == "message" and c.lines == first.lines and c.score == first.score and library != mine
             and library in LABELS for fix in c.fixes[:2]]
    return [first._replace(fixes=tuple(dict.fromkeys((*first.fixes, *extra)))), *out[1:]] if extra else out


def _given_backends(given: Sequence[str], result: Any) -> tuple[str, ...]:
    """The backends of the one attention package whose version the user gave (flash-attn 2.8.1: flash-attn-2). An
    attention package is what a backend needs besides torch, first (cudnn-frontend for cudnn-fe, not cuDNN)."""
    own = {v.backend.id: own_requirement(v.backend.requires) for v in result.all_verdicts}
    packages = [p for p in dict.fromkeys(given) if p in own.values()]
    return tuple(b for b, package in own.items() if package == packages[0]) if len(packages) == 1 else ()


def _own_message_first(out: list[Candidate], printed: set[str], errors: set[str]) -> list[Candidate]:
    """A library's own message that names its cause beats a rule no message links whose symptom only resembles the
    text: one about another backend or, where the message is an error of the index (the library's own check) that the
    text holds word for word, any such rule. It ranks just below the best message the text holds."""
    best = max((c for c in out if c.kind == "message" and c.id in printed), key=lambda c: c.score, default=None)
    if best is None or not best.backends:
        return out
    return [c._replace(score=round(best.score - RESEMBLES, 2), reasons=(*c.reasons, RESEMBLES_ONLY))
            if c.kind in ("rule", "advisory") and not c.lines and c.score >= best.score and not c.failures
            and (not set(c.backends) & set(best.backends) or best.id in errors) else c for c in out]


def _links(reading: Any, rules: Sequence[Any]) -> dict[str, tuple[str, ...]]:
    """The rules each message the text holds is the symptom of: those its entry names, else those whose symptom
    quotes its words (a library message read from the source, which an advisory's symptom cites); for a message any
    kernel prints (the CUDA runtime's), only those about the backends the text names, and none by quotation where it
    names none."""
    hits: dict[str, list[Any]] = {}
    for hit in reading.hits:
        hits.setdefault(hit.entry.id, []).append(hit)
    by_id = {r.id: r for r in rules}
    out: dict[str, tuple[str, ...]] = {}
    for entry_id, same in hits.items():
        entry = same[0].entry
        named = set(reading.framed or reading.backends) if not entry.backends else set()
        literal = entry.literals[0][0] if entry.indexed and not entry.rules and entry.literals else ""
        quoting = tuple(r.id for r in rules if literal in r.symptom) if len(literal) >= QUOTED_LITERAL else ()
        if not (entry.backends or named):  # any kernel prints a runtime's words: an advisory quoting them is one of many
            quoting = ()
        linked = _narrowed(entry.rules or (quoting if len(quoting) <= QUOTED_BY else ()), same, by_id)
        if not entry.backends and not named and _raised_elsewhere(reading.lines, same[0].line):
            linked = ()
        out[entry_id] = tuple(r for r in linked if r in by_id and named & set(by_id[r].backends)) if named else linked
    return out


def _raised_elsewhere(lines: Sequence[str], line: int) -> bool:
    """Whether a traceback frame shows the error rising in a package that is no attention backend (a SageAttention
    build, a plugin's own kernel): a runtime's message there is none of the rules' symptom."""
    package = raising_package(lines, line).split(".")[0].lower()
    return bool(package) and package not in NOT_THE_KERNELS


def _narrowed(linked: tuple[str, ...], hits: Sequence[Any], by_id: Mapping[str, Any]) -> tuple[str, ...]:
    """A message that prints which of its reasons it is ("Cannot use FlashAttention-2 backend for head size 88")
    links only the rules of that kind; where none is of that kind, all of them."""
    printed = set(text_topics(*(str(v) for h in hits for v in h.groups.values()))) - {"other"}
    kept = tuple(r for r in linked if r in by_id and set(rule_topics(by_id[r])) & printed) if printed else ()
    return kept or linked


def _rule_candidates(reading: Any, rules: Sequence[Any], found: Mapping[str, tuple[Any, Any]],
                     similarity: Similarity, windows: Sequence[set[str]],
                     links: Mapping[str, tuple[str, ...]], own: Mapping[str, frozenset[str]],
                     dispatched: frozenset[str], shared: frozenset[str] | set[str] = frozenset()) -> list[Candidate]:
    """The rules and advisories the text points at: by a message they explain, their symptom's words, or a bare
    failure of their backend that their refusal explains (`dispatched`: the backends a framework selects among)."""
    linked: dict[str, list[int]] = {}
    specifics: dict[str, set[str]] = {}
    for hit in reading.hits:
        for rule_id in links.get(hit.entry.id, ()):
            linked.setdefault(rule_id, []).append(hit.line)
            specifics.setdefault(rule_id, set()).update(v for v in hit.groups.values() if len(v) > 2)
    named = set(reading.framed or reading.backends)  # a wrapper or call frame names the backend that ran
    bare = _bare_failures(reading, {r.id: r for r in rules})
    out: list[Candidate] = []
    for rule in rules:
        sim = similarity.score(rule.id, windows)
        pair = found.get(rule.id)
        blocking_here = bool(pair and named & set(rule.backends) and sim >= CONSIDER_AT / 2
                             and (pair[0].blocking or pair[0].advisory))
        refused = sorted({hit for b in rule.backends for hit in bare.get(b, ())}) if (
            pair and pair[0].applies is True and pair[0].blocking and not rule.advisory
            and not _passed_over(rule, dispatched)) else []
        if rule.id not in linked and sim < CONSIDER_AT and not blocking_here and not refused:
            continue
        out.append(_rule_candidate(rule, sim, pair, sorted(set(linked.get(rule.id, ()))), refused,
                                   specifics.get(rule.id, set()), named,
                                   frozenset().union(*(own.get(b, ()) for b in rule.backends)), rule.id in shared))
    return out


def _rule_candidate(rule: Any, sim: float, pair: tuple[Any, Any] | None, lines: Sequence[int],
                    refused: Sequence[tuple[int, int]], specifics: set[str], named: set[str],
                    packages: frozenset[str] = frozenset(), shared: bool = False) -> Candidate:
    """One rule as a candidate: its score and the reasons for it."""
    score, reasons = 0.0, []
    if lines and shared:
        score += LINK * SHARED_LINK
        reasons.append(f"the message on line {', '.join(map(str, lines[:3]))} can come from it, as from known bugs of "
                       "other libraries' kernels, and the text names none of them")
    elif lines:
        score += LINK
        reasons.append(f"the message on line {', '.join(map(str, lines[:3]))} comes from it")
    elif refused:
        score += LINK - 0.2 * min(rank for _, rank in refused)
        reasons.append(f"line {refused[0][0]} is a failure of {', '.join(rule.backends)} that names no reason, and "
                       "this refusal holds for the facts")
    named_too = sorted(v for v in specifics if v in rule.symptom)
    if named_too:
        score += SPECIFIC
        reasons.append(f"its symptom names {', '.join(named_too)} too")
    if sim >= 0.05:
        inferred = getattr(rule, "evidence", "") == "inferred"
        score += SIMILARITY * sim * (INFERRED_SYMPTOM if inferred else 1.0)
        reasons.append(f"its symptom matches the text ({sim:.0%} of its words"
                       + (", a symptom inferred, not observed)" if inferred else ")"))
    applies: bool | None
    missing: tuple[str, ...] = ()
    if pair is None:
        applies = False
        score += RULED_OUT
        reasons.append("the facts rule it out")
    elif pair[0].applies is True:
        applies = True
        score += HOLDS
        reasons.append("the facts meet its condition" + (" (the data decide it)" if pair[0].data else ""))
    else:
        applies, missing = None, tuple(pair[0].missing)
        score += OPEN
        reasons.append(f"it depends on {', '.join(missing) or 'facts not given'}")
        if missing and not named & set(rule.backends) and all(DERIVED_FROM.get(m, m) in packages for m in missing):
            score += UNSHOWN_PACKAGE
            reasons.append(f"only on {', '.join(missing)}, which the text does not show in use")
    if named and not named & set(rule.backends):
        score += OTHER_BACKEND
        reasons.append(f"it is about {', '.join(rule.backends)}, the text about {', '.join(sorted(named))}")
    return Candidate(
        id=rule.id, kind="advisory" if rule.advisory else "rule", score=round(score, 2), reasons=tuple(reasons),
        title=rule.title, cause=pair[0].message if pair else rule.title,
        fixes=with_alternative(rule_fixes(rule, pair), [b for b in rule.backends if b in named] or rule.backends),
        backends=tuple(rule.backends), applies=applies, missing=missing, references=tuple(rule.references),
        lines=tuple(lines), topics=rule_topics(rule), failures=tuple(sorted({line for line, _ in refused})))


def _message_candidates(reading: Any, by_id: Mapping[str, Any], found: Mapping[str, tuple[Any, Any]],
                        best_rule: float, links: Mapping[str, tuple[str, ...]],
                        packages: Mapping[str, str], fallback: tuple[str, ...], cudnn: str | None = None,
                        many: frozenset[str] = frozenset()) -> list[Candidate]:
    """The messages the text holds that no rule the facts leave open speaks for, each a cause of its own."""
    out: list[Candidate] = []
    named = set(reading.backends)
    curated = _curated_lines(reading)
    errors = [h.line for h in reading.hits if h.entry.kind == "error"]
    last_error = max(errors, default=0)
    against, where = (set(reading.framed), "'s frames") if reading.framed else (named, "")
    problems = any(h.entry.kind in ("error", "warning") for h in reading.hits)
    evaluated = set(packages)
    listed = _listed_reasons(reading.hits)
    for hit in first_hits(h for h in reading.hits if (h.line, h.text) not in listed):
        entry = hit.entry
        if entry.kind == "fact" or entry.indexed and hit.line in curated:
            continue
        standing = _standing(entry, links, found, many)
        if standing is None:
            continue
        entry, linked, live = standing
        topics = entry_topics(entry, by_id)
        if entry.kind == "log" and not entry.fix and (problems or topics == ("other",)):
            continue
        ruled_out = [r for r in linked if r in by_id and set(by_id[r].backends) & evaluated] if not live else []
        if hit.groups:  # the values a message printed name its kind too: The "packing" feature requires ...
            printed = text_topics(*(v for h in reading.hits if h.entry.id == entry.id for v in _printed(h.groups)))
            topics = tuple(dict.fromkeys(t for t in (*topics, *printed) if t != "other")) or topics
        score, reasons = message_score(entry, hit, reading, best_rule, last_error, problems)
        backends = message_backends(entry, reading.framed or reading.backends) or fallback
        if against and not against & set(backends):
            score += OTHER_BACKEND
            reasons.append(f"it is about {', '.join(backends)}, the text{where} about {', '.join(sorted(against))}")
        cause = entry.meaning
        line = _line_of(reading, hit)
        shipper = shipped_by(line) if entry.library == "loader" else ""
        if shipper:
            cause = f"{shipper}'s compiled file does not load (the dynamic loader: {hit.text})"
        ruled = f"the facts given rule out every cause modelled for it ({', '.join(ruled_out)})"
        if ruled_out and not entry.fix:
            score += RULED_OUT_CAUSES
            caveat = f"{ruled}: check that they describe the machine and versions that printed it"
            reasons.append(caveat)
            cause = f"{cause}; but {caveat}"
        another = another_install(hit, ruled_out) if entry.fix else None
        if another:
            topics = tuple(dict.fromkeys((*topics, "install-missing")))
            reasons.append(ruled)
            cause = f"{cause}; but the facts given rule that out: {another[0]}"
        itself = imports_itself(hit.groups, reading.lines, hit.line)  # (topics, cause, fixes) of a partial install
        topics, cause = itself[:2] if itself else (topics, cause)
        fixes = itself[2] if itself else with_alternative(_message_fixes(entry, hit, another, ruled_out, by_id, kernel_package(
            backends, packages), lambda: tuple(dict.fromkeys((
            *own_advice(reading.lines, hit.line), *cut_advice(entry, reading.lines, hit.line, generic_fix(
                entry, topics, backends, line, packages, reading.framed)))))),
            () if entry.summary else _kept_out(backends, topics), entry.library)  # a summary names no one backend
        fixes = fixes[:1] if fixes[:1] == (MIXED_DTYPES_FIX,) else (  # mixed dtypes: every backend refuses them
            *arch_rebuild_fix(entry, reading.lines, hit.line),
            *(cudnn_bound_fix(entry.note, cudnn) if entry.indexed else ()), *fixes, *retired_fix(entry))
        out.append(Candidate(id=entry.id, kind="message", score=round(score, 2), reasons=tuple(reasons),
                             title=entry.meaning, cause=cause, fixes=fixes, backends=backends, applies=True,
                             references=entry.source, lines=(hit.line,), topics=topics))
    return out


def _standing(entry: Any, links: Mapping[str, tuple[str, ...]], found: Mapping[str, tuple[Any, Any]],
              many: frozenset[str]) -> tuple[Any, tuple, list] | None:
    """(entry, linked rules, those the facts leave open) of a message that stands as a cause; None where an open rule
    speaks for it with its own fix. A runtime's message links only the rules of the kernels the text names; one of
    `many` (see _one_of_many) stands beside the bugs it links and speaks for none of them."""
    if entry.id in many:
        return entry._replace(rules=()), (), []
    if entry.rules and not entry.backends:
        entry = entry._replace(rules=links.get(entry.id, entry.rules))
    linked = links.get(entry.id, entry.rules)
    live = [r for r in linked if r in found]
    if linked and live and not entry.fix:
        return None
    return entry, linked, live


def _kept_out(backends: Sequence[str], topics: Sequence[str]) -> tuple[str, ...]:
    """The backends whose remedy to offer beside a message's fix: for running out of memory, only the paths that hold
    the whole score matrix (keeping a fused kernel out sends the call to them)."""
    return tuple(b for b in backends if b in WHOLE_SCORES) if "oom" in topics else tuple(backends)


def _one_of_many(reading: Any, links: Mapping[str, tuple[str, ...]], found: Mapping[str, tuple[Any, Any]],
                 by_id: Mapping[str, Any], packages: Mapping[str, str]) -> frozenset[str]:
    """The messages any kernel prints (the CUDA runtime's), without a fix of their own, whose linked rules left open
    are about several libraries' kernels while the text names none of them: each rule is a known bug to check, and
    the message itself stays the cause."""
    if reading.framed or reading.backends:
        return frozenset()
    def libraries(entry_id: str) -> set[str]:
        return {packages.get(b) or b for r in links.get(entry_id, ()) if r in found and r in by_id
                for b in by_id[r].backends}

    return frozenset(h.entry.id for h in reading.hits if not (h.entry.backends or h.entry.fix)
                     and len(libraries(h.entry.id)) > 1)


def _message_fixes(entry: Any, hit: Any, another: tuple[str, str] | None, ruled_out: Sequence[str],
                   by_id: Mapping[str, Any], kernel: str, fallback: Any) -> tuple[str, ...]:
    """A message's fixes: its own (after checking for another install), else its rules' fixed ones where the facts do
    not rule them out, else `fallback()` (the message's advice, a fix by its kind)."""
    if entry.fix:
        own = own_fix(entry.fix, hit.groups, kernel)
        return (*another[1:], own) if another else (own,)
    return (() if ruled_out else distinct(
        f for rid in entry.rules if rid in by_id for f in by_id[rid].fixes if fixed_value(f))) or fallback()


def _install_candidates(findings: Sequence[Mapping[str, Any]], reading: Any,
                        windows: Sequence[set[str]]) -> list[Candidate]:
    """Install findings as candidates: one whose symptom the text shows (a catalogue message marked with the
    finding's kind: 'no kernel image' for arch, 'undefined symbol' for abi) ranks by how surely the text points at
    its binary; one the text does not show stays below the cause."""
    shown: dict[str, list[Any]] = {}
    for hit in reading.hits:
        if hit.entry.install:
            shown.setdefault(hit.entry.install, []).append(hit)
    lowered = "\n".join(reading.lines).lower()
    out: list[Candidate] = []
    for finding in findings:
        text = " ".join(str(finding.get(k, "")) for k in ("title", "message", "symptom"))
        sim = Similarity({"f": text}).score("f", windows)
        kind = finding.get("kind")
        hits = shown.get(str(kind), []) if kind else []
        if kind == "arch" and finding.get("severity") == "warning":
            hits = []  # PTX the driver compiles at first use: slow, but it runs
        relevant = bool(hits) if kind else sim >= CONSIDER_AT
        reasons = ["found in the installed binaries"]
        lines: tuple[int, ...] = ()
        if relevant:
            score = INSTALL_FINDING + SIMILARITY * sim
            if hits:
                lines = tuple(sorted({h.line for h in hits}))
                reasons.append(f"line {lines[0]} is the error it causes")
            stem = str(finding.get("file") or "").split(".")[0].lower()
            package = str(finding.get("package") or "").lower()
            label = str(finding.get("label") or package.replace("_", "-")).lower()
            if len(stem) > 3 and stem in lowered:
                score += INSTALL_NAMED
                reasons.append(f"the text names its file {stem}")
            elif package and (package in lowered or label in lowered):
                score += INSTALL_NAMED / 2
                reasons.append(f"the text names {label}")
            symbols = {h.groups.get("symbol") for h in hits} - {None}
            if any(s in str(finding.get("message", "")) for s in symbols):
                score += INSTALL_SYMBOL
                reasons.append("the text's undefined symbol is the one it lacks")
        else:
            score = INSTALL_UNSHOWN
            reasons.append("the text shows no error it causes")
        out.append(Candidate(
            id=str(finding.get("id", "INSTALL")), kind="install", score=round(score, 2), reasons=tuple(reasons),
            title=str(finding.get("title", "")), cause=str(finding.get("message") or finding.get("title", "")),
            fixes=tuple(str(f) for f in ([finding["fix"]] if isinstance(finding.get("fix"), str)
                                         else finding.get("fix") or [])),
            backends=tuple(finding.get("backends") or ()), applies=True,
            references=tuple(finding.get("references") or ()), lines=lines, topics=install_topics(finding)))
    return out


def message_backends(entry: Any, named: Sequence[str]) -> tuple[str, ...]:
    """A message's backends, narrowed by the ones the text names among those its library reaches users through
    ("cuDNN Frontend error:" around a cudnn-frontend message: SDPA's cuDNN backend, not a cudnn-fe graph)."""
    from .index import LIBRARY_BACKENDS

    reach = set(entry.backends) | set(LIBRARY_BACKENDS.get(entry.library, ()))
    return tuple(b for b in named if b in reach) or tuple(entry.backends) or tuple(named)


def _bare_failures(reading: Any, rules: Mapping[str, Any]) -> dict[str, list[tuple[int, int]]]:
    """backend -> (line, rank) of the errors about it that say nothing more specific ("No valid engine configs for
    ...", "cudnnFinalize Failed"), rank 0 for the backend the message is first about: where the facts make the backend
    refuse the config, that refusal is their cause. A line a hand-written entry explains has said more already."""
    out: dict[str, list[tuple[int, int]]] = {}
    curated = _curated_lines(reading)
    for hit in reading.hits:
        entry = hit.entry
        if entry.kind != "error" or entry.rules or entry.install or entry.fix or entry.indexed and hit.line in curated:
            continue
        if entry_topics(entry, rules) != ("other",):
            continue
        for rank, backend in enumerate(message_backends(entry, reading.framed or reading.backends)):
            out.setdefault(backend, []).append((hit.line, rank))
    return out


def _passed_over(rule: Any, dispatched: frozenset[str]) -> bool:
    """A refusal at SDPA's or TE's dispatch falls back before the kernel runs: no failure inside that kernel is it."""
    return rule.surfaces == "dispatch" and all(b in dispatched for b in rule.backends)


def _curated_lines(reading: Any) -> set[int]:
    """Lines a hand-written entry explains: an index message there says nothing more (and is no bare failure). A
    hand-written log that only narrates (TransformerEngine's "Disabling X ..." story: no rule, no fix, no kind of
    problem of its own) explains nothing: the library's own check on its line does."""
    return {h.line for h in reading.hits if not h.entry.indexed and h.entry.kind != "fact" and not (
        h.entry.kind == "log" and not h.entry.rules and not h.entry.fix and not getattr(h.entry, "topic", ""))}


def _line_of(reading: Any, hit: Any) -> str:
    """The whole line a message was found on: a loader's message names its file before the match."""
    return reading.lines[hit.line - 1] if 0 < hit.line <= len(reading.lines) else hit.text


def _reasons(groups: Mapping[str, str]) -> tuple[str, ...]:
    """The reasons a message lists, the values of its groups named for them ("... Reasons: {reasons_str}")."""
    return tuple(str(v) for k, v in groups.items() if "reason" in k)


def _printed(groups: Mapping[str, str]) -> tuple[str, ...]:
    """The values a message printed that say what went wrong: its reasons where it lists them ("No valid attention
    backend found for cuda with <config>. Reasons: {...}"), not the config it was asked for; else every value."""
    return _reasons(groups) or tuple(str(v) for v in groups.values())


def _listed_reasons(hits: Sequence[Any]) -> set[tuple[int, str]]:
    """(line, text) of the messages that are part of a longer one on their line: a reason it lists (vLLM's selector
    lists each backend's invalid_reasons), or the first sentence of another release's wording of it, whose whole
    wording the longer match read; and a header that only announces reasons, where another line holds a problem (the
    library's own wording of the header on its line is no other problem)."""
    problems = {h.line for h in hits if h.entry.kind in ("error", "warning") and not h.entry.summary}
    return {(inner.line, inner.text) for outer in hits for inner in hits
            if inner is not outer and inner.line == outer.line and inner.text and _part_of(inner, outer)} | {
        (h.line, h.text) for h in hits if h.entry.summary and problems - {h.line}}


def _part_of(inner: Any, outer: Any) -> bool:
    """Whether a message's match is a piece of a longer one's on its line, not one whose placeholders took its words."""
    if not (inner.entry.indexed and outer.entry.indexed):
        return False
    if any(inner.text in reasons for reasons in _reasons(outer.groups)):
        return True
    if inner.wrapped:  # found over several lines: it has no span on its line
        return len(inner.text) < len(outer.text) and inner.text in outer.text
    (a, b), (c, d) = inner.span, outer.span
    literal = inner.entry.literals[0][0] if inner.entry.literals else ""
    return (inner.entry.library == outer.entry.library and c <= a and b <= d and b - a < d - c and bool(literal)
            and literal in outer.entry.template and not own_positions(outer) < own_positions(inner))

