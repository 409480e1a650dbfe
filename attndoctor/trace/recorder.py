"""Runs inside the traced process: hooks on the attention entry points record every call, aggregated in memory.

Imports torch (the program already has) and nothing of the engine. Python-level hooks wrap the entry points at module
level and are restored on `uninstall`: torch.nn.functional.scaled_dot_product_attention here (what ran is told by
torch._fused_sdp_choice, the function SDPA itself asks; a dispatch mode only where that cannot tell or --numerics
needs the op's outputs), the other libraries in hooks.py, torch.compile's graphs in compiled.py. Backward is seen
through hooks on the output's autograd node. No dispatch mode stays on outside the SDPA call: a Python dispatch mode
makes torch.compile fall back to eager.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Callable

from .compiled import GraphHooks, compiled_graphs, compiler_check
from .fields import (_backward_op, _hashable, _masked_rows, _sdpa_fields, _sdpa_signature, sdpa_flag_reads,
                     sdpa_op_by_choice)
from .hooks import LibraryHooks
from .intent import _module_type, model_intent
from .record import OP_BACKENDS, backend_of
from .sites import LIBRARIES, OWN_DIR, _short, _skip_dirs, is_library

LOW_LSE = -88.7
"""exp() of a logsumexp below this underflows in fp32: the low-lse data condition of the advisories."""
OBSERVED_ENOUGH = 4
"""Where torch._fused_sdp_choice cannot tell what ran, a call key (site, module, config, enabled SDPA backends) seen
this often with the same op through the dispatch mode is not observed again: later calls are counted only."""
PENDING_FLUSH = 64
"""Numerics flags kept on the device before one synchronising read."""
TIMING_KEPT = 4096
"""CUDA event pairs kept per call key and phase."""

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




class Pending:
    """A device flag read when the record is written, so that recording a call never waits for the GPU."""

    __slots__ = ("flag",)

    def __init__(self, flag: Any) -> None:
        self.flag = flag

    def read(self) -> Any:
        return bool(self.flag.item()) if hasattr(self.flag, "item") else self.flag


class _BackwardCount:
    """The backward hook of a settled SDPA call: it only counts, into the entry the first backward made."""

    __slots__ = ("recorder", "key", "entry")

    def __init__(self, recorder: "Recorder", key: tuple) -> None:
        self.recorder, self.key, self.entry = recorder, key, None

    def __call__(self, grad_inputs: Any, grad_outputs: Any) -> None:
        if self.entry is None:
            self.entry = self.recorder._entry(*self.key)
        else:
            self.entry.count += 1


class Recorder(LibraryHooks, GraphHooks):
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
        self.codes: dict[int, tuple[bool, bool, str, bool, Any]] = {}
        self.files: dict[str, tuple[bool, bool, str]] = {}
        self.lines: dict[tuple[int, int], tuple[str, Any]] = {}
        self.configs: dict[tuple, tuple[dict, dict, str]] = {}
        self.module_type = _module_type()
        self.flag_reads = sdpa_flag_reads(sys.modules["torch"])
        self.skip_seen: set[str] = set()
        self.names: dict[int, tuple[Any, dict[int, str]]] = {}
        self.compiled_at_start = 0
        self.own_graphs = 0
        self.wrapped: set[str] = set()
        self.local = threading.local()
        self.fast: dict[tuple, tuple[_Entry, _BackwardCount | None]] = {}
        self.by_id: dict[tuple, _Entry] = {}

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
        self.compiled_at_start = compiled_graphs()
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


    # ------------------------------------------------------------ where the call came from

    def _site_and_module(self) -> tuple[str, str]:
        """The first frame outside libraries (file:line; the innermost library frame when every frame is a
        library's), and the innermost nn.Module in a `forward` frame on the stack, named from the outermost one's
        named_modules()."""
        frame = sys._getframe(2)
        site = ""
        fallback = inner = outer = None
        named = ""
        codes = self.codes
        while frame is not None and not named:
            info = codes.get(id(frame.f_code)) or self._code_info(frame.f_code)
            if not site:
                if not info[0]:
                    site = self._line(frame, info)
                elif fallback is None and not info[1]:
                    fallback = frame
            if info[3]:
                obj = frame.f_locals.get("self")
                if isinstance(obj, self.module_type):
                    if inner is None:
                        inner = obj
                        named = self._known_name(inner)
                    outer = obj
            frame = frame.f_back
        files = self.files
        while frame is not None and not site:  # the module is known: only the site is left to find
            where = files.get(frame.f_code.co_filename) or self._code_info(frame.f_code)
            if not where[0]:
                site = self._line(frame, where)
            elif fallback is None and not where[1]:
                fallback = frame
            frame = frame.f_back
        if not site and fallback is not None:
            site = self._line(fallback, files[fallback.f_code.co_filename])
        return site or "?", named or self._module_name(inner, outer)

    def _line(self, frame: Any, info: tuple) -> str:
        """"file:line" of a frame, kept by its code and instruction (reading f_lineno decodes the line table)."""
        code = frame.f_code
        where = (id(code), frame.f_lasti)
        kept = self.lines.get(where)
        if kept is None or kept[1] is not code:  # the code is kept beside its line, so that its id stays its own
            kept = self.lines[where] = (f"{info[2]}:{frame.f_lineno}", code)
        return kept[0]

    def _code_info(self, code: Any) -> tuple[bool, bool, str, bool, Any]:
        """(a library's, attndoctor's own, short file name, an nn.Module-style forward, the code) of a code object,
        kept by id (hashing a code object hashes its contents) and holding the code, so that the id stays its own."""
        if any(name in sys.modules for name in LIBRARIES if name not in self.skip_seen):
            self._refresh_skip()
        filename = code.co_filename
        where = self.files.get(filename)
        if where is None:
            where = self.files[filename] = (is_library(filename, self.skip), filename.startswith(OWN_DIR),
                                            _short(filename))
        info = (*where, code.co_name == "forward" and code.co_argcount > 0 and code.co_varnames[0] == "self", code)
        self.codes[id(code)] = info
        return info

    def _refresh_skip(self) -> None:
        """A library imported since the folders were listed (transformers after torch) joins them."""
        self.skip_seen = {name for name in LIBRARIES if name in sys.modules}
        skip = _skip_dirs()
        if skip != self.skip:
            self.skip = skip
            self.codes.clear()
            self.files.clear()
            self.lines.clear()

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
        recorder, local = self, self.local
        is_compiling = compiler_check()
        flash, efficient, math, cudnn, deterministic = self.flag_reads

        def scaled_dot_product_attention(query: Any, key: Any, value: Any, attn_mask: Any = None,
                                         dropout_p: float = 0.0, is_causal: bool = False, scale: Any = None,
                                         **kwargs: Any) -> Any:
            if is_compiling() or getattr(local, "busy", False):
                return original(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                                scale=scale, **kwargs)
            local.busy = True
            try:
                site, module = recorder._site_and_module()
                gqa = bool(kwargs.get("enable_gqa", False))
                # A call like one already settled (same site, tensors' shapes, strides and flags) is only counted.
                fast = (site, module, (flash(), efficient(), math(), cudnn(), deterministic()),
                        _sdpa_signature(query, key, value, attn_mask, dropout_p, is_causal, scale, gqa))
                hit = recorder.fast.get(fast)
                if hit is None or recorder.numerics or recorder.timing:
                    return recorder._sdpa_settle(original, (query, key, value, attn_mask, dropout_p, is_causal,
                                                            scale, kwargs), (site, module, gqa, fast[2], fast))
                out = original(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                               scale=scale, **kwargs)
                hit[0].count += 1
                recorder.seq += 1
                if hit[1] is not None:
                    try:
                        out.grad_fn.register_hook(hit[1])
                    except (AttributeError, RuntimeError):
                        pass
                return out
            finally:
                local.busy = False

        return scaled_dot_product_attention

    def _sdpa_settle(self, original: Any, call: tuple, where: tuple) -> Any:
        """Record a call not yet settled: its fields, what ran (by torch's own choice, else through the dispatch
        mode), the model's intent, numerics and timing."""
        q, k, v, attn_mask, dropout_p, is_causal, scale, kwargs = call
        site, module, gqa, flags, fast = where
        # Another module's call with the same tensors and flags (the next layer) has its fields and op already.
        shared = self.configs.get(fast[2:])
        if shared is None or self.numerics:
            fields, details = _sdpa_fields(q, k, v, attn_mask, dropout_p, is_causal, scale, gqa)
        else:
            fields, details = shared[0], dict(shared[1])
        key = (site, module, tuple(sorted(fields.items(), key=lambda kv: kv[0])), flags, str(q.device))
        if attn_mask is not None:
            # Read once per call key, when the record is written; --numerics checks every call's mask.
            rows = self.observed.get(("rows",) + key)
            if rows is None:
                rows = self.observed[("rows",) + key] = (Pending(_masked_rows(attn_mask)),)
            details["fully_masked_rows"] = rows[0]
        if shared is not None and not self.numerics:
            op = shared[2]
        else:
            op = None if self.numerics else sdpa_op_by_choice(q, k, v, attn_mask, dropout_p, is_causal, scale, gqa)
            if op is not None:
                self.configs[fast[2:]] = (fields, {name: value for name, value in details.items()
                                                   if name != "fully_masked_rows"}, op)
        chosen = op is not None
        timer = self._start_timer(q) if self.timing else None
        result = None
        if chosen:
            out = original(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale,
                           **kwargs)
        else:
            mode = _Observe.make()
            with mode:
                out = original(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale,
                               **kwargs)
            op, result = mode.seen[0] if mode.seen else ("", None)
        ran = backend_of(op) if op else "sdpa-math"
        note = "" if op else "no fused attention op was dispatched: the math fallback (matmul + softmax) ran"
        previous = self.observed.get(key)
        self.observed[key] = (op, previous[1] + 1 if previous and previous[0] == op else 1)
        entry = self._entry(site, module, "torch.nn.functional.scaled_dot_product_attention", fields, details,
                            op or "math decomposition (bmm, softmax)", ran, "forward", note)
        if entry.intent is None:
            entry.intent = model_intent(sys._getframe(1))
        settled = chosen or self.observed[key][1] >= OBSERVED_ENOUGH
        if settled and entry.fields == fields and entry.details == details:
            node = type(getattr(out, "grad_fn", None)).__name__
            counter = _BackwardCount(self, (site, module, entry.api, fields, details, _backward_op(op, node), ran,
                                            "backward")) if fields["train"] else None
            self.fast[fast] = (entry, counter)
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
            self._backward(out.grad_fn, site, module, entry.api, fields, details, op, ran)
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
            data["details"] = {k: v.read() if isinstance(v, Pending) else v for k, v in data["details"].items()}
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
        compiled = compiled_graphs() - self.compiled_at_start - self.own_graphs
        header: dict[str, Any] = {"pid": os.getpid(), "rank": os.environ.get("RANK"), "argv": list(sys.argv),
                                  "torch": torch.__version__, "cuda": torch.cuda.is_available(),
                                  "optimizer_steps": self.step, "numerics": self.numerics, "timing": self.timing,
                                  "compiled_graphs": compiled,
                                  "compiled_attention": sum(1 for e in self.entries.values()
                                                            if e.details.get("compiled"))}
        if torch.cuda.is_available():
            header["gpu"] = torch.cuda.get_device_name()
        if self.numerics and self.first_nonfinite:
            header["first_nonfinite"] = self.first_nonfinite
        header["notes"] = notes
        return header


