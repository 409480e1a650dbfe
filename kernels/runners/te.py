"""TransformerEngine's DotProductAttention, one backend forced at a time with the NVTE_* switches.

q, k and v go in exactly as the config lays them out (views into a fused QKV buffer included): TE reads the memory
layout from the strides (get_qkv_layout), which is where its layout misdetection lives. TE caches its backend
choice per input signature, not per environment, so the runner sets the switches, clears that cache, and reads
back which backend TE actually ran.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from attndoctor.environment import TE_SWITCHES as SWITCHES

from ..spec import CaseSpec, NotBuilt
from .base import Call, KernelRunner, NotExpressible, autograd_grads


MASK_TYPES = {
    "none": "no_mask", "causal": "causal", "causal-bottom-right": "causal_bottom_right", "padding": "padding",
    "padding-causal": "padding_causal", "padding-causal-bottom-right": "padding_causal_bottom_right",
    "arbitrary": "arbitrary",
}
SELECTED_KEYS = {"use_flash_attention": "FlashAttention", "use_fused_attention": "FusedAttention",
                 "use_unfused_attention": "UnfusedDotProductAttention"}


class TeRunner(KernelRunner):
    module = "transformer_engine.pytorch"
    distributions = ("transformer-engine", "transformer_engine", "transformer-engine-torch")
    library_modules = ("transformer_engine",)

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.switches = SWITCHES[backend]
        self._saved: dict[str, str | None] = {}

    def check(self, spec: CaseSpec, device: Any) -> None:
        if spec.softcap:
            raise NotExpressible("TransformerEngine's DotProductAttention has no softcap argument")
        if "bhsd" in (spec.layout.q_format, spec.layout.kv_format):
            raise NotBuilt("bhsd with TransformerEngine is not built yet")
        if spec.dtype == "fp8":
            raise NotBuilt("fp8 attention in TE needs an FP8 recipe (te.autocast); not built yet")

    # ---- switches

    def _apply_switches(self, spec: CaseSpec) -> None:
        wanted = dict(self.switches)
        wanted["NVTE_ALLOW_NONDETERMINISTIC_ALGO"] = "0" if spec.deterministic else None  # type: ignore[assignment]
        for key, value in wanted.items():
            self._saved.setdefault(key, os.environ.get(key))
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        for mod in list(sys.modules.values()):
            name = getattr(mod, "__name__", "") or ""
            if not name.startswith("transformer_engine"):
                continue
            cache = getattr(mod, "_attention_backends", None)
            if isinstance(cache, dict):
                cache["attention_params"] = None
                cache["backend_selection_requires_update"] = True
            for key, value in self.switches.items():  # TE 1.x read the switches once, at import
                attr = "_" + key
                if isinstance(getattr(mod, attr, None), int):
                    setattr(mod, attr, int(value))

    def restore(self) -> None:
        for key, value in self._saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved.clear()

    def selected(self) -> str:
        """Which backend TE ran last, from its selection cache (empty when the cache is not found)."""
        for mod in list(sys.modules.values()):
            name = getattr(mod, "__name__", "") or ""
            cache = getattr(mod, "_attention_backends", None) if name.startswith("transformer_engine") else None
            if isinstance(cache, dict):
                used = [label for key, label in SELECTED_KEYS.items() if cache.get(key)]
                if used:
                    sub = cache.get("fused_attention_backend")
                    return used[0] + (f" ({sub})" if used[0] == "FusedAttention" and sub is not None else "")
        return ""

    def probe(self, request: Any, context: Any) -> Any:
        try:
            return super().probe(request, context)
        finally:
            self.restore()

    # ---- the call

    def prepare(self, case: Any, layout: Any) -> Call:
        import torch
        import transformer_engine.pytorch as te

        from .. import data

        spec: CaseSpec = case.spec
        plan = spec.layout
        self._apply_switches(spec)
        thd = plan.q_format == "thd"
        mask_type = MASK_TYPES[spec.mask]
        if thd and "padding" not in mask_type:
            mask_type = {"no_mask": "padding", "causal": "padding_causal",
                         "causal_bottom_right": "padding_causal_bottom_right"}.get(mask_type, mask_type)
        qkv_format = plan.q_format if not plan.mixed else f"{plan.q_format}_2{plan.kv_format}"
        self_attention = spec.seqlen_q == spec.seqlen_kv and spec.lens_q == spec.lens_kv
        module_kwargs: dict[str, Any] = {
            "num_attention_heads": spec.heads,
            "kv_channels": spec.hdim if spec.hdim == spec.hdim_v else (spec.hdim, spec.hdim_v),
            "num_gqa_groups": spec.kv_heads,
            "attention_dropout": spec.dropout,
            "qkv_format": qkv_format,
            "attn_mask_type": mask_type,
            "attention_type": "self" if self_attention else "cross",
            "softmax_scale": spec.scale,
        }
        if spec.has_window:
            module_kwargs["window_size"] = spec.window
        dpa = te.DotProductAttention(**module_kwargs)
        if hasattr(dpa, "to"):
            dpa = dpa.to(case.device)
        fwd_kwargs: dict[str, Any] = {}
        if thd:
            fwd_kwargs.update(cu_seqlens_q=case.cu_seqlens("q"), cu_seqlens_kv=case.cu_seqlens("kv"),
                              max_seqlen_q=max(spec.lens_q), max_seqlen_kv=max(spec.lens_kv))
        elif spec.padded:
            q_rows = torch.arange(spec.seqlen_q, device=case.device)[None, :] >= torch.tensor(
                spec.lens_q, device=case.device)[:, None]
            kv_rows = torch.arange(spec.seqlen_kv, device=case.device)[None, :] >= torch.tensor(
                spec.lens_kv, device=case.device)[:, None]
            q_mask, kv_mask = q_rows[:, None, None, :], kv_rows[:, None, None, :]  # True = masked out
            fwd_kwargs["attention_mask"] = q_mask if self_attention else (q_mask, kv_mask)
        elif spec.arbitrary:
            fwd_kwargs["attention_mask"] = ~data.dense_mask(case)
        if spec.bias == "post-scale":
            fwd_kwargs.update(core_attention_bias_type="post_scale_bias", core_attention_bias=case.bias.to(case.dtype))
        elif spec.bias == "alibi":
            fwd_kwargs.update(core_attention_bias_type="alibi", alibi_slopes=case.slopes)
        out_format = plan.q_format
        dout_fmt = data.to_format(case.dout, out_format, spec.lens_q)
        heads, dv = spec.heads, spec.hdim_v
        details: dict[str, Any] = {"qkv_format": qkv_format, "attn_mask_type": mask_type}

        def forward() -> Any:
            self._apply_switches(spec)
            q, k, v = layout.qkv()
            out = dpa(q, k, v, **fwd_kwargs)
            if isinstance(out, (tuple, list)):
                out = out[0]
            details["te_selected"] = self.selected()
            return out

        return Call(forward=lambda: _split_heads(forward(), heads, dv), out_format=out_format, dout=dout_fmt,
                    grads_fn=autograd_grads(layout), reset_fn=layout.zero_grad, details=details)


def _split_heads(out: Any, heads: int, dv: int) -> Any:
    """TE returns [..., h * d]; the comparison wants [..., h, d] (a differentiable reshape)."""
    return out.reshape(*out.shape[:-1], heads, dv)
