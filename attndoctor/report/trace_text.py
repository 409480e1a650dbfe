"""The trace report: each call site with what ran, then the diagnosis of its configs (text), or the JSON document."""

from __future__ import annotations

import json
from typing import IO, Any

from ..engine.gate import evaluate_gate
from ..words import plural
from .term import Console, Table, Text
from .text import environment_lines, render_matrix, render_result

PHASE = {"forward": "fwd", "backward": "bwd"}


def render_trace_text(trace: Any, file: IO[str] | None = None) -> None:
    """Write the human trace report."""
    console = Console(file)
    for line in environment_lines(trace.report.environment):
        console.print(line)
    head = Text()
    program = " ".join(trace.argv) or "the traced block"
    sites = {c["site"] for c in trace.calls}
    head.append("trace ", style="bold")
    head.append(f"{program}")
    if trace.exit_code is not None:
        head.append(f" (exit {trace.exit_code})")
    head.append(f" · {plural(len(sites), 'call site')} · {plural(sum(c['count'] for c in trace.calls), 'call')}"
                f" · {plural(len(trace.processes), 'process', 'processes')}")
    console.print(head)
    console.print()
    if trace.calls:
        console.print(_calls_table(trace))
        console.print()
    for line in _call_lines(trace):
        console.print(line)
    if trace.first_nonfinite:
        f = trace.first_nonfinite
        where = f"{f.get('site')}" + (f" ({f['module']})" if f.get("module") else "")
        console.print(Text(f"first non-finite value: {f.get('tensor')} of {f.get('op')} at {where}, step "
                           f"{f.get('step')}, call {f.get('call')}" + (f", rank {f['rank']}" if f.get("rank") else ""),
                           style="bold red"))
    elif any(p.get("numerics") for p in trace.processes):
        console.print(Text("numerics: every attention output and gradient checked was finite", style="green"))
    for note in trace.notes:
        console.print(Text(f"note: {note}", style="yellow"))
    if trace.report.results:
        console.print()
        console.print(Text("diagnosis of the configs seen (every backend on this machine):", style="bold"))
        if len(trace.report.results) == 1:
            render_result(console, trace.report.results[0])
        else:
            render_matrix(console, trace.report)


def _calls_table(trace: Any) -> Table:
    table = Table()
    for name in ("site", "module", "phase", "calls", "ran", "op", "config"):
        table.add_column(name, no_wrap=name != "config")
    results = trace.report.results
    for call in trace.calls:
        label = results[call["result"]].config._replace(name="").label() if call.get("result") is not None else _raw(call)
        extra = _details(call)
        ran = Text(call.get("ran") or "?", style="green" if call.get("matches") is not False else "yellow")
        if "timing_ms" in call:
            extra += f" · {call['timing_ms']['median']:.3f} ms median"
        table.add_row(call["site"], call.get("module") or "–", PHASE.get(call["phase"], call["phase"]),
                      str(call["count"]), ran, _short_op(call.get("op", "")), label + extra)
    return table


def _call_lines(trace: Any) -> list[Text]:
    """What the framework would pick vs what ran, things not modelled, and advisories decided by the data."""
    lines: list[Text] = []
    shown: set[str] = set()
    for call in trace.calls:
        where = call["site"] + (f" {call['module']}" if call.get("module") else "")
        predicted = call.get("predicted")
        if predicted and call.get("matches") is False:
            line = f"{where}: {call['ran']} ran; the rules predict {predicted['framework']} picks " \
                   f"{predicted['backend'] or 'nothing'} ({predicted['status']}) for this config"
            if line not in shown:
                shown.add(line)
                lines.append(Text(line, style="yellow"))
        if call.get("not_modelled") and call["ran"] not in shown:
            shown.add(call["ran"])
            lines.append(Text(f"{call['ran']}: {call['not_modelled']}", style="dim"))
        for adv in call.get("advisories", []):
            line = {"hit": f"{where}: {adv['rule']} HIT ({adv['where']}): {adv['title']}",
                    "not hit": f"{where}: {adv['rule']} not hit by the data seen: {adv['title']}",
                    }.get(adv["state"], f"{where}: {adv['rule']} at risk: {adv['title']} "
                                        f"(at risk if {', '.join(adv['data'])}; --numerics measures "
                                        "low-lse and masked-rows)")
            if line not in shown:
                shown.add(line)
                lines.append(Text(line, style="red" if adv["state"] == "hit" else "yellow"))
        faster = call.get("faster")
        if faster:
            than = f"{faster['speedup']:.2f}x faster than {call['ran']} ({faster['ms']:.3f} vs {faster['ran_ms']:.3f} " \
                   f"ms {faster['metric'].replace('_', '+')})" if faster.get("speedup") else \
                   f"the fastest timed ({faster['ms']:.3f} ms {faster['metric'].replace('_', '+')}; {call['ran']} " \
                   "was not timed)"
            line = f"{where}: {faster['backend']} is {than}: {faster['select']}"
            if line not in shown:
                shown.add(line)
                lines.append(Text(line, style="cyan"))
        numerics = call.get("numerics") or {}
        if numerics.get("nonfinite_calls"):
            first = numerics.get("first_nonfinite") or {}
            lines.append(Text(f"{where}: {numerics['nonfinite_calls']} {PHASE.get(call['phase'])} call(s) gave "
                              f"non-finite values (first: {first.get('tensor')} at step {first.get('step')})",
                              style="red"))
    return lines


def _details(call: dict[str, Any]) -> str:
    d = call.get("details") or {}
    parts = []
    if d.get("gqa"):
        parts.append("gqa" + (" (enable_gqa)" if d.get("enable_gqa") else ""))
    if d.get("mask_kind") not in (None, "none"):
        parts.append(f"mask {d['mask_kind']}" + (" with fully masked rows" if d.get("fully_masked_rows") else ""))
    if d.get("score_mod"):
        parts.append(f"score_mod {d['score_mod']}")
    if d.get("scale") is not None:
        parts.append(f"scale {d['scale']:g}")
    if d.get("device"):
        parts.append(d["device"])
    return (" · " + ", ".join(parts)) if parts else ""


def _raw(call: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in (call.get("config") or {}).items())


def _short_op(op: str) -> str:
    return op.removeprefix("aten.").removesuffix(".default")


def trace_document(trace: Any) -> dict[str, Any]:
    """The JSON report: explain's document (results, environment, gate) with the calls and the run beside it."""
    from .json_format import report_document

    doc = report_document(trace.report, evaluate_gate(trace.report))
    doc["calls"] = [{k: v for k, v in call.items()} for call in trace.calls]
    doc["trace"] = trace.to_dict()
    return doc


def render_trace_json(trace: Any) -> str:
    return json.dumps(trace_document(trace), indent=2, default=str) + "\n"
