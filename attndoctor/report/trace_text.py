"""The trace report: each call site with what ran, then the diagnosis of its configs (text), or the JSON document."""

from __future__ import annotations

from typing import IO, Any

from ..engine.gate import evaluate_gate
from ..trace.reader import compact_modules
from ..words import plural
from .term import Console, Table, Text
from .text import environment_lines, render_matrix, render_result
from .formats import dump_json

PHASE = {"forward": "fwd", "backward": "bwd"}


def render_trace_text(trace: Any, file: IO[str] | None = None, **_: Any) -> None:
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
    rows: dict[tuple, list] = {}
    for call in trace.calls:
        label = results[call["result"]].config._replace(name="").label() if call.get("result") is not None else _raw(call)
        extra = _details(call)
        if "timing_ms" in call:
            extra += f" · {call['timing_ms']['median']:.3f} ms median"
        key = (call["site"], call["phase"], call.get("ran"), call.get("op", ""), label + extra, call.get("matches"))
        row = rows.setdefault(key, [[], 0])
        row[0].append(call.get("module") or "")
        row[1] += call["count"]
    for (site, phase, ran, op, config, matches), (modules, count) in rows.items():
        table.add_row(site, compact_modules(modules) or "–", PHASE.get(phase, phase), str(count),
                      Text(ran or "?", style="green" if matches is not False else "yellow"), _short_op(op), config)
    return table


def _call_lines(trace: Any) -> list[Text]:
    """What the framework would pick vs what ran, things not modelled, advisories decided by the data, and what the
    model asked for that the call did not apply: one line per site and finding, its modules and calls counted."""
    grouped: dict[tuple[str, str], list] = {}
    order: list[tuple[str, str]] = []

    def add(call: dict[str, Any], text: str, style: str, site: bool = True) -> None:
        key = (call["site"] if site else "", text)
        if key not in grouped:
            grouped[key] = [[], 0, style]
            order.append(key)
        grouped[key][0].append(call.get("module") or "")
        grouped[key][1] += call["count"]

    for call in trace.calls:
        predicted = call.get("predicted")
        if predicted and call.get("matches") is False:
            add(call, f"{call['ran']} ran; the rules predict {predicted['framework']} picks "
                      f"{predicted['backend'] or 'nothing'} ({predicted['status']}) for this config", "yellow")
        if call.get("not_modelled"):
            add(call, f"{call['ran']}: {call['not_modelled']}", "dim", site=False)
        for found in call.get("intent_findings", []):
            add(call, f"the model asks for {found['text']}: {found['message']}; fix: {found['fix']}", "red")
        for adv in call.get("advisories", []):
            seen = f" ({adv['where']})" if adv.get("where") else ""
            text = {"hit": f"{adv['rule']} HIT{seen}: {adv['title']}",
                    "not hit": f"{adv['rule']} not hit by the data seen{seen}: {adv['title']}",
                    }.get(adv["state"], f"{adv['rule']} at risk: {adv['title']} (at risk if {', '.join(adv['data'])}"
                                        + (f"; seen: {adv['where']})" if adv.get("where") else
                                           "; --numerics measures low-lse and masked-rows)"))
            add(call, text, "red" if adv["state"] == "hit" else "yellow" if adv["state"] == "at risk" else "dim")
        faster = call.get("faster")
        if faster:
            than = f"{faster['speedup']:.2f}x faster than {call['ran']} ({faster['ms']:.3f} vs {faster['ran_ms']:.3f} " \
                   f"ms {faster['metric'].replace('_', '+')})" if faster.get("speedup") else \
                   f"the fastest timed ({faster['ms']:.3f} ms {faster['metric'].replace('_', '+')}; {call['ran']} " \
                   "was not timed)"
            add(call, f"{faster['backend']} is {than}: {faster['select']}", "cyan")
        numerics = call.get("numerics") or {}
        if numerics.get("nonfinite_calls"):
            first = numerics.get("first_nonfinite") or {}
            add(call, f"{numerics['nonfinite_calls']} {PHASE.get(call['phase'])} call(s) gave non-finite values "
                      f"(first: {first.get('tensor')} at step {first.get('step')})", "red")
    lines = []
    for site, text in order:
        modules, count, style = grouped[(site, text)]
        if not site:
            lines.append(Text(text, style=style))
            continue
        where = site + (f" {compact_modules(modules)}" if any(modules) else "")
        if len(modules) > 1:
            where += f" ({plural(len(set(modules)), 'module')}, {plural(count, 'call')})"
        lines.append(Text(f"{where}: {text}", style=style))
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


def render_trace_json(trace: Any, stream: IO[str], **_: Any) -> None:
    dump_json(trace_document(trace), stream)
