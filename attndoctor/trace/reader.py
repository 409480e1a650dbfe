"""Read what the traced processes recorded, turn the calls into configs, and diagnose them with the engine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, NamedTuple, Sequence

from ..config import AttentionConfig, make_config
from ..errors import UsageError
from ..words import plural
from .record import ENGINE_FIELDS, NOT_MODELLED

DATA_DECIDED = ("low-lse", "masked-rows")
"""Data conditions of the advisories that --numerics measures on the real tensors."""
SDPA_APIS = ("torch.nn.functional.scaled_dot_product_attention",)
"""Where a call without an attn_mask tensor and with a top-left is_causal has no fully masked row."""

FIXES_FOR = {
    "softcap": "attn_implementation='eager', 'flex_attention', or 'flash_attention_2' with flash-attn >= 2.6 "
               "(they apply the softcap)",
    "window": "attn_implementation='eager', 'flex_attention' or 'flash_attention_2' (they apply the window), or an "
              "attention_mask that carries the window",
    "sinks": "attn_implementation='eager', 'flex_attention' on a GPU, or a flash kernel that takes sinks "
             "('kernels-community/vllm-flash-attn3')",
}
"""The attn_implementation that applies what the model asks for (transformers' attention functions: the eager and
flex ones apply softcap and s_aux, flash_attention_2 passes softcap and sliding_window to flash-attn)."""


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


def compact_modules(names: list[str]) -> str:
    """Module paths that differ in one number only, as one pattern: model.layers.{0-3}.self_attn."""
    names = list(dict.fromkeys(n for n in names if n))
    if len(names) <= 1:
        return names[0] if names else ""
    split = [n.split(".") for n in names]
    if len({len(p) for p in split}) == 1:
        differ = [i for i in range(len(split[0])) if len({p[i] for p in split}) > 1]
        if len(differ) == 1 and all(p[differ[0]].isdigit() for p in split):
            at = differ[0]
            numbers = sorted(int(p[at]) for p in split)
            span = f"{numbers[0]}-{numbers[-1]}" if numbers == list(range(numbers[0], numbers[-1] + 1)) else \
                ",".join(map(str, numbers))
            return ".".join(split[0][:at] + ["{" + span + "}"] + split[0][at + 1:])
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


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


def _config_name(calls: list[dict[str, Any]]) -> str:
    """The first site that made a config, with its modules, and how many other sites made it too."""
    site = calls[0]["site"]
    modules = compact_modules([c.get("module") or "" for c in calls if c["site"] == site])
    others = len({c["site"] for c in calls}) - 1
    return site + (f" {modules}" if modules else "") + (f" (+{plural(others, 'other site')})" if others else "")


def trace_report(records: Sequence[tuple[dict[str, Any], list[dict[str, Any]]]], environment: Any, *,
                 argv: Sequence[str] = (), exit_code: int | None = None, rules_dir: str | None = None) -> TraceReport:
    """Diagnose the recorded calls' distinct configs on `environment`, and lay each call beside its result."""
    from ..engine.evaluate import settle_data
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
            configs.append(config)
        call["result"] = index[config]
    configs = [config._replace(name=_config_name([c for c in calls if c["result"] == i]))
               for i, config in enumerate(configs)]
    report = diagnose_many(configs, environment, command="trace", rules_dir=rules_dir)
    as_evaluated = list(report.results)
    for index, result in enumerate(as_evaluated):
        report.results[index] = settle_data(result, settled_facts(c for c in calls if c["result"] == index))
    for call in calls:
        if call["result"] is not None:
            _judge(call, report.results[call["result"]], as_evaluated[call["result"]])
    notes = _notes(records, calls)
    first = None
    for header, _ in records:
        found = header.get("first_nonfinite")
        if found and first is None:
            first = {**found, "rank": header.get("rank")}
    return TraceReport(calls=calls, report=report, processes=[h for h, _ in records], notes=notes,
                       argv=list(argv), exit_code=exit_code, first_nonfinite=first)


