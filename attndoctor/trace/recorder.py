"""Runs inside the traced process: hooks on the attention entry points record every call, aggregated in memory.

Imports torch (the program already has) and nothing of the engine. Python-level hooks wrap the entry points at module
level and are restored on `uninstall`: torch.nn.functional.scaled_dot_product_attention (inside it a dispatch mode
sees which aten op ran), FlexAttention, flash-attn 2/3/4 functions, TransformerEngine DotProductAttention.forward and
transformers' flex and eager attention functions. Backward is seen through hooks on the output's autograd node.
No dispatch mode stays on outside the SDPA call: a Python dispatch mode makes torch.compile fall back to eager.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import threading
from typing import Any, Callable

from .record import OP_BACKENDS, backend_of

LOW_LSE = -88.7
"""exp() of a logsumexp below this underflows in fp32: the low-lse data condition of the advisories."""
OBSERVED_ENOUGH = 4
"""A call key (site, module, config, enabled SDPA backends) seen this often with the same op is not observed again
through the dispatch mode (unless --numerics needs the op's outputs): later calls are counted only."""
PENDING_FLUSH = 64
"""Numerics flags kept on the device before one synchronising read."""
TIMING_KEPT = 4096
"""CUDA event pairs kept per call key and phase."""

_DTYPES = {"torch.bfloat16": "bf16", "torch.float16": "fp16", "torch.float32": "fp32",
           "torch.float8_e4m3fn": "fp8", "torch.float8_e5m2": "fp8"}


OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
"""attndoctor's own folder: its frames are neither the call site nor the fallback."""
LIBRARIES = ("torch", "transformers", "flash_attn", "flash_attn_interface", "transformer_engine", "accelerate", "peft",
             "kernels", "vllm", "sglang", "diffusers", "deepspeed", "triton")
"""Packages whose frames are never the call site, wherever they are installed (an editable checkout included)."""


def _skip_dirs() -> tuple[str, ...]:
    """Folders whose frames are never the call site: attndoctor, the standard library, site-packages and
    dist-packages, and the libraries of LIBRARIES that are imported now (each ending in a separator)."""
    import site
    import sysconfig

    dirs = [OWN_DIR]
    paths = sysconfig.get_paths()
    dirs += [paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(k)]
    try:
        dirs += list(site.getsitepackages()) + [site.getusersitepackages()]
    except AttributeError:  # a virtualenv's old site.py without them
        pass
    for name in LIBRARIES:
        path = getattr(sys.modules.get(name), "__file__", None)
        if path:
            dirs.append(os.path.dirname(os.path.abspath(path)) if not path.endswith(f"{name}.py") else path)
    return tuple(sorted({d.rstrip(os.sep) + (os.sep if not d.endswith(".py") else "") for d in dirs if d}))


def is_library(filename: str, skip: tuple[str, ...]) -> bool:
    """Whether a frame's file belongs to a library (or the standard library), not to the user's program."""
    if filename.startswith("<"):
        return filename.startswith("<frozen")
    absolute = os.path.abspath(filename)
    parts = absolute.split(os.sep)
    return absolute.startswith(skip) or "site-packages" in parts or "dist-packages" in parts


class _Entry:
    """One aggregate: a (site, module, config, op) seen `count` times, with its numerics and timing."""

    __slots__ = ("site", "module", "api", "fields", "details", "op", "ran", "phase", "count", "nonfinite",
                 "first_nonfinite", "lse_min", "masked_rows", "events", "times_ms", "note", "intent")

    def __init__(self, site: str, module: str, api: str, fields: dict, details: dict, op: str, ran: str,
                 phase: str, note: str = "") -> None:
        self.site, self.module, self.api, self.fields, self.details = site, module, api, fields, details
        self.op, self.ran, self.phase, self.note = op, ran, phase, note
        self.count = 0
        self.nonfinite = 0
        self.first_nonfinite: dict | None = None
        self.lse_min: Any = None
        self.masked_rows: Any = None
        self.events: list = []
        self.times_ms: list[float] = []
        self.intent: dict | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"site": self.site, "module": self.module, "api": self.api, "phase": self.phase,
                               "op": self.op, "ran": self.ran, "count": self.count, "config": self.fields,
                               "details": self.details}
        if self.note:
            out["note"] = self.note
        if self.intent:
            out["intent"] = self.intent
        return out


class _Observe:
    """A TorchDispatchMode, made when torch is there, that notes the attention ops one SDPA call dispatches."""

    cls: Any = None

    @classmethod
    def make(cls) -> Any:
        if cls.cls is None:
            from torch.utils._python_dispatch import TorchDispatchMode

            class ObserveAttention(TorchDispatchMode):
                # FlexAttention's higher-order op passes through a mode only where the mode says it may.
                supports_higher_order_operators = True

                def __init__(self) -> None:
                    super().__init__()
                    self.seen: list[tuple[str, Any]] = []

                def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                    out = func(*args, **(kwargs or {}))
                    name = getattr(func, "__name__", "") or str(func)
                    packet = name.split(".")[0]
                    if packet in OP_BACKENDS or packet == "flex_attention":
                        self.seen.append((f"aten.{name}" if packet != "flex_attention" else name, out))
                    return out

            cls.cls = ObserveAttention
        return cls.cls()


