"""Attention inside torch.compile: the calls read from the graphs Dynamo hands its backend (config from the graph's
example tensors, site from the node's recorded stack), what ran from the profiler on each graph's first run, and
calls counted on every run of the compiled graph."""

from __future__ import annotations

import functools
import re
import sys
from typing import Any, Callable

from .fields import _flex_fields, _sdpa_fields, hub_library
from .record import backend_of
from .sites import site_of_trace

GRAPH_TARGETS = {
    "scaled_dot_product_attention": ("torch.nn.functional.scaled_dot_product_attention", ""),
    "flex_attention": ("torch.nn.attention.flex_attention.flex_attention", "flex-attention"),
    "torch_attn._varlen_attn": ("torch.nn.attention.varlen.varlen_attn", "sdpa-flash"),
    "flash_attn._flash_attn_forward": ("flash_attn.flash_attn_func", "flash-attn-2"),
    "flash_attn._flash_attn_varlen_forward": ("flash_attn.flash_attn_varlen_func", "flash-attn-2"),
    "flash_attn_3.fwd": ("flash_attn_interface.flash_attn_func", "flash-attn-3"),
    "_vllm_fa2_C.varlen_fwd": ("vllm.vllm_flash_attn.flash_attn_varlen_func", "flash-attn-2"),
    "_vllm_fa2_C.fwd_kvcache": ("vllm.vllm_flash_attn.flash_attn_with_kvcache", "flash-attn-2"),
    "_vllm_fa3_C.fwd": ("vllm.vllm_flash_attn.flash_attn_varlen_func", "flash-attn-3"),
    "vllm.unified_attention": ("vllm unified_attention", "vllm-attention"),
    "vllm.unified_attention_with_output": ("vllm unified_attention_with_output", "vllm-attention"),
}
"""Graph node targets (namespace.op, overload dropped) that are attention, with the entry point they stand for and
what ran where the op itself says it ('' = the profiler decides). Hub kernels' ops (`_flash_attn_<hash>.fwd`,
`varlen_fwd`, `fwd_kvcache`) are recognised by namespace (hub_library)."""
HUB_OPS = ("fwd", "varlen_fwd", "fwd_kvcache")
KERNEL_NAMES = (
    (re.compile(r"pytorch_flash::"), "sdpa-flash"),
    (re.compile(r"fmha_cutlass[FB]"), "sdpa-efficient"),
    (re.compile(r"cudnn.*(sdpa|fmha|flash)", re.I), "sdpa-cudnn"),
    (re.compile(r"flash::FlashAttn\w*Sm90|flash_fwd_sm90|FlashAttnFwdSm90"), "flash-attn-3"),
    (re.compile(r"(?<!pytorch_)flash::flash_fwd"), "flash-attn-2"),
)
"""CUDA kernel names -> backend, for profiles whose aten events do not name the op (the fallback)."""


def compiling() -> bool:
    """Whether Dynamo is tracing this call now (the hooks then step aside and the graph is read instead)."""
    return bool(compiler_check()())


def compiler_check() -> Callable[[], bool]:
    """torch's own is_compiling, found once (the SDPA wrapper holds it: it is asked on every call)."""
    check = _COMPILING.get("check")
    if check is None:
        import torch

        check = _COMPILING["check"] = getattr(getattr(torch, "compiler", None), "is_compiling", None) or bool
    return check


_COMPILING: dict[str, Callable[[], bool]] = {}


def compiled_graphs() -> int:
    """How many graphs torch.compile has made in this process so far (0 when Dynamo was never loaded)."""
    if "torch._dynamo" not in sys.modules:
        return 0
    try:
        from torch._dynamo.utils import counters

        return int(counters["stats"]["unique_graphs"])
    except Exception:  # noqa: BLE001 - a torch without the counter: nothing to report
        return 0


def target_name(target: Any) -> str:
    """A graph node's target as namespace.op (torch._C._nn.scaled_dot_product_attention -> its bare name)."""
    name = getattr(target, "_name", None) or getattr(target, "__name__", "") or str(target)
    if "::" in name:
        name = name.replace("::", ".")
    if getattr(target, "namespace", None) and "." not in name:
        name = f"{target.namespace}.{name}"
    return name.split(".default")[0]