def data_facts(call: dict[str, Any]) -> dict[str, tuple[bool | None, str]]:
    """The advisories' data conditions this call's record settles: (met, what was seen), met None where the record
    says something but does not decide it."""
    config = call.get("config") or {}
    details = call.get("details") or {}
    numerics = call.get("numerics") or {}
    out: dict[str, tuple[bool | None, str]] = {}
    kind = details.get("mask_kind")
    dtype = config.get("dtype")
    if kind == "none" or kind == "bool" or str(kind).startswith("float bias ("):
        fp32 = kind == "float bias (fp32)"
        out["fp32-mask"] = (fp32 and dtype in ("bf16", "fp16"),
                            "no attn_mask tensor" if kind == "none" else f"attn_mask {kind} with {dtype} q, k, v")
    if "masked_rows" in numerics:
        out["masked-rows"] = (bool(numerics["masked_rows"]), "fully masked rows" if numerics["masked_rows"] else
                              "no fully masked row in any call's mask (--numerics)")
    elif details.get("fully_masked_rows"):
        out["masked-rows"] = (True, "fully masked rows in the mask")
    elif kind == "none" and call.get("api") in SDPA_APIS and config.get("mask") in ("none", "causal"):
        out["masked-rows"] = (False, "no attn_mask tensor, and is_causal (top-left) leaves every query row key 0")
    elif details.get("fully_masked_rows") is False:
        out["masked-rows"] = (None, "the first mask of this call has no fully masked row; --numerics checks every "
                                    "call's")
    if "lse_min_per_head" in numerics:
        low = numerics.get("low_lse_heads") or []
        out["low-lse"] = (bool(low), (f"head {low[0]}" if len(low) == 1 else f"heads {', '.join(map(str, low))}")
                          if low else f"minimum logsumexp {min(numerics['lse_min_per_head']):.1f}")
    if details.get("contiguous") is True:
        out["strided-inputs"] = (False, "q, k and v are contiguous")
    elif details.get("contiguous") is False:
        which = [n for n in ("q", "k", "v") if details.get(f"contiguous_{n}") is False]
        out["strided-inputs"] = (None, f"{', '.join(which) or 'q, k or v'} not contiguous (strides "
                                       + "; ".join(f"{n} {details.get(f'strides_{n}')}" for n in which) + ")")
    if config.get("train") is True:
        out["mask-grad"] = (False, "q, k or v requires grad")
    lengths = details.get("block_mask_seq_lengths")
    if lengths and config.get("seqlen_q") is not None and config.get("seqlen_kv") is not None:
        longer = lengths[0] > config["seqlen_q"] or lengths[1] > config["seqlen_kv"]
        out["blockmask-length"] = (longer, f"BlockMask built for {lengths[0]}x{lengths[1]}, call "
                                           f"{config['seqlen_q']}x{config['seqlen_kv']}")
    return out


def _judge(call: dict[str, Any], result: Any, as_evaluated: Any) -> None:
    """What the framework would pick vs what ran, the advisories on what ran decided by the recorded data where it
    settles them, and what the model asked for that the call did not apply."""
    from ..engine.evaluate import settle_data

    ran = call.get("ran")
    intent = intent_findings(call)
    if intent:
        call["intent_findings"] = intent
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
    facts = data_facts(call)
    own = {name: (met, seen) for name, (met, seen) in facts.items() if met is not None}
    call["verdict"] = settle_data(as_evaluated, own).verdict(ran).status
    advisories = []
    for finding in as_evaluated.verdict(ran).findings:
        if not finding.at_risk:
            continue
        known = [(d, facts[d]) for d in finding.data if d in facts]
        state = "at risk"
        if any(met is False for _, (met, _) in known):
            state = "not hit"
            known = [(d, f) for d, f in known if f[0] is False]
        elif known and len(known) == len(finding.data) and all(met for _, (met, _) in known):
            state = "hit"
        advisories.append({"rule": finding.id, "title": finding.title, "data": list(finding.data), "state": state,
                           "where": "; ".join(seen for _, (_, seen) in known)})
    if advisories:
        call["advisories"] = advisories