class Recorder:
    """Install the hooks, aggregate calls, and give them back as plain data (`calls()`)."""

    def __init__(self, numerics: bool = False, timing: bool = False) -> None:
        self.numerics = numerics
        self.timing = timing
        self.entries: dict[tuple, _Entry] = {}
        self.observed: dict[tuple, tuple[str, int]] = {}
        self.restore: list[Callable[[], None]] = []
        self.notes: list[str] = []
        self.step = 0
        self.seq = 0
        self.pending: list[tuple[Any, _Entry, dict]] = []
        self.first_nonfinite: dict | None = None
        self.installed = False
        self.lock = threading.RLock()
        self.skip: tuple[str, ...] = ()
        self.skip_cache: dict[str, bool] = {}
        self.skip_seen: set[str] = set()
        self.names: dict[int, tuple[Any, dict[int, str]]] = {}
        self.compiled_at_start = 0
        self.own_graphs = 0
        self.wrapped: set[str] = set()
        self.local = threading.local()
        self.fast: dict[tuple, tuple[_Entry, str]] = {}
        self.by_id: dict[tuple, _Entry] = {}
        self.shorts: dict[str, str] = {}

    # ------------------------------------------------------------ install

    def install(self) -> "Recorder":
        """Wrap every entry point that is importable now; the bootstrap calls `on_import` for modules loaded later."""
        import torch
        import torch.nn.functional as F

        self._refresh_skip()
        self._patch(F, "scaled_dot_product_attention", self._wrap_sdpa)
        try:
            from torch.optim.optimizer import register_optimizer_step_post_hook

            handle = register_optimizer_step_post_hook(self._stepped)
            self.restore.append(handle.remove)
        except ImportError:
            self.notes.append("this torch has no global optimizer step hook: steps are not counted")
        self.compiled_at_start = _compiled_graphs()
        for name in list(sys.modules):
            self.on_import(name)
        if self.timing and not torch.cuda.is_available():
            self.notes.append("--timing needs CUDA: no GPU here, so no times were taken")
        self.installed = True
        return self

    def uninstall(self) -> None:
        """Put every wrapped function back and read what the device still holds."""
        while self.restore:
            self.restore.pop()()
        self.installed = False
        self.flush()

    def _patch(self, owner: Any, attr: str, make: Callable[[Any, str], Any], label: str = "") -> None:
        original = getattr(owner, attr, None)
        if original is None or getattr(original, "__attndoctor_wrapped__", False):
            return
        wrapper = make(original, label or f"{getattr(owner, '__name__', type(owner).__name__)}.{attr}")
        wrapper.__attndoctor_wrapped__ = True
        wrapper.__wrapped__ = original
        for name in ("__name__", "__qualname__", "__doc__", "__module__"):
            try:
                setattr(wrapper, name, getattr(original, name))
            except (AttributeError, TypeError):
                pass
        setattr(owner, attr, wrapper)
        self.restore.append(lambda: setattr(owner, attr, original))

    def on_import(self, name: str) -> None:
        """Wrap the entry points a module just imported holds (called by the import watcher and at install)."""
        module = sys.modules.get(name)
        if module is None or name in self.wrapped:
            return
        if name == "torch.nn.attention.flex_attention":
            self._patch(module, "flex_attention", self._wrap_flex)
        elif name in ("flash_attn", "flash_attn.flash_attn_interface", "flash_attn_interface", "flash_attn.cute",
                      "flash_attn.cute.interface"):
            library = {"flash_attn_interface": "flash-attn-3"}.get(name, "flash-attn-4" if ".cute" in name
                                                                  else "flash-attn-2")
            for attr in ("flash_attn_func", "flash_attn_varlen_func", "flash_attn_kvpacked_func",
                         "flash_attn_qkvpacked_func", "flash_attn_varlen_kvpacked_func",
                         "flash_attn_varlen_qkvpacked_func"):
                self._patch(module, attr, lambda orig, label, lib=library: self._wrap_flash(orig, label, lib),
                            f"{name}.{attr}")
        elif name == "transformer_engine.pytorch":
            cls = getattr(module, "DotProductAttention", None)
            if cls is not None:
                self._patch(cls, "forward", self._wrap_te, "transformer_engine.pytorch.DotProductAttention.forward")
        elif name == "transformers.modeling_utils":
            self._wrap_transformers_flex(module)
        elif name.startswith("transformers.models.") and ".modeling_" in name:
            self._patch(module, "eager_attention_forward", self._wrap_hf_eager, f"{name}.eager_attention_forward")
        else:
            return
        self.wrapped.add(name)

    def _wrap_transformers_flex(self, module: Any) -> None:
        interface = getattr(module, "ALL_ATTENTION_FUNCTIONS", None)
        mapping = getattr(type(interface), "_global_mapping", None) if interface is not None else None
        if isinstance(mapping, dict) and "flex_attention" in mapping:
            self._patch(_ItemOwner(mapping), "flex_attention", self._wrap_hf_flex,
                        "transformers ALL_ATTENTION_FUNCTIONS['flex_attention']")

    # ------------------------------------------------------------ where the call came from

    def _site_and_module(self) -> tuple[str, str]:
        """The first frame outside libraries (file:line; the innermost library frame when every frame is a
        library's), and the innermost nn.Module in a `forward` frame on the stack, named from the outermost one's
        named_modules()."""
        frame = sys._getframe(2)
        site = fallback = ""
        inner = outer = None
        named = ""
        Module = _module_type()
        while frame is not None:
            code = frame.f_code
            if not site:
                filename = code.co_filename
                skip = self.skip_cache.get(filename)
                if skip is None:
                    if any(name in sys.modules for name in LIBRARIES if name not in self.skip_seen):
                        self._refresh_skip()
                    skip = self.skip_cache[filename] = is_library(filename, self.skip)
                if not skip or not (fallback or filename.startswith(OWN_DIR)):
                    short = self.shorts.get(filename)
                    if short is None:
                        short = self.shorts[filename] = _short(filename)
                    if skip:
                        fallback = f"{short}:{frame.f_lineno}"
                    else:
                        site = f"{short}:{frame.f_lineno}"
            if not named and code.co_name == "forward" and code.co_argcount and code.co_varnames[0] == "self":
                obj = frame.f_locals.get("self")
                if isinstance(obj, Module):
                    if inner is None:
                        inner = obj
                        named = self._known_name(inner)
                    outer = obj
            if site and named:  # the rest of the stack can change neither
                break
            frame = frame.f_back
        return site or fallback or "?", named or self._module_name(inner, outer)

    def _refresh_skip(self) -> None:
        """A library imported since the folders were listed (transformers after torch) joins them."""
        self.skip_seen = {name for name in LIBRARIES if name in sys.modules}
        skip = _skip_dirs()
        if skip != self.skip:
            self.skip = skip
            self.skip_cache.clear()

    def _known_name(self, inner: Any) -> str:
        """The module path of a module named before (by its outermost module's named_modules()), else ''."""
        for ref, names in self.names.values():
            name = names.get(id(inner))
            if name and ref() is not None:
                return name
        return ""

    def _module_name(self, inner: Any, outer: Any) -> str:
        if inner is None:
            return ""
        cached = self.names.get(id(outer))
        if cached is None or cached[0]() is not outer or id(inner) not in cached[1]:
            import weakref

            names = {id(m): n for n, m in outer.named_modules()}
            cached = (weakref.ref(outer), names)
            self.names[id(outer)] = cached
        name = cached[1].get(id(inner), "")
        return name or type(inner).__name__

    # ------------------------------------------------------------ aggregation

    def _entry(self, site: str, module: str, api: str, fields: dict, details: dict, op: str, ran: str,
               phase: str, note: str = "") -> _Entry:
        same = (site, module, api, phase, op, ran, id(fields), id(details))
        entry = self.by_id.get(same)
        if entry is None or entry.fields is not fields or entry.details is not details:
            key = (site, module, api, phase, op, ran, tuple(sorted((k, _hashable(v)) for k, v in fields.items())),
                   tuple(sorted((k, _hashable(v)) for k, v in details.items())))
            entry = self.entries.get(key)
            if entry is None:
                with self.lock:
                    entry = self.entries.setdefault(key, _Entry(site, module, api, fields, details, op, ran, phase,
                                                                note))
            if entry.fields is fields and entry.details is details:
                self.by_id[same] = entry
        entry.count += 1
        return entry

    def _stepped(self, *_: Any) -> None:
        self.step += 1

    # ------------------------------------------------------------ SDPA

    def _wrap_sdpa(self, original: Any, label: str) -> Any:
        recorder = self

        def scaled_dot_product_attention(query: Any, key: Any, value: Any, attn_mask: Any = None,
                                         dropout_p: float = 0.0, is_causal: bool = False, scale: Any = None,
                                         **kwargs: Any) -> Any:
            if _compiling() or getattr(recorder.local, "busy", False):
                return original(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                                scale=scale, **kwargs)
            recorder.local.busy = True
            try:
                return recorder._sdpa(original, query, key, value, attn_mask, dropout_p, is_causal, scale, kwargs)
            finally:
                recorder.local.busy = False

        return scaled_dot_product_attention

    def _sdpa(self, original: Any, q: Any, k: Any, v: Any, attn_mask: Any, dropout_p: float, is_causal: bool,
              scale: Any, kwargs: dict) -> Any:
        import torch

        site, module = self._site_and_module()
        gqa = bool(kwargs.get("enable_gqa", False))
        flags = _sdpa_flags(torch)
        # A call like one seen OBSERVED_ENOUGH times (same site, tensors' shapes, strides and flags) is only counted.
        fast = (site, module, flags, _sdpa_signature(q, k, v, attn_mask, dropout_p, is_causal, scale, gqa))
        hit = self.fast.get(fast)
        if hit is not None and not self.numerics and not self.timing:
            entry, op = hit
            out = original(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale,
                           **kwargs)
            entry.count += 1
            self.seq += 1
            if entry.fields["train"] and getattr(out, "grad_fn", None) is not None:
                self._backward(out.grad_fn, site, module, entry.api, entry.fields, entry.details, op, entry.ran)
            return out
        fields, details = _sdpa_fields(q, k, v, attn_mask, dropout_p, is_causal, scale, gqa)
        key = (site, module, tuple(sorted(fields.items(), key=lambda kv: kv[0])), flags, str(q.device))
        known = self.observed.get(key)
        observe = self.numerics or known is None or known[1] < OBSERVED_ENOUGH
        if attn_mask is not None:
            # Read once per call key (one device read); --numerics checks every call's mask without waiting.
            rows = self.observed.get(("rows",) + key)
            if rows is None:
                rows = self.observed[("rows",) + key] = (bool(_masked_rows(attn_mask).item()),)
            details["fully_masked_rows"] = rows[0]
        timer = self._start_timer(q) if self.timing else None
        if observe:
            mode = _Observe.make()
            with mode:
                out = original(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale,
                               **kwargs)
            op, result = mode.seen[0] if mode.seen else ("", None)
        else:
            out = original(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale,
                               **kwargs)
            op, result = known[0], None
        ran = backend_of(op) if op else "sdpa-math"
        note = "" if op else "no fused attention op was dispatched: the math fallback (matmul + softmax) ran"
        op_label = op or "math decomposition (bmm, softmax)"
        if observe:
            previous = self.observed.get(key)
            self.observed[key] = (op, previous[1] + 1 if previous and previous[0] == op else 1)
        entry = self._entry(site, module, "torch.nn.functional.scaled_dot_product_attention", fields, details,
                            op_label, ran, "forward", note)
        if entry.intent is None:
            entry.intent = model_intent(sys._getframe(1))
        if self.observed[key][1] >= OBSERVED_ENOUGH and entry.fields == fields and entry.details == details:
            self.fast[fast] = (entry, op)
        if timer is not None:
            self._stop_timer(entry, timer)
        self.seq += 1
        if self.numerics:
            self._check(entry, out, "output")
            if isinstance(result, tuple) and len(result) > 1 and getattr(result[1], "dim", lambda: 0)() in (3, 4):
                self._lse(entry, result[1], fields.get("seqlen_q"))
            if attn_mask is not None:
                self._rows(entry, attn_mask)
        if fields["train"] and getattr(out, "grad_fn", None) is not None:
            self._backward(out.grad_fn, site, module, "torch.nn.functional.scaled_dot_product_attention", fields,
                           details, op, ran)
        return out

    def _backward(self, node: Any, site: str, module: str, api: str, fields: dict, details: dict, op: str,
                  ran: str) -> None:
        """Count the backward of this call (and check its gradients) through hooks on the output's autograd node."""
        bop = _backward_op(op, type(node).__name__)
        recorder = self
        state: dict[str, Any] = {}

        def pre(grad_outputs: Any) -> None:
            if recorder.timing:
                state["timer"] = recorder._start_timer(grad_outputs[0] if grad_outputs else None)

        def post(grad_inputs: Any, grad_outputs: Any) -> None:
            entry = recorder._entry(site, module, api, fields, details, bop, ran, "backward")
            if state.get("timer") is not None:
                recorder._stop_timer(entry, state.pop("timer"))
            if recorder.numerics:
                for which, grad in zip(("grad_q", "grad_k", "grad_v"), grad_inputs):
                    if grad is not None:
                        recorder._check(entry, grad, which)

        try:
            if self.timing:
                node.register_prehook(pre)
            node.register_hook(post)
        except (AttributeError, RuntimeError):
            pass

    # ------------------------------------------------------------ FlexAttention, flash-attn, TE, transformers

    def _wrap_flex(self, original: Any, label: str) -> Any:
        recorder = self

        def flex_attention(query: Any, key: Any, value: Any, score_mod: Any = None, block_mask: Any = None,
                           *args: Any, **kwargs: Any) -> Any:
            if _compiling() or getattr(recorder.local, "busy", False):
                return original(query, key, value, score_mod, block_mask, *args, **kwargs)
            recorder.local.busy = True
            try:
                site, module = recorder._site_and_module()
                graphs = _compiled_graphs()
                out = original(query, key, value, score_mod, block_mask, *args, **kwargs)
                # flex_attention compiles its own graph even in eager mode: not the user's torch.compile
                recorder.own_graphs += _compiled_graphs() - graphs
                fields, details = _flex_fields(query, key, value, score_mod, block_mask,
                                               kwargs.get("enable_gqa", args[1] if len(args) > 1 else False))
                recorder._seen(out, site, module, "torch.nn.attention.flex_attention.flex_attention", fields, details,
                               "flex_attention (higher-order op)", "flex-attention", "flex_attention_backward")
                return out
            finally:
                recorder.local.busy = False

        return flex_attention

    def _seen(self, out: Any, site: str, module: str, api: str, fields: dict, details: dict, op: str, ran: str,
              backward_op: str = "", note: str = "") -> None:
        """Count a forward call, check its output, and follow it into backward (where `backward_op` names it)."""
        entry = self._entry(site, module, api, fields, details, op, ran, "forward", note)
        if entry.intent is None:
            entry.intent = model_intent(sys._getframe(1)) if ran.startswith("flash-attn") else {}
        self.seq += 1
        first = out[0] if isinstance(out, tuple) else out
        if self.numerics:
            self._check(entry, first, "output")
        if backward_op and fields.get("train") and getattr(first, "grad_fn", None) is not None:
            self._backward(first.grad_fn, site, module, api, fields, details, backward_op, ran)

    def _wrap_hf_flex(self, original: Any, label: str) -> Any:
        recorder = self

        def flex_attention_forward(module: Any, query: Any, key: Any, value: Any, attention_mask: Any = None,
                                   *args: Any, **kwargs: Any) -> Any:
            if _compiling() or getattr(recorder.local, "busy", False):
                return original(module, query, key, value, attention_mask, *args, **kwargs)
            recorder.local.busy = True
            try:
                site, name = recorder._site_and_module()
                out = original(module, query, key, value, attention_mask, *args, **kwargs)
                is_block = type(attention_mask).__name__ == "BlockMask"
                fields, details = _flex_fields(query, key, value, kwargs.get("score_mod"),
                                               attention_mask if is_block else None, query.shape[1] != key.shape[1])
                if attention_mask is not None and not is_block:
                    fields["mask"] = "arbitrary"
                    details["mask_kind"] = _mask_kind(attention_mask)
                recorder._seen(out, site, name, "transformers flex_attention_forward", fields, details,
                               "flex_attention (compiled by transformers)", "flex-attention", "flex_attention_backward")
                return out
            finally:
                recorder.local.busy = False

        return flex_attention_forward

    def _wrap_hf_eager(self, original: Any, label: str) -> Any:
        recorder = self

        def eager_attention_forward(module: Any, query: Any, key: Any, value: Any, attention_mask: Any = None,
                                    *args: Any, **kwargs: Any) -> Any:
            if _compiling():
                return original(module, query, key, value, attention_mask, *args, **kwargs)
            site, name = recorder._site_and_module()
            fields, details = _sdpa_fields(query, key, value, attention_mask, float(kwargs.get("dropout", 0.0)),
                                           False, kwargs.get("scaling"), query.shape[1] != key.shape[1])
            if attention_mask is not None:
                details["fully_masked_rows"] = None
            out = original(module, query, key, value, attention_mask, *args, **kwargs)
            recorder._seen(out, site, name, label, fields, details, "matmul + softmax (no attention kernel)", "eager")
            return out

        return eager_attention_forward

    def _wrap_flash(self, original: Any, label: str, library: str) -> Any:
        recorder = self
        function = label.rsplit(".", 1)[-1]

        def flash_attn_call(*args: Any, **kwargs: Any) -> Any:
            if _compiling() or getattr(recorder.local, "busy", False):
                return original(*args, **kwargs)
            recorder.local.busy = True
            try:
                site, module = recorder._site_and_module()
                out = original(*args, **kwargs)
                fields, details = _flash_fields(function, args, kwargs)
                recorder._seen(out, site, module, label, fields, details, f"{library} {function}", library,
                               f"{library} {function} backward")
                return out
            finally:
                recorder.local.busy = False

        return flash_attn_call

    def _wrap_te(self, original: Any, label: str) -> Any:
        recorder = self

        def forward(this: Any, query_layer: Any, key_layer: Any, value_layer: Any, *args: Any, **kwargs: Any) -> Any:
            if _compiling() or getattr(recorder.local, "busy", False):
                return original(this, query_layer, key_layer, value_layer, *args, **kwargs)
            recorder.local.busy = True
            try:
                site, module = recorder._site_and_module()
                out = original(this, query_layer, key_layer, value_layer, *args, **kwargs)
                fields, details = _te_fields(this, query_layer, key_layer, value_layer, kwargs)
                ran, note = _te_backend()
                recorder._seen(out, site, module, label, fields, details, "DotProductAttention.forward", ran,
                               note=note)
                return out
            finally:
                recorder.local.busy = False

        return forward

    # ------------------------------------------------------------ numerics and timing

    def _check(self, entry: _Entry, tensor: Any, what: str) -> None:
        """Queue a non-finite check on the device; read in batches so a call never waits for the GPU."""
        import torch

        if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():
            return
        flag = ~torch.isfinite(tensor.detach()).all()
        self.pending.append((flag, entry, {"step": self.step, "call": self.seq, "tensor": what,
                                           "phase": entry.phase}))
        if len(self.pending) >= PENDING_FLUSH:
            self.flush()

    def _lse(self, entry: _Entry, lse: Any, seqlen_q: Any) -> None:
        import torch

        part = lse.detach()
        if part.dim() == 4 and part.shape[-1] == 1:  # cuDNN's logsumexp is (batch, heads, seq, 1)
            part = part[..., 0]
        if seqlen_q and part.shape[-1] > seqlen_q:
            part = part[..., :seqlen_q]
        low = part.float().amin(dim=(0, 2))
        entry.lse_min = low if entry.lse_min is None else torch.minimum(entry.lse_min, low)

    def _rows(self, entry: _Entry, mask: Any) -> None:
        flag = _masked_rows(mask)
        entry.masked_rows = flag if entry.masked_rows is None else (entry.masked_rows | flag)

    def flush(self) -> None:
        """Read the queued non-finite flags (one device read) and note the first call that produced one."""
        if not self.pending:
            return
        import torch

        pending, self.pending = self.pending, []
        flags = torch.stack([p[0].to("cpu", non_blocking=False) for p in pending]).tolist()
        for bad, (_, entry, where) in zip(flags, pending):
            if not bad:
                continue
            entry.nonfinite += 1
            if entry.first_nonfinite is None:
                entry.first_nonfinite = where
            if self.first_nonfinite is None or where["call"] < self.first_nonfinite["call"]:
                self.first_nonfinite = {**where, "site": entry.site, "module": entry.module, "op": entry.op}

    def _start_timer(self, like: Any) -> Any:
        import torch

        if like is None or not getattr(like, "is_cuda", False):
            return None
        start = torch.cuda.Event(enable_timing=True)
        start.record()
        return start

    def _stop_timer(self, entry: _Entry, start: Any) -> None:
        import torch

        end = torch.cuda.Event(enable_timing=True)
        end.record()
        if len(entry.events) < TIMING_KEPT:
            entry.events.append((start, end))

    # ------------------------------------------------------------ results

    def calls(self) -> list[dict[str, Any]]:
        """Every aggregate as plain data, numerics and timing resolved (this synchronises the GPU once)."""
        self.flush()
        out = []
        for entry in list(self.entries.values()):
            data = entry.to_dict()
            if self.numerics:
                numerics: dict[str, Any] = {"nonfinite_calls": entry.nonfinite}
                if entry.first_nonfinite:
                    numerics["first_nonfinite"] = entry.first_nonfinite
                if entry.lse_min is not None:
                    values = [float(x) for x in entry.lse_min.tolist()]
                    numerics["lse_min_per_head"] = values
                    numerics["low_lse_heads"] = [h for h, x in enumerate(values) if x < LOW_LSE]
                if entry.masked_rows is not None:
                    numerics["masked_rows"] = bool(entry.masked_rows.item())
                data["numerics"] = numerics
            if entry.events:
                import torch

                torch.cuda.synchronize()
                times = sorted(s.elapsed_time(e) for s, e in entry.events)
                data["timing_ms"] = {"calls_timed": len(times), "median": times[len(times) // 2],
                                     "total": sum(times)}
            out.append(data)
        return out

    def header(self) -> dict[str, Any]:
        """What the process was: argv, rank, torch, device, steps, notes (compiled graphs included)."""
        import torch

        notes = list(self.notes)
        compiled = _compiled_graphs() - self.compiled_at_start - self.own_graphs
        header: dict[str, Any] = {"pid": os.getpid(), "rank": os.environ.get("RANK"), "argv": list(sys.argv),
                                  "torch": torch.__version__, "cuda": torch.cuda.is_available(),
                                  "optimizer_steps": self.step, "numerics": self.numerics, "timing": self.timing,
                                  "compiled_graphs": compiled}
        if torch.cuda.is_available():
            header["gpu"] = torch.cuda.get_device_name()
        if self.numerics and self.first_nonfinite:
            header["first_nonfinite"] = self.first_nonfinite
        header["notes"] = notes
        return header


class _ItemOwner:
    """A dict seen as an object with attributes, so one key of it can be wrapped and put back like an attribute."""

    def __init__(self, mapping: dict) -> None:
        object.__setattr__(self, "_mapping", mapping)
        object.__setattr__(self, "__name__", "mapping")

    def __getattr__(self, name: str) -> Any:
        return self._mapping.get(name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._mapping[name] = value


# ---------------------------------------------------------------- helpers (torch objects in, plain data out)


def _module_type() -> Any:
    import torch

    return torch.nn.Module


_COMPILING: dict[str, Callable[[], bool]] = {}


def _compiling() -> bool:
    check = _COMPILING.get("check")
    if check is None:
        import torch

        check = _COMPILING["check"] = getattr(getattr(torch, "compiler", None), "is_compiling", None) or bool
    return bool(check())


def _compiled_graphs() -> int:
    """How many graphs torch.compile has made in this process so far (0 when Dynamo was never loaded)."""
    if "torch._dynamo" not in sys.modules:
        return 0
    try:
        from torch._dynamo.utils import counters

        return int(counters["stats"]["unique_graphs"])
    except Exception:  # noqa: BLE001 - a torch without the counter: nothing to report
        return 0


INTENT_KWARGS = {"softcap": "softcap", "sliding_window": "window", "s_aux": "sinks", "sinks": "sinks"}
"""Arguments of transformers' attention functions (attention_interface) that state what the model's attention is."""
INTENT_ATTRS = (("attn_logit_softcapping", "softcap"), ("softcap", "softcap"), ("sliding_window", "window"),
                ("sinks", "sinks"))
"""Attributes of the attention module that state the same (Gemma-2's attn_logit_softcapping, gpt-oss's sinks)."""


def model_intent(frame: Any) -> dict[str, Any]:
    """What the model's attention asks for (softcap, sliding window, sinks), read once per call key from the
    frames between the attention call and the attention module's forward: the attention function's arguments
    first, then the module's attributes and its config's attn_logit_softcapping."""
    asks: dict[str, Any] = {}
    read: dict[str, str] = {}
    Module = _module_type()
    while frame is not None:
        code = frame.f_code
        local = frame.f_locals
        module = local.get("self") if code.co_name == "forward" else None
        if isinstance(module, Module):
            for attr, what in INTENT_ATTRS:
                if what not in read and hasattr(module, attr):
                    asks[what], read[what] = getattr(module, attr), f"{type(module).__name__}.{attr}"
            config = getattr(module, "config", None)
            if "softcap" not in read and getattr(config, "attn_logit_softcapping", None) is not None:
                asks["softcap"] = config.attn_logit_softcapping
                read["softcap"] = f"{type(module).__name__}.config.attn_logit_softcapping"
            break
        if not code.co_filename.startswith(OWN_DIR):
            kwargs = local.get("kwargs")
            for scope, label in ((kwargs if isinstance(kwargs, dict) else {}, "kwargs"), (local, "argument")):
                for name, what in INTENT_KWARGS.items():
                    if what not in read and name in scope and (label == "kwargs" or name in code.co_varnames):
                        asks[what], read[what] = scope[name], f"{code.co_name}({label} {name})"
        frame = frame.f_back
    out: dict[str, Any] = {}
    softcap, window, sinks = asks.get("softcap"), asks.get("window"), asks.get("sinks")
    if isinstance(softcap, (int, float)) and not isinstance(softcap, bool) and softcap > 0:
        out["softcap"] = float(softcap)
    if isinstance(window, int) and not isinstance(window, bool) and window > 0:
        out["window"] = int(window)
    if sinks is not None and hasattr(sinks, "shape"):
        out["sinks"] = True
    if out:
        out["read_from"] = {k: read[k] for k in ("softcap", "window", "sinks") if k in out}
    return out


def _short(filename: str) -> str:
    parts = filename.split(os.sep)
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            return os.sep.join(parts[len(parts) - parts[::-1].index(marker):])
    try:
        relative = os.path.relpath(filename)
    except ValueError:
        return filename
    return relative if not relative.startswith("..") else filename


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _sdpa_flags(torch: Any) -> tuple:
    backends = torch.backends.cuda
    return (backends.flash_sdp_enabled(), backends.mem_efficient_sdp_enabled(), backends.math_sdp_enabled(),
            getattr(backends, "cudnn_sdp_enabled", lambda: None)(), torch.are_deterministic_algorithms_enabled())


def _dtype(t: Any) -> str:
    return _DTYPES.get(str(t.dtype), str(t.dtype).removeprefix("torch."))


def layout_of(t: Any, seq_dim: int = 2, head_dim: int = 1, batch_dim: int = 0) -> str:
    """The memory order of a (batch, heads, seq, dim) view, read from its strides: bshd, bhsd or sbhd.

    A size-1 dimension's stride says nothing; it is placed as in bhsd (SDPA's own order)."""
    dims = (("b", batch_dim), ("h", head_dim), ("s", seq_dim))
    sized = sorted(((t.stride(d), x) for x, d in dims if t.shape[d] > 1), key=lambda p: -p[0])
    order = [x for _, x in sized]
    for x in "bhs":
        if x not in order:
            order.insert(sum(1 for y in order if "bhs".index(y) < "bhs".index(x)), x)
    return "".join(order) + "d"


def fused_qkv(q: Any, k: Any, v: Any) -> bool:
    """q, k and v are views of one buffer (one storage), not three tensors of their own."""
    try:
        ptrs = {t.untyped_storage().data_ptr() for t in (q, k, v)}
    except (AttributeError, RuntimeError):
        return False
    return len(ptrs) == 1 and q.data_ptr() != k.data_ptr()


def _mask_kind(mask: Any) -> str:
    import torch

    if mask is None:
        return "none"
    if not isinstance(mask, torch.Tensor):
        return type(mask).__name__
    return "bool" if mask.dtype == torch.bool else f"float bias ({_dtype(mask)})"


def _masked_rows(mask: Any) -> Any:
    """A device bool: does some query row of the mask hide every key (bool False / float -inf everywhere)?"""
    import torch

    if mask.dtype == torch.bool:
        return (~mask).all(dim=-1).any()
    return torch.isneginf(mask).all(dim=-1).any()


@functools.lru_cache(maxsize=256)
def _backward_op(op: str, node: str) -> str:
    """The backward op's name, from the forward op or the autograd node's class."""
    if op:
        return f"aten.{op.removeprefix('aten.').split('.')[0]}_backward"
    if node.startswith("ScaledDotProduct"):
        return "aten._" + re.sub(r"(?<!^)(?=[A-Z])", "_", node.removesuffix("Backward0")).lower() + "_backward"
    return "autograd of the decomposition"


def _sdpa_signature(q: Any, k: Any, v: Any, attn_mask: Any, dropout_p: float, is_causal: bool, scale: Any,
                    gqa: bool) -> tuple:
    """Everything _sdpa_fields reads, cheaply: calls with equal signatures have equal fields and details."""
    import torch

    mask = None if attn_mask is None else (attn_mask.dtype, tuple(attn_mask.shape))
    return (tuple(q.shape), q.stride(), tuple(k.shape), k.stride(), tuple(v.shape), v.stride(), q.dtype, q.device,
            torch.is_grad_enabled(), q.requires_grad, k.requires_grad, v.requires_grad, mask, dropout_p, is_causal,
            scale, gqa, fused_qkv(q, k, v))


def _sdpa_fields(q: Any, k: Any, v: Any, attn_mask: Any, dropout_p: float, is_causal: bool, scale: Any,
                 gqa: bool) -> tuple[dict, dict]:
    """The call's config (AttentionConfig field names) and its details, from SDPA's (batch, heads, seq, dim) views."""
    import torch

    shape = tuple(int(s) for s in q.shape)
    batch = 1
    for s in shape[:-3]:
        batch *= s
    heads, seqlen_q, hdim = shape[-3], shape[-2], shape[-1]
    kv_heads, seqlen_kv = int(k.shape[-3]), int(k.shape[-2])
    train = torch.is_grad_enabled() and any(getattr(t, "requires_grad", False) for t in (q, k, v))
    mask = "causal" if is_causal else ("arbitrary" if attn_mask is not None else "none")
    fields = {"batch": batch, "heads": heads, "kv_heads": kv_heads, "seqlen_q": seqlen_q, "seqlen_kv": seqlen_kv,
              "hdim": hdim, "hdim_v": int(v.shape[-1]), "dtype": _dtype(q), "train": bool(train), "mask": mask,
              "dropout": float(dropout_p) if train or dropout_p else 0.0,
              "layout": layout_of(q, len(shape) - 2, len(shape) - 3, 0) if len(shape) == 4 else "bhsd",
              "qkv_fused": fused_qkv(q, k, v),
              "deterministic": bool(torch.are_deterministic_algorithms_enabled())}
    details: dict[str, Any] = {"mask_kind": _mask_kind(attn_mask), "gqa": bool(gqa or kv_heads != heads),
                               "enable_gqa": bool(gqa), "scale": None if scale is None else float(scale),
                               "device": str(q.device), "shape_q": list(shape),
                               "strides_q": list(q.stride()), "strides_k": list(k.stride()),
                               "strides_v": list(v.stride()), "contiguous": all(t.is_contiguous() for t in (q, k, v))}
    if not details["contiguous"]:
        details.update({f"contiguous_{n}": t.is_contiguous() for n, t in (("q", q), ("k", k), ("v", v))})
    if attn_mask is not None:
        details["mask_shape"] = list(attn_mask.shape)
    return fields, details


def _flex_fields(q: Any, k: Any, v: Any, score_mod: Any, block_mask: Any, gqa: Any) -> tuple[dict, dict]:
    fields, details = _sdpa_fields(q, k, v, None, 0.0, False, None, bool(gqa))
    mask_mod = getattr(block_mask, "mask_mod", None)
    mask_name = getattr(mask_mod, "__name__", "") if mask_mod is not None else ""
    if block_mask is not None:
        fields["mask"] = "causal" if "causal" in mask_name.lower() and "pad" not in mask_name.lower() else "arbitrary"
    lengths = getattr(block_mask, "seq_lengths", None)
    if lengths is not None:
        details["block_mask_seq_lengths"] = [int(n) for n in lengths]
    details.update({"mask_kind": "block_mask" if block_mask is not None else "none",
                    "mask_mod": mask_name or None, "score_mod": getattr(score_mod, "__name__", None)
                    if score_mod is not None else None})
    return fields, details


def _flash_fields(function: str, args: tuple, kwargs: dict) -> tuple[dict, dict]:
    """flash-attn's (batch, seq, heads, dim) tensors, packed or variable-length, as config fields."""
    import torch

    names = {"flash_attn_func": ("q", "k", "v"), "flash_attn_varlen_func": ("q", "k", "v"),
             "flash_attn_kvpacked_func": ("q", "kv"), "flash_attn_varlen_kvpacked_func": ("q", "kv"),
             "flash_attn_qkvpacked_func": ("qkv",), "flash_attn_varlen_qkvpacked_func": ("qkv",)}[function]
    given = dict(zip(names, args))
    given.update({n: kwargs[n] for n in names if n in kwargs})
    varlen = "varlen" in function
    if "qkv" in given:
        qkv = given["qkv"]
        q, k, v = qkv.select(-3, 0), qkv.select(-3, 1), qkv.select(-3, 2)
    elif "kv" in given:
        q, kv = given["q"], given["kv"]
        k, v = kv.select(-3, 0), kv.select(-3, 1)
    else:
        q, k, v = given["q"], given["k"], given["v"]
    rest = args[len(names):]
    if varlen:
        cu = kwargs.get("cu_seqlens_q", kwargs.get("cu_seqlens", rest[0] if rest else None))
        max_q = kwargs.get("max_seqlen_q", kwargs.get("max_seqlen"))
        if max_q is None and len(rest) > (1 if "qkv" in given else 2):
            max_q = rest[1 if "qkv" in given else 2]
        max_k = kwargs.get("max_seqlen_k", max_q if "qkv" in given else (rest[3] if len(rest) > 3 else max_q))
        batch = int(cu.shape[0]) - 1 if cu is not None else None
        heads, hdim = int(q.shape[-2]), int(q.shape[-1])
        seqlen_q, seqlen_kv, layout = _int_or_none(max_q), _int_or_none(max_k), "thd"
    else:
        batch, seqlen_q, heads, hdim = (int(s) for s in q.shape)
        seqlen_kv, layout = int(k.shape[1]), "bshd"
    causal = bool(kwargs.get("causal", False))
    window = kwargs.get("window_size", (-1, -1))
    train = torch.is_grad_enabled() and any(getattr(t, "requires_grad", False) for t in (q, k, v))
    fields = {"batch": batch, "heads": heads, "kv_heads": int(k.shape[-2]), "seqlen_q": seqlen_q,
              "seqlen_kv": seqlen_kv, "hdim": hdim, "hdim_v": int(v.shape[-1]), "dtype": _dtype(q),
              "train": bool(train), "mask": "causal" if causal else "none",
              "window": [int(window[0]), int(window[1])] if window is not None else [-1, -1],
              "dropout": float(kwargs.get("dropout_p", 0.0) or 0.0), "softcap": float(kwargs.get("softcap", 0.0) or 0.0),
              "layout": layout, "qkv_fused": "qkv" in given or fused_qkv(q, k, v),
              "deterministic": bool(kwargs.get("deterministic", False))}
    details = {"function": function, "gqa": int(k.shape[-2]) != heads, "device": str(q.device),
               "scale": kwargs.get("softmax_scale"), "alibi": kwargs.get("alibi_slopes") is not None}
    if seqlen_q is None:
        fields.pop("seqlen_q")
        fields.pop("seqlen_kv")
    return fields, details


def _te_fields(module: Any, q: Any, k: Any, v: Any, kwargs: dict) -> tuple[dict, dict]:
    import torch

    fmt = kwargs.get("qkv_format") or getattr(module, "qkv_format", "sbhd") or "sbhd"
    axes = {"sbhd": (1, 0, 2), "bshd": (0, 1, 2)}.get(fmt)
    mask_type = kwargs.get("attn_mask_type") or getattr(module, "attn_mask_type", "causal")
    train = torch.is_grad_enabled() and any(getattr(t, "requires_grad", False) for t in (q, k, v))
    fields: dict[str, Any] = {"hdim": int(q.shape[-1]), "hdim_v": int(v.shape[-1]), "heads": int(q.shape[-2]),
                              "kv_heads": int(k.shape[-2]), "dtype": _dtype(q), "train": bool(train),
                              "layout": fmt, "qkv_fused": fused_qkv(q, k, v)}
    if axes:
        fields.update(batch=int(q.shape[axes[0]]), seqlen_q=int(q.shape[axes[1]]), seqlen_kv=int(k.shape[axes[1]]))
    mask_map = {"no_mask": "none", "causal": "causal", "padding": "padding", "padding_causal": "padding-causal",
                "causal_bottom_right": "causal-bottom-right", "arbitrary": "arbitrary",
                "padding_causal_bottom_right": "padding-causal-bottom-right"}
    fields["mask"] = mask_map.get(str(mask_type), "arbitrary")
    window = kwargs.get("window_size") or getattr(module, "window_size", None)
    if window is not None:
        fields["window"] = [int(window[0]), int(window[1])]
    return fields, {"attn_mask_type": str(mask_type), "device": str(q.device)}


def _te_backend() -> tuple[str, str]:
    """TransformerEngine's last choice, where this TE keeps it in `_attention_backends`; else say it is unknown."""
    for name in ("transformer_engine.pytorch.attention.dot_product_attention.dot_product_attention",
                 "transformer_engine.pytorch.attention.dot_product_attention.utils",
                 "transformer_engine.pytorch.attention"):
        chosen = getattr(sys.modules.get(name), "_attention_backends", None)
        if isinstance(chosen, dict):
            if chosen.get("use_flash_attention"):
                return "te-flash", ""
            if chosen.get("use_fused_attention"):
                return "te-fused", f"fused sub-backend {chosen.get('fused_attention_backend')}"
            if chosen.get("use_unfused_attention"):
                return "te-unfused", ""
    return "te", "this TransformerEngine does not expose its chosen backend (_attention_backends not found)"


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None