def graph_entry_point(target: Any) -> tuple[str, str] | None:
    """The entry point and the backend (or '' when only a profile can tell) a graph node's target stands for."""
    name = target_name(target)
    if name in GRAPH_TARGETS:
        return GRAPH_TARGETS[name]
    space, _, op = name.rpartition(".")
    if op in HUB_OPS and space.startswith("_flash_attn"):
        return f"Hub kernel {space}.{op}", hub_library(space)
    return None


def module_path(node: Any) -> str:
    """The innermost nn.Module of a node (Dynamo's nn_module_stack), as a named_modules() path."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path = str(list(stack.values())[-1][0])
    path = re.sub(r"\.?_modules\['([^']*)'\]", r".\1", path)
    path = re.sub(r"^L\['self'\]\.?|^L\['[^']*'\]\.?", "", path)
    path = re.sub(r"\[(\d+)\]", r".\1", path)
    return path.strip(".")


def _value(arg: Any) -> Any:
    meta = getattr(arg, "meta", None)
    return meta.get("example_value", meta.get("val")) if isinstance(meta, dict) else arg


def node_fields(node: Any, api: str) -> tuple[dict, dict] | None:
    """The config and details of one attention node, from its example tensors (None where they are missing)."""
    args = [_value(a) for a in node.args]
    kwargs = {k: _value(v) for k, v in node.kwargs.items()}
    if len(args) < 3 or not all(hasattr(t, "shape") for t in args[:3]):
        return None
    q, k, v = args[:3]
    if api.endswith("flex_attention"):
        block_mask = kwargs.get("block_mask")
        return _flex_fields(q, k, v, None, block_mask, kwargs.get("enable_gqa", False))
    if api.endswith("scaled_dot_product_attention"):
        names = ("attn_mask", "dropout_p", "is_causal", "scale")
        given = dict(zip(names, args[3:]))
        given.update({n: kwargs[n] for n in names if n in kwargs})
        return _sdpa_fields(q, k, v, given.get("attn_mask"), float(given.get("dropout_p") or 0.0),
                            bool(given.get("is_causal")), given.get("scale"), bool(kwargs.get("enable_gqa")))
    return {"hdim": int(q.shape[-1]), "heads": int(q.shape[-2]), "kv_heads": int(k.shape[-2]),
            "dtype": str(q.dtype).removeprefix("torch.")}, {"shape_q": list(q.shape)}


def attention_nodes(gm: Any, skip: tuple[str, ...]) -> list[dict[str, Any]]:
    """Every attention call in a Dynamo graph: site, module, entry point, config, details, what ran if known."""
    found = []
    for node in getattr(getattr(gm, "graph", None), "nodes", ()):
        if node.op != "call_function":
            continue
        point = graph_entry_point(node.target)
        if point is None:
            continue
        api, ran = point
        try:
            read = node_fields(node, api)
        except Exception:  # noqa: BLE001 - a graph we cannot read must not break the compile
            read = None
        fields, details = read or ({}, {})
        details = {**details, "compiled": True, "graph_op": target_name(node.target)}
        found.append({"site": site_of_trace(node.meta.get("stack_trace", ""), skip), "module": module_path(node),
                      "api": f"torch.compile graph: {api}", "fields": fields, "details": details, "ran": ran})
    return found


def kernel_backend(name: str) -> str | None:
    """The backend a profiled event stands for: an aten attention op (aten::_scaled_dot_product_cudnn_attention),
    else a CUDA kernel name (KERNEL_NAMES)."""
    if name.startswith("aten::"):
        if name.endswith("_backward"):
            return None
        return backend_of(name.removeprefix("aten::"))
    for pattern, backend in KERNEL_NAMES:
        if pattern.search(name):
            return backend
    return None


def profiled_backends(events: list[tuple[float, str]]) -> tuple[list[tuple[str, str]], list[str]]:
    """The attention ops the profile shows in time order (op, backend), aten events first, and the CUDA kernels' backends
    where no aten event named one."""
    ops = [(f"aten.{n.removeprefix('aten::')}.default", kernel_backend(n) or "") for _, n in sorted(events)
           if n.startswith("aten::_scaled_dot_product_") and kernel_backend(n)]
    kernels = [b for _, n in sorted(events) if not n.startswith("aten::") for b in [kernel_backend(n)] if b]
    return ops, kernels


def profile_call(call: Callable[[], Any]) -> tuple[Any, list[tuple[float, str]] | None]:
    """Run one call under torch.profiler (CPU, and CUDA where there is one); the events' (start, name), or None where
    no profile could be taken (another profiler is running)."""
    import torch

    enabled = getattr(torch.autograd.profiler, "_is_profiler_enabled", False)
    if enabled() if callable(enabled) else enabled:
        return call(), None
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    try:
        with profile(activities=activities) as prof:
            out = call()
            if torch.cuda.is_available():
                torch.cuda.synchronize()
    except RuntimeError:
        return call(), None
    return out, [(float(getattr(e, "time_range", None).start if getattr(e, "time_range", None) else 0), e.name)
                 for e in prof.events()]


class GraphHooks:
    """Read attention calls from the graphs Dynamo compiles and count them on every run; mixed into the Recorder."""

    def _watch_graphs(self, module: Any) -> None:
        cls = getattr(module, "OutputGraph", None)
        if cls is not None and hasattr(cls, "call_user_compiler"):
            self._patch(cls, "call_user_compiler", self._wrap_user_compiler,
                        "torch._dynamo.output_graph.OutputGraph.call_user_compiler")

    def _wrap_user_compiler(self, original: Any, label: str) -> Any:
        recorder = self

        def call_user_compiler(this: Any, gm: Any, *args: Any, **kwargs: Any) -> Any:
            if getattr(recorder.local, "busy", False):
                # compiled inside a hooked entry point (flex_attention compiling itself, transformers' compiled
                # flex): that wrapper records every call already
                return original(this, gm, *args, **kwargs)
            try:
                nodes = attention_nodes(gm, recorder.skip)
            except Exception:  # noqa: BLE001 - never break the user's compile
                nodes = []
            compiled = original(this, gm, *args, **kwargs)
            if not nodes or not callable(compiled) or not recorder.installed:
                return compiled
            return recorder._counting(compiled, nodes)

        return call_user_compiler

    def _counting(self, compiled: Any, nodes: list[dict[str, Any]]) -> Any:
        """The compiled graph, wrapped: its first run profiled to tell what ran, every run counted."""
        recorder = self
        state: dict[str, Any] = {}

        @functools.wraps(compiled)
        def run_graph(*args: Any, **kwargs: Any) -> Any:
            entries = state.get("entries")
            if entries is None or not recorder.installed:
                if not recorder.installed:
                    return compiled(*args, **kwargs)
                caller = recorder._site_and_module()[0]  # the program's line that ran the compiled code
                for node in nodes:
                    node["site"] = node["site"] or caller
                need = any(not n["ran"] for n in nodes)
                out, events = profile_call(lambda: compiled(*args, **kwargs)) if need else (
                    compiled(*args, **kwargs), [])
                entries = state["entries"] = recorder._graph_entries(nodes, events)
                return out
            for entry in entries:
                entry.count += 1
            return compiled(*args, **kwargs)

        return run_graph

    def _graph_entries(self, nodes: list[dict[str, Any]], events: list[tuple[float, str]] | None) -> list[Any]:
        """One aggregate per attention node, with what ran: the node's own op, else the profile's ops in order."""
        ops, kernels = profiled_backends(events or [])
        entries = []
        sdpa_index = 0
        for node in nodes:
            ran, op, note = node["ran"], node["details"]["graph_op"], ""
            if not ran:
                if events is None:
                    ran, note = "unknown", "another profiler was running: what ran inside the compiled graph is unknown"
                elif sdpa_index < len(ops):
                    op, ran = ops[sdpa_index]
                elif kernels:
                    ran = kernels[min(sdpa_index, len(kernels) - 1)]
                else:
                    ran, op = "sdpa-math", "math decomposition (bmm, softmax)"
                if ran == "sdpa-math":
                    note = "no fused attention op ran in the compiled graph: the math fallback (matmul + softmax) ran"
                sdpa_index += 1
            entry = self._entry(node["site"], node["module"], node["api"], node["fields"], node["details"], op, ran,
                                "forward", note)
            entry.intent = entry.intent or {}
            entries.append(entry)
        return entries