def settled_facts(calls: Iterable[dict[str, Any]]) -> dict[str, tuple[bool, str]]:
    """The data conditions every one of these calls (one config's) settles: met where some call meets it (named by
    its site), not met where every call settles it as not met."""
    per: dict[str, list[tuple[bool | None, str, str]]] = {}
    calls = list(calls)
    for call in calls:
        for name, (met, seen) in data_facts(call).items():
            per.setdefault(name, []).append((met, seen, call["site"]))
    out: dict[str, tuple[bool, str]] = {}
    for name, seen in per.items():
        hit = next((s for s in seen if s[0] is True), None)
        if hit is not None:
            out[name] = (True, f"{hit[1]} at {hit[2]}")
        elif len(seen) == len(calls) and all(s[0] is False for s in seen):
            out[name] = (False, "; ".join(dict.fromkeys(s[1] for s in seen)))
    return out


def intent_findings(call: dict[str, Any]) -> list[dict[str, Any]]:
    """What the model's attention asks for (softcap, a sliding window, sinks) that the kernel that ran did not apply:
    silently different attention from the one the model was trained with."""
    intent = call.get("intent") or {}
    if not intent or call.get("phase") != "forward":
        return []
    ran = str(call.get("ran") or "")
    config = call.get("config") or {}
    read = intent.get("read_from") or {}
    dropped: list[tuple[str, str]] = []
    sdpa = ran.startswith("sdpa-")
    flash = ran.startswith("flash-attn")
    if "softcap" in intent and (sdpa or (flash and not config.get("softcap"))):
        dropped.append(("softcap", f"softcap {intent['softcap']:g} ({read.get('softcap')}): {ran} "
                                   + ("takes no softcap" if sdpa else "ran with softcap 0")))
    window = intent.get("window")
    if window and config.get("seqlen_kv") is not None and config["seqlen_kv"] > window:
        if sdpa and (call.get("details") or {}).get("mask_kind") == "none":
            dropped.append(("window", f"sliding window {window} ({read.get('window')}): {ran} ran with no "
                                      f"attn_mask over {config['seqlen_kv']} keys, so every key was attended"))
        elif flash and list(config.get("window") or [-1, -1]) == [-1, -1]:
            dropped.append(("window", f"sliding window {window} ({read.get('window')}): {ran} ran with "
                                      f"window_size (-1, -1) over {config['seqlen_kv']} keys"))
    if intent.get("sinks") and sdpa:
        dropped.append(("sinks", f"attention sinks ({read.get('sinks')}): {ran} takes no sinks"))
    return [{"asks": what, "text": text, "effect": "wrong-results",
             "message": "the model's attention differs from the one it was trained with (no error)",
             "fix": FIXES_FOR[what]} for what, text in dropped]


def attach_bench(trace: TraceReport, bench: Any) -> None:
    """Beside each call, the backend `bench` measured fastest for its config when that is not what ran, and how
    much faster than what ran (when what ran was timed too)."""
    from ..runs.bench import metric_ms

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
    inside = sum(int(h.get("compiled_attention") or 0) for h, _ in records)
    if compiled and inside:
        notes.append(f"torch.compile made {compiled} graph(s): the {inside} attention call(s) inside them were read "
                     "from the graphs (config from the graph's example tensors, what ran from a profile of each "
                     "graph's first run) and counted on every run; their backward, inside the compiled graph, is "
                     "not counted")
    elif compiled:
        notes.append(f"torch.compile made {compiled} graph(s) while the trace ran, with no attention call the trace "
                     "recognises inside them (graphs compiled before the trace started are not read); the calls "
                     "listed ran outside compiled code. Run once with TORCH_COMPILE_DISABLE=1 to see every config")
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
