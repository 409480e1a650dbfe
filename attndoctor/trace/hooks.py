"""The recorder's hooks on the attention entry points other than SDPA: FlexAttention, flash-attn 2/3/4 and the Hub
kernels loaded through `kernels`, vLLM's flash-attn, torch.nn.attention.varlen, TransformerEngine, and transformers'
flex and eager attention functions."""

from __future__ import annotations

import sys
from typing import Any

from .compiled import compiled_graphs, compiling
from .fields import (_flash_fields, _flex_fields, _mask_kind, _sdpa_fields, _te_backend, _te_fields, hub_library,
                     varlen_fields)
from .intent import model_intent

FLASH_MODULES = {"flash_attn": "flash-attn-2", "flash_attn.flash_attn_interface": "flash-attn-2",
                 "flash_attn_interface": "flash-attn-3", "flash_attn.cute": "flash-attn-4",
                 "flash_attn.cute.interface": "flash-attn-4",
                 "vllm.vllm_flash_attn": "vllm-flash-attn", "vllm.vllm_flash_attn.flash_attn_interface":
                 "vllm-flash-attn"}
"""Modules whose flash-attn functions are wrapped, and the library they are (vLLM's fork picks 2 or 3 per call)."""
FLASH_FUNCTIONS = ("flash_attn_func", "flash_attn_varlen_func", "flash_attn_kvpacked_func",
                   "flash_attn_qkvpacked_func", "flash_attn_varlen_kvpacked_func",
                   "flash_attn_varlen_qkvpacked_func", "flash_attn_with_kvcache")
KERNEL_LOADERS = ("get_kernel", "get_local_kernel", "load_kernel", "get_kernel_with_resolver")
"""`kernels` functions that return a Hub kernel's module (kernels 0.17: kernels/load.py)."""


