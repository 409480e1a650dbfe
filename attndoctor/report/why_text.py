"""The text and JSON of `why`: what the text says, the likely cause, the fix, and what would settle it."""

from __future__ import annotations

from typing import IO, Any

from .._version import __version__
from ..engine.install import environment_dict
from ..environment import REPORT_SCHEMA_VERSION
from .text import environment_lines
from .term import Console, Text
from .formats import dump_json

TEXT_SHOWN = 300
"""Characters of a matched line kept in JSON (a TE config dump runs to kilobytes)."""
SHOWN = 5
"""Candidates listed in the text report (JSON has every one)."""


def why_document(answer: Any) -> dict[str, Any]:
    """The answer as plain data (schema: attndoctor/schema/why-v1.json)."""
    reading = answer.reading
    cause = answer.cause
    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "tool": {"name": "attndoctor", "version": __version__},
        "command": "why",
        "understood": {
            "lines": len(reading.lines),
            "messages": [{"id": h.entry.id, "library": h.entry.library, "kind": h.entry.kind, "line": h.line,
                          "text": h.text[:TEXT_SHOWN], "meaning": h.entry.meaning,
                          **({"resembles": h.resembles} if h.resembles else {})}
                         for h in reading.hits if h.entry.kind != "fact"],
            "facts": {f.field: {"value": f.value, "line": f.line, "from": f.entry} for f in reading.facts.values()},
            "backends": list(reading.backends),
            "env_vars": dict(reading.env_vars),
            "dropped": list(answer.dropped),
        },
        "config": answer.config.to_dict(),
        "environment": environment_dict(answer.environment),
        "verdict": answer.verdict,
        "cause": cause.to_dict() if cause else None,
        "alternatives": [c.id for c in answer.alternatives],
        "settle": list(answer.settle),
        "candidates": [c.to_dict() for c in answer.candidates],
        "transformer_engine": answer.te,
        "result": answer.result.to_dict(),
        "rules": {"count": answer.rule_count},
    }


def render_why_json(answer: Any, stream: IO[str], **_: Any) -> None:
    dump_json(why_document(answer), stream)


def render_why_text(answer: Any, stream: IO[str], **_: Any) -> None:
    """The answer for a person: understood, cause, fix, settle, other candidates, TransformerEngine's choice."""
    console = Console(stream)
    for line in environment_lines(answer.environment):
        console.print(line)
    console.print()
    reading = answer.reading
    messages = [h for h in reading.hits if h.entry.kind != "fact"]
    console.print(Text("understood", style="bold"))
    if not messages and not reading.facts:
        console.print("  nothing: no known message and no facts (versions, GPU, shapes) in the text")
    seen: set[str] = set()
    for hit in messages:
        if hit.entry.id in seen:
            continue
        seen.add(hit.entry.id)
        console.print(Text(f"  line {hit.line}: " + ("resembles " if hit.resembles else "")).append(
            hit.entry.library, style="bold").append(f" {hit.entry.kind}: {hit.entry.meaning}"))
    if reading.facts:
        facts = ", ".join(f"{f.field} {f.value}" for f in reading.facts.values())
        console.print(f"  facts: {facts}")
    if reading.env_vars:
        console.print("  variables: " + ", ".join(f"{k}={v}" for k, v in reading.env_vars.items()))
    for note in answer.dropped:
        console.print(Text(f"  not used: {note}", style="dim"))
    console.print(Text(f"  config: {answer.config.label()}", style="dim"))
    console.print()
    cause = answer.cause
    if cause is None:
        console.print(Text("no rule or known message explains this text", style="bold yellow"))
        if answer.candidates:
            best = answer.candidates[0]
            console.print(f"  closest: {best.id} (score {best.score}): {best.title}")
        console.print("  give the whole error (--log FILE), or the versions and shape as flags (--torch --cudnn "
                      "--gpu --hdim ...)")
    else:
        if answer.verdict == "ambiguous":
            console.print(Text("ambiguous: ", style="bold yellow").append(
                "the text fits causes of different kinds, and nothing in it tells them apart"))
            for other in (cause,) + answer.alternatives:
                console.print(f"  {other.cause}  [{other.id}]")
            if answer.settle:
                console.print(Text("to tell them apart, give: ", style="bold").append(" ".join(answer.settle)))
            console.print(Text("the best-ranked one: ", style="bold").append(f"[{cause.id}]"))
        else:
            console.print(Text("likely cause: ", style="bold").append(f"{cause.cause}  [{cause.id}]"))
        if cause.fixes:
            console.print(Text("fix: ", style="bold").append(cause.fixes[0]))
            for more in cause.fixes[1:]:
                console.print(f"  or {more}" if not more.startswith(("workaround", "fixed in")) else f"  {more}")
        if answer.settle and answer.verdict != "ambiguous":
            console.print(Text("to settle it, give: ", style="bold").append(" ".join(answer.settle)))
        if answer.alternatives and answer.verdict != "ambiguous":
            console.print("  as likely: " + ", ".join(c.id for c in answer.alternatives))
    te = answer.te
    if te:
        console.print()
        console.print(Text("TransformerEngine", style="bold"))
        if te.get("log_selected"):
            verb = ("as the rules predict" if te.get("agrees") else
                    f"the rules predict {te.get('predicted') or 'none'}" if te.get("agrees") is False else "")
            console.print(f"  the log selects {te['log_selected']}" + (f" ({verb})" if verb else ""))
        elif te.get("predicted"):
            console.print(f"  the rules predict {te['predicted']} ({te.get('predicted_status')})")
        for backend, info in te.get("backends", {}).items():
            said = "; ".join(info["log_disabled"]) or (
                "available" if info["log_available"] else "not available" if info["log_available"] is False else "")
            ruled = f"{info['status']}" + (f": {info['why']} [{', '.join(info['rules'])}]" if info["rules"] else "")
            console.print(f"  {backend}: log: {said or '—'} · rules: {ruled}")
    rest = [c for c in answer.candidates if c is not cause][:SHOWN - 1]
    if rest:
        console.print()
        console.print(Text("also considered", style="bold"))
        for c in rest:
            console.print(Text(f"  {c.score:>5}  {c.id}: ", style="dim").append(
                "; ".join(c.reasons), style="dim"))
