"""The fleet report (`attndoctor fleet`) as text or JSON; it formats the document of attndoctor.fleet, no more."""

from __future__ import annotations

from typing import IO, Any, Mapping

from .._version import __version__
from ..environment import ABSENT
from ..fleet.ranks import FINGERPRINT_VERSIONS, compact_ranks
from ..words import plural
from .term import Console, Text
from .formats import dump_json

SHORT = {"driver": "driver", "cuda": "CUDA", "torch": "torch", "cudnn": "cuDNN", "cudnn_frontend": "cudnn-frontend",
         "flash_attn": "flash-attn", "flash_attn_3": "flash-attn-3", "flash_attn_4": "flash-attn-4",
         "cutlass_dsl": "cutlass-dsl", "te": "TE"}


def describe_fingerprint(fp: Mapping[str, Any]) -> str:
    """'H100 sm90 · driver 550.54 · CUDA 12.6 · torch 2.6.0 · cuDNN 9.7.0 · TE 2.5 · NVTE_FUSED_ATTN=0'."""
    if not fp:
        return "environment unknown"
    gpu = fp.get("gpu") or "GPU unknown"
    if gpu == "none":
        gpu = "no GPU"
    parts = [f"{gpu} sm{fp['sm']}" if fp.get("sm") else gpu]
    if fp.get("cuda_available") is False and fp.get("gpu") not in (None, "none"):
        parts.append("torch does NOT see CUDA")
    for key in FINGERPRINT_VERSIONS:
        value = fp.get(key)
        if value is None:
            if not (key == "driver" and gpu == "no GPU"):
                parts.append(f"{SHORT[key]} ?")
        elif value != ABSENT:
            parts.append(f"{SHORT[key]} {value}")
    variables = fp.get("env") or {}
    parts.append(" ".join(f"{k}={v}" for k, v in variables.items()) if variables else "no NVTE_/CUDNN_ variables")
    return " · ".join(parts)


def _value(v: Any, field: str) -> str:
    if v is None:
        return "unset" if field.startswith("env.") else "unknown"
    if v == ABSENT:
        return "not installed"
    return str(v)


def render_fleet_text(doc: Mapping[str, Any], stream: IO[str], *, detailed: bool = False, **_: Any) -> None:
    console = Console(stream)
    _head(console, doc)
    _groups(console, doc)
    _mismatches(console, doc, detailed)
    _context_parallel(console, doc)
    if doc["world"].get("missing"):
        console.print()
        console.print(Text(f"Ranks that did not answer within {doc['world'].get('rank_timeout'):g} s: "
                           f"{compact_ranks(doc['world']['missing'])}", style="bold red"))
    if detailed:
        _ranks(console, doc)
    _gate(console, doc)


def _head(console: Console, doc: Mapping[str, Any]) -> None:
    world = doc["world"]
    size, answered = world["size"], world["answered"]
    hosts = world.get("hosts") or []
    head = Text()
    head.append(f"attndoctor {__version__}", style="bold")
    head.append(f" · fleet · {plural(size, 'rank')} on {plural(len(hosts), 'host')}")
    launcher = world.get("launcher")
    head.append(f" ({launcher})" if launcher != "single" else "")
    if world.get("seconds") is not None:
        head.append(f" · {answered}/{size} answered in {world['seconds']:.1f} s")
    console.print(head)
    if launcher == "single":
        console.print("Not started under torchrun or srun: a world of 1 rank (this process). Start it as "
                      "`torchrun --nproc-per-node N --no-python attndoctor fleet` or `srun attndoctor fleet` to "
                      "check every rank.", style="yellow")
    names = list(dict.fromkeys(label.split(": ")[0] if ": " in label else label for label in doc["configs"]))
    console.print(f"{plural(len(doc['configs']), 'config')}: {', '.join(names[:6])}"
                  + (" …" if len(names) > 6 else ""))


def _groups(console: Console, doc: Mapping[str, Any]) -> None:
    console.print()
    title = "Ranks grouped by identical fingerprint (GPU, driver, CUDA, torch, cuDNN, flash-attn, TE, NVTE_*/CUDNN_*)"
    console.print(Text(title, style="bold"))
    for g in doc["groups"]:
        line = Text(f"  {g['id']}  ")
        line.append(f"rank{'s' if len(g['ranks']) > 1 else ''} {compact_ranks(g['ranks'])}", style="bold")
        line.append(f"  on {', '.join(g['hosts'][:3])}{' …' if len(g['hosts']) > 3 else ''}\n     ")
        line.append(describe_fingerprint(g["fingerprint"]))
        console.print(line)
    if doc["differences"]:
        console.print()
        console.print(Text("What differs between the groups", style="bold"))
        width = max(len(d["label"]) for d in doc["differences"])
        for d in doc["differences"]:
            values = "   ".join(f"{gid}: {_value(v, d['field'])}" for gid, v in d["values"].items())
            console.print(f"  {d['label']:<{width}}   {values}")
    errors = [r for r in doc["ranks"] if r.get("answered") and r.get("error")]
    for r in errors:
        console.print(Text(f"  rank {r['rank']} ({r.get('host')}) could not evaluate: {r['error']}", style="red"))