class LibraryHooks:
    """Wrappers for the attention entry points of libraries, mixed into the Recorder."""

    def on_import(self, name: str) -> None:
        """Wrap the entry points a module just imported holds (called by the import watcher and at install)."""
        module = sys.modules.get(name)
        if module is None or name in self.wrapped:
            return
        if name == "torch.nn.attention.flex_attention":
            self._patch(module, "flex_attention", self._wrap_flex)
        elif name == "torch.nn.attention.varlen":
            self._patch(module, "varlen_attn", self._wrap_varlen)
        elif name in FLASH_MODULES:
            self._wrap_flash_module(module, name, FLASH_MODULES[name])
        elif name in ("kernels", "kernels.load"):
            for attr in KERNEL_LOADERS:
                self._patch(module, attr, self._wrap_kernel_loader, f"{name}.{attr}")
            self._wrap_loaded_kernels()
        elif name == "transformer_engine.pytorch":
            cls = getattr(module, "DotProductAttention", None)
            if cls is not None:
                self._patch(cls, "forward", self._wrap_te, "transformer_engine.pytorch.DotProductAttention.forward")
        elif name == "transformers.modeling_utils":
            self._wrap_transformers_flex(module)
        elif name.startswith("transformers.models.") and ".modeling_" in name:
            self._patch(module, "eager_attention_forward", self._wrap_hf_eager, f"{name}.eager_attention_forward")
        elif name in ("torch._dynamo.output_graph",):
            self._watch_graphs(module)
        else:
            return
        self.wrapped.add(name)

    def _wrap_flash_module(self, module: Any, name: str, library: str) -> None:
        for attr in FLASH_FUNCTIONS:
            self._patch(module, attr, lambda orig, label, lib=library: self._wrap_flash(orig, label, lib),
                        f"{name}.{attr}")

    def _wrap_loaded_kernels(self) -> None:
        """Hub kernels loaded before the trace started (kernels keeps them in importer._loaded_kernels)."""
        loaded = getattr(sys.modules.get("kernels.importer"), "_loaded_kernels", None)
        for kernel in list(loaded.values()) if isinstance(loaded, dict) else []:
            repo = getattr(getattr(kernel, "repo_info", None), "repo_id", None) or getattr(
                getattr(kernel, "metadata", None), "id", "")
            self._wrap_hub_module(getattr(kernel, "module", None), str(repo))

    def _wrap_hub_module(self, module: Any, repo: str) -> None:
        library = hub_library(repo) or hub_library(getattr(module, "__name__", ""))
        if library and module is not None:
            for part, suffix in ((module, ""), (getattr(module, "flash_attn_interface", None),
                                                ".flash_attn_interface")):
                if part is not None:
                    self._wrap_flash_module(part, f"{repo}{suffix}", library)

    def _wrap_kernel_loader(self, original: Any, label: str) -> Any:
        recorder = self

        def load(*args: Any, **kwargs: Any) -> Any:
            module = original(*args, **kwargs)
            recorder._wrap_hub_module(module, str(kwargs.get("repo_id", args[0] if args else "") or ""))
            return module

        return load

    def _wrap_transformers_flex(self, module: Any) -> None:
        interface = getattr(module, "ALL_ATTENTION_FUNCTIONS", None)
        mapping = getattr(type(interface), "_global_mapping", None) if interface is not None else None
        if isinstance(mapping, dict) and "flex_attention" in mapping:
            self._patch(_ItemOwner(mapping), "flex_attention", self._wrap_hf_flex,
                        "transformers ALL_ATTENTION_FUNCTIONS['flex_attention']")

    # ------------------------------------------------------------ FlexAttention, flash-attn, TE, transformers

    def _wrap_flex(self, original: Any, label: str) -> Any:
        recorder = self

        def flex_attention(query: Any, key: Any, value: Any, score_mod: Any = None, block_mask: Any = None,
                           *args: Any, **kwargs: Any) -> Any:
            if compiling() or getattr(recorder.local, "busy", False):
                return original(query, key, value, score_mod, block_mask, *args, **kwargs)
            recorder.local.busy = True
            try:
                site, module = recorder._site_and_module()
                graphs = compiled_graphs()
                out = original(query, key, value, score_mod, block_mask, *args, **kwargs)
                # flex_attention compiles its own graph even in eager mode: not the user's torch.compile
                recorder.own_graphs += compiled_graphs() - graphs
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
            if compiling() or getattr(recorder.local, "busy", False):
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
            if compiling():
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
            if compiling() or getattr(recorder.local, "busy", False):
                return original(*args, **kwargs)
            recorder.local.busy = True
            try:
                site, module = recorder._site_and_module()
                out = original(*args, **kwargs)
                fields, details = _flash_fields(function, args, kwargs)
                ran = library
                if library == "vllm-flash-attn":  # vLLM's fork runs FA2 or FA3 by its fa_version argument
                    ran = f"flash-attn-{kwargs.get('fa_version', 2)}"
                    details["fork"] = "vllm_flash_attn"
                recorder._seen(out, site, module, label, fields, details, f"{library} {function}", ran,
                               f"{library} {function} backward")
                return out
            finally:
                recorder.local.busy = False

        return flash_attn_call

    def _wrap_varlen(self, original: Any, label: str) -> Any:
        recorder = self

        def varlen_attn(*args: Any, **kwargs: Any) -> Any:
            if compiling() or getattr(recorder.local, "busy", False):
                return original(*args, **kwargs)
            recorder.local.busy = True
            try:
                site, module = recorder._site_and_module()
                out = original(*args, **kwargs)
                fields, details = varlen_fields(args, kwargs)
                # torch's varlen_attn calls aten._flash_attention_forward (its cuDNN branch is switched off in
                # torch 2.13: _should_use_cudnn returns False)
                recorder._seen(out, site, module, "torch.nn.attention.varlen.varlen_attn", fields, details,
                               "aten._flash_attention_forward (torch_attn::_varlen_attn)", "sdpa-flash",
                               "aten._flash_attention_backward")
                return out
            finally:
                recorder.local.busy = False

        return varlen_attn

    def _wrap_te(self, original: Any, label: str) -> Any:
        recorder = self

        def forward(this: Any, query_layer: Any, key_layer: Any, value_layer: Any, *args: Any, **kwargs: Any) -> Any:
            if compiling() or getattr(recorder.local, "busy", False):
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


class _ItemOwner:
    """A dict seen as an object with attributes, so one key of it can be wrapped and put back like an attribute."""

    def __init__(self, mapping: dict) -> None:
        object.__setattr__(self, "_mapping", mapping)
        object.__setattr__(self, "__name__", "mapping")

    def __getattr__(self, name: str) -> Any:
        return self._mapping.get(name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._mapping[name] = value

