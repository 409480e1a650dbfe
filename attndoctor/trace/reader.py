"""Read what the traced processes recorded, turn the calls into configs, and diagnose them with the engine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, NamedTuple, Sequence

from ..config import AttentionConfig, make_config
from ..errors import UsageError
from .record import ENGINE_FIELDS, NOT_MODELLED

DATA_DECIDED = ("low-lse", "masked-rows")
"""Data conditions of the advisories that --numerics measures on the real tensors."""


class TraceReport(NamedTuple):
    """The calls (merged over processes), the engine's report on their distinct configs, and what the run was."""

    calls: list[dict[str, Any]]
    report: Any
    processes: list[dict[str, Any]]
    notes: list[str]
    argv: list[str]
    exit_code: int | None
    first_nonfinite: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        """The trace part of the JSON report (the engine's results come beside it)."""
        out: dict[str, Any] = {"program": list(self.argv), "exit_code": self.exit_code,
                               "processes": len(self.processes), "notes": list(self.notes)}
        if self.first_nonfinite:
            out["first_nonfinite"] = self.first_nonfinite
        return out


def read_records(directory: str | Path) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """(header, calls) of every process record in the folder, ordered by rank then pid."""
    out = []
    for path in sorted(Path(directory).glob("*.jsonl")):
        header: dict[str, Any] = {}
        calls = []
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    continue
                item = json.loads(line)
                if item.get("kind") == "process":
                    header = item
                elif item.get("kind") == "call":
                    calls.append(item)
        out.append((header, calls))
    out.sort(key=lambda hc: (int(hc[0].get("rank") or 0) if str(hc[0].get("rank") or "0").isdigit() else 0,
                             int(hc[0].get("pid") or 0)))
    return out