def _mismatches(console: Console, doc: Mapping[str, Any], detailed: bool) -> None:
    rank_group = {r["rank"]: r.get("group") for r in doc["ranks"] if r.get("answered")}

    def who(ranks: list[int]) -> str:
        ids = sorted({rank_group.get(r) or "?" for r in ranks})
        return f"ranks {compact_ranks(ranks)} ({', '.join(ids)})"

    mismatches = doc["mismatches"]
    if mismatches.get("configs"):
        console.print()
        console.print(Text("The ranks evaluated different configs", style="bold red"))
        for m in mismatches["configs"]:
            console.print(f"  {who(m['ranks'])}: {', '.join(m['labels']) or 'none'}")
    if mismatches.get("selected"):
        console.print()
        console.print(Text("Selected backends that differ between ranks (the job would run different kernels)",
                           style="bold red"))
        for m in mismatches["selected"]:
            console.print(f"  {m['config']}")
            picks = "; ".join(f"{v['backend'] or 'nothing'}"
                              + ("" if v["status"] == "selected" else f" ({v['status']})")
                              + f" on {who(v['ranks'])}" for v in m["values"])
            console.print(f"    {m['framework']}: {picks}")
    elif doc["world"]["answered"] > 1:
        console.print()
        console.print(Text("Every rank selects the same backends for every config.", style="green"))
    if mismatches.get("verdicts"):
        shown = mismatches["verdicts"] if detailed else mismatches["verdicts"][:12]
        console.print(Text(f"Verdicts that differ between ranks ({len(mismatches['verdicts'])})", style="bold"))
        for m in shown:
            statuses = "; ".join(f"{v['status']} on {who(v['ranks'])}" for v in m["values"])
            console.print(f"  {m['config']} · {m['backend']}: {statuses}")
        if len(shown) < len(mismatches["verdicts"]):
            console.print(f"  … {len(mismatches['verdicts']) - len(shown)} more (--details or --format json)")


def _context_parallel(console: Console, doc: Mapping[str, Any]) -> None:
    if not doc["context_parallel"]:
        return
    console.print()
    console.print(Text(f"Context parallel in a world of {doc['world']['size']}", style="bold"))
    for f in doc["context_parallel"]:
        mark, style = {True: ("✓", "green"), False: ("✗", "red"), None: ("?", "yellow")}[f["fits"]]
        line = Text(f"  {mark} ", style=style)
        line.append(f"{f['config']}: ")
        if f["fits"]:
            line.append(f"fits: cp={f['cp']} × {f['other_parallel']} other-parallel; every sequence cut into "
                        f"{2 * f['cp']} chunks")
        elif f["fits"] is False:
            line.append("; ".join(f["problems"]))
        else:
            line.append(f"depends on {', '.join(f['unknown'])}, not given")
        console.print(line)


def _ranks(console: Console, doc: Mapping[str, Any]) -> None:
    console.print()
    console.print(Text("Ranks", style="bold"))
    for r in doc["ranks"]:
        if not r.get("answered"):
            console.print(f"  {r['rank']:>5}  did not answer")
            continue
        device = r.get("device") or {}
        console.print(f"  {r['rank']:>5}  {r.get('group')}  {r.get('host')}  local {r.get('local_rank')}  "
                      f"GPU {device.get('index', '-')}  {r.get('seconds')} s  {r.get('environment_source')}")


def _gate(console: Console, doc: Mapping[str, Any]) -> None:
    gate, answered = doc["gate"], doc["world"]["answered"]
    console.print()
    if gate["passed"]:
        agree = f"{answered} ranks agree on the backends they select" if answered > 1 else "1 rank, nothing to compare"
        console.print(Text(f"PASS: {agree}" + ("" if not doc["context_parallel"] else "; every context-parallel "
                                                 "config fits"), style="bold green"))
    else:
        console.print(Text(f"FAIL (exit {gate['exit_code']})", style="bold red"))
        for reason in gate["reasons"][:20]:
            console.print(f"  {reason}")
        if len(gate["reasons"]) > 20:
            console.print(f"  … {len(gate['reasons']) - 20} more")


def render_fleet_json(doc: Mapping[str, Any], stream: IO[str], **_: Any) -> None:
    dump_json(doc, stream)
