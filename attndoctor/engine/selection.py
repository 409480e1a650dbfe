"""Which backend each framework would run: its priority order walked over the verdicts, and the walk again once
the data conditions a traced program met are known."""

from typing import Any, Mapping, NamedTuple, Sequence

from . import expr
from .results import ConfigResult, Selection, Verdict, status_of
from .rule_model import SelectionEntry
from .states import FIXED, Status, Surface


class Pick(NamedTuple):
    status: str
    backend: str | None
    candidates: tuple[str, ...] = ()
    reason: str = ""


def walk(order: Sequence[str], verdicts: dict[str, Verdict]) -> Pick:
    """The framework's own walk: skip what its dispatch refuses; a runtime-only failure is still selected."""
    maybe: list[str] = []
    for backend_id in order:
        v = verdicts.get(backend_id)
        if v is None or v.status == Status.NOT_INSTALLED:
            continue
        if v.status in (Status.SUPPORTED, Status.KNOWN_BUG):
            if maybe:
                return Pick("depends", None, tuple(maybe + [backend_id]))
            risks = v.advisories
            return Pick("selected", backend_id,
                        reason="; ".join(f"known bug {f.id}: {f.message}" for f in risks))
        if v.status in (Status.DEPENDS, Status.OUTSIDE_RULES):
            maybe.append(backend_id)
            continue
        definite = v.blocking(True)
        if all(f.surfaces != Surface.DISPATCH for f in definite):
            if maybe:
                return Pick("depends", None, tuple(maybe + [backend_id]))
            worst = definite[0]
            status = "wrong-results" if all(f.surfaces == Surface.SILENT for f in definite) else "fails"
            return Pick(status, backend_id, reason=f"{worst.id}: {worst.symptom or worst.message}")
    if maybe:
        return Pick("depends", None, tuple(maybe))
    return Pick("none", None)


def select(selection: Sequence[SelectionEntry], framework: str, verdicts: dict[str, Verdict],
           facts: dict[str, Any]) -> Selection:
    """The framework's pick among its priority orders (the rule base's `selection`, in its order) for these facts."""
    entries = [e for e in selection if e.framework == framework]
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
    if own and all(v.status == Status.NOT_INSTALLED for v in own):
        return Selection(framework, "not-installed", None, entry.order, entry=entry.id,
                         references=entry.references)
    if chosen is not entry:
        picks = [walk(e.order, verdicts) for e in possible]
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
    pick = walk(entry.order, verdicts)
    return Selection(framework, pick.status, pick.backend, entry.order, candidates=pick.candidates,
                     note=entry.note, entry=entry.id, reason=pick.reason, references=entry.references)


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
            keep_fix = status in FIXED
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
            pick = walk(selection.order, by_id)
            selection = selection._replace(status=pick.status, backend=pick.backend, candidates=pick.candidates,
                                           reason=pick.reason)
        selected.append(selection)
    return result._replace(all_verdicts=tuple(verdicts), selected=tuple(selected))