def merge(records: Sequence[tuple[dict[str, Any], list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    """One entry per (site, module, api, phase, op, ran, config): counts summed over processes, ranks listed."""
    merged: dict[str, dict[str, Any]] = {}
    for header, calls in records:
        rank = header.get("rank")
        for call in calls:
            key = json.dumps([call.get(k) for k in ("site", "module", "api", "phase", "op", "ran", "config")],
                             sort_keys=True, default=str)
            into = merged.get(key)
            if into is None:
                into = merged[key] = {k: v for k, v in call.items() if k != "kind"}
                into["ranks"] = []
                into["count"] = 0
            into["count"] += int(call.get("count", 0))
            if rank is not None and rank not in into["ranks"]:
                into["ranks"].append(rank)
            if "numerics" in call and into is not call:
                _merge_numerics(into, call["numerics"])
    return list(merged.values())


def _merge_numerics(into: dict[str, Any], numerics: dict[str, Any]) -> None:
    mine = into.setdefault("numerics", {})
    if mine is numerics:
        return
    mine["nonfinite_calls"] = mine.get("nonfinite_calls", 0) + numerics.get("nonfinite_calls", 0)
    if "first_nonfinite" not in mine and "first_nonfinite" in numerics:
        mine["first_nonfinite"] = numerics["first_nonfinite"]
    if "lse_min_per_head" in numerics:
        old = mine.get("lse_min_per_head")
        new = numerics["lse_min_per_head"]
        mine["lse_min_per_head"] = new if old is None else [min(a, b) for a, b in zip(old, new)]
        mine["low_lse_heads"] = sorted(set(mine.get("low_lse_heads", [])) | set(numerics.get("low_lse_heads", [])))
    if "masked_rows" in numerics:
        mine["masked_rows"] = bool(mine.get("masked_rows")) or bool(numerics["masked_rows"])


def call_config(call: dict[str, Any]) -> AttentionConfig | None:
    """The call's config in the tool's vocabulary (None when a field is outside what a config can state)."""
    fields = {k: v for k, v in (call.get("config") or {}).items() if k in ENGINE_FIELDS}
    if fields.get("dtype") not in (None, "bf16", "fp16", "fp32", "fp8"):
        return None
    try:
        return make_config(fields)
    except UsageError:
        return None


def record_lines(calls: Iterable[dict[str, Any]]) -> list[str]:
    """The distinct configs of the forward calls as JSON lines that `explain/verify --config-file` read."""
    seen: dict[AttentionConfig, None] = {}
    lines = []
    for call in calls:
        if call.get("phase") != "forward":
            continue
        config = call_config(call)
        if config is None or config in seen:
            continue
        seen[config] = None
        name = call["site"] + (f" {call['module']}" if call.get("module") else "")
        lines.append(json.dumps({**config._replace(name=name).to_dict()}))
    return lines


def trace_report(records: Sequence[tuple[dict[str, Any], list[dict[str, Any]]]], environment: Any, *,
                 argv: Sequence[str] = (), exit_code: int | None = None, rules_dir: str | None = None) -> TraceReport:
    """Diagnose the recorded calls' distinct configs on `environment`, and lay each call beside its result."""
    from ..services import diagnose_many

    calls = merge(records)
    configs: list[AttentionConfig] = []
    index: dict[AttentionConfig, int] = {}
    for call in calls:
        config = call_config(call)
        if config is None:
            call["result"] = None
            continue
        if config not in index:
            index[config] = len(configs)
            name = call["site"] + (f" {call['module']}" if call.get("module") else "")
            configs.append(config._replace(name=name))
        call["result"] = index[config]
    report = diagnose_many(configs, environment, command="trace", rules_dir=rules_dir)
    for call in calls:
        if call["result"] is not None:
            _judge(call, report.results[call["result"]])
    notes = _notes(records, calls)
    first = None
    for header, _ in records:
        found = header.get("first_nonfinite")
        if found and first is None:
            first = {**found, "rank": header.get("rank")}
    return TraceReport(calls=calls, report=report, processes=[h for h, _ in records], notes=notes,
                       argv=list(argv), exit_code=exit_code, first_nonfinite=first)


def _judge(call: dict[str, Any], result: Any) -> None:
    """What the framework would pick vs what ran, and the advisories on what ran, decided by the data where
    --numerics measured it."""
    ran = call.get("ran")
    framework = {"sdpa": "pytorch", "te": "transformer-engine"}.get(str(ran).split("-")[0])
    ids = {v.backend.id for v in result.all_verdicts}
    if framework:
        picked = next((s for s in result.selected if s.framework == framework), None)
        if picked is not None and call.get("phase") == "forward":
            call["predicted"] = {"framework": framework, "backend": picked.backend, "status": picked.status}
            call["matches"] = picked.backend == ran if ran in ids else None
    if ran not in ids:
        if ran in NOT_MODELLED:
            call["not_modelled"] = NOT_MODELLED[ran]
        elif ran == "flex-attention":
            call["not_modelled"] = "the rules do not model flex-attention yet"
        return
    verdict = result.verdict(ran)
    call["verdict"] = verdict.status
    numerics = call.get("numerics") or {}
    advisories = []
    for finding in verdict.findings:
        if not finding.at_risk:
            continue
        state, where = "at risk", ""
        decided = [d for d in finding.data if d in DATA_DECIDED]
        if numerics and decided and len(decided) == len(finding.data):
            hits = []
            for condition in decided:
                if condition == "low-lse" and numerics.get("low_lse_heads"):
                    heads = ", ".join(str(h) for h in numerics["low_lse_heads"])
                    hits.append(f"head {heads}" if len(numerics["low_lse_heads"]) == 1 else f"heads {heads}")
                elif condition == "masked-rows" and (numerics.get("masked_rows") or
                                                     (call.get("details") or {}).get("fully_masked_rows")):
                    hits.append("fully masked rows")
                elif condition == "low-lse" and "lse_min_per_head" not in numerics:
                    hits = []
                    break
            if len(hits) == len(decided):
                state, where = "hit", ", ".join(hits)
            elif len(hits) == 0 and all(c != "low-lse" or "lse_min_per_head" in numerics for c in decided):
                state = "not hit"
        advisories.append({"rule": finding.id, "title": finding.title, "data": list(finding.data), "state": state,
                           "where": where})
    if advisories:
        call["advisories"] = advisories


def attach_bench(trace: TraceReport, bench: Any) -> None:
    """Beside each call, the backend `bench` measured fastest for its config when that is not what ran, and how
    much faster than what ran (when what ran was timed too)."""
    from ..bench import metric_ms

    fastest: dict[int, bool] = {}
    for call in trace.calls:
        index = call.get("result")
        if index is None or index >= len(bench.results) or call["phase"] != "forward":
            continue
        measured = bench.results[index]
        rec = measured.recommendation
        if rec.backend is None:
            continue
        fastest[index] = fastest.get(index, True) and (rec.backend == call.get("ran") or call.get("ran") in rec.tie)
        if fastest[index]:
            continue
        ran_ms = next((metric_ms(m, measured.metric) for m in measured.measurements
                       if m.get("backend") == call.get("ran")), None)
        call["faster"] = {"backend": rec.backend, "ms": rec.ms, "ran_ms": ran_ms,
                          "speedup": round(ran_ms / rec.ms, 2) if ran_ms and rec.ms else None,
                          "metric": measured.metric, "select": rec.select}
    timed = len(fastest)
    trace.notes.append(f"--bench timed {timed} distinct config(s) on {bench.gpu.get('name') or 'this GPU'}: what ran "
                       f"was the fastest (or within the noise of it) for {sum(fastest.values())}"
                       + (f"; a faster backend is named beside the other {timed - sum(fastest.values())}"
                          if timed > sum(fastest.values()) else ""))


def _notes(records: Sequence[tuple[dict[str, Any], list[dict[str, Any]]]], calls: list[dict[str, Any]]) -> list[str]:
    notes: list[str] = []
    for header, _ in records:
        for note in header.get("notes") or []:
            if note not in notes and note != "this process never imported torch":
                notes.append(note)
    compiled = sum(int(h.get("compiled_graphs") or 0) for h, _ in records)
    if compiled:
        notes.append(f"torch.compile made {compiled} graph(s): attention inside compiled code is not seen (the trace "
                     "hooks step aside while Dynamo traces, and a dispatch mode would make Dynamo fall back to "
                     "eager); the calls listed ran outside compiled code. Run once with TORCH_COMPILE_DISABLE=1 to "
                     "see every config")
    kernels = [c for c in calls if c.get("ran") != "eager"]
    eager = [c for c in calls if c.get("ran") == "eager"]
    if eager and not kernels:
        notes.append("no attention kernel ran: transformers' eager attention (matmul + softmax in Python) did the "
                     "attention; attn_implementation='sdpa' or 'flash_attention_2' would use a kernel")
    if not calls:
        torch_seen = any(h.get("torch") for h, _ in records)
        notes.append("no attention call was seen" + ("" if torch_seen else " (no traced process imported torch)") +
                     ": attention written as matmul + softmax by hand, compiled code, or a library the trace does not "
                     "hook shows no call")
    return notes
