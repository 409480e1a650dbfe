"""flash-attn 2, 3 and 4 through their public functions: flash_attn_func on (B, S, H, D) tensors, and
flash_attn_varlen_func on packed tokens for thd and padding masks (the way users unpad for flash-attn).

Arguments a config does not use are not passed, so an older release without them still runs the configs it can;
an argument the installed release lacks shows as an api-mismatch (TypeError from the call).
"""

from __future__ import annotations

from typing import Any

from ..spec import CaseSpec, bshd_view
from .base import Call, KernelRunner, NotExpressible, autograd_grads, pack_tokens

VARIANTS = {
    # backend: (module, distributions, has dropout, has alibi, window style)
    "flash-attn-2": ("flash_attn", ("flash-attn", "flash_attn"), True, True, "tuple"),
    "flash-attn-3": ("flash_attn_interface", ("flash-attn-3", "flash_attn_3", "flashattn-hopper"), False, False,
                     "tuple"),
    "flash-attn-4": ("flash_attn.cute", ("flash-attn-4",), False, False, "none-tuple"),
}


class FlashAttnRunner(KernelRunner):
    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.module, self.distributions, self.dropout, self.alibi, self.window_style = VARIANTS[backend]
        self.library_modules = (self.module, self.module.split(".")[0])

    def check(self, spec: CaseSpec, device: Any) -> None:
        if spec.arbitrary:
            raise NotExpressible("flash-attn takes no attention mask (only causal, window and varlen lengths)")
        if spec.bias == "post-scale":
            raise NotExpressible("flash-attn takes no bias tensor")
        if spec.bias == "alibi" and not self.alibi:
            raise NotExpressible(f"{self.backend} has no alibi_slopes argument")
        if spec.dropout and not self.dropout:
            raise NotExpressible(f"{self.backend} has no dropout argument")

    def installed(self) -> tuple[bool, str]:
        ok, version = super().installed()
        if not ok:
            return ok, version
        import importlib

        if not hasattr(importlib.import_module(self.module), "flash_attn_func"):
            return False, (f"{self.module} imports but has no flash_attn_func (a namespace left by another "
                           "flash-attn package?)")
        return True, version

    def _functions(self) -> tuple[Any, Any]:
        import importlib

        mod = importlib.import_module(self.module)
        return getattr(mod, "flash_attn_func"), getattr(mod, "flash_attn_varlen_func", None)

    def prepare(self, case: Any, layout: Any) -> Call:
        import torch

        from .. import data

        spec: CaseSpec = case.spec
        plan = spec.layout
        func, varlen = self._functions()
        kwargs: dict[str, Any] = {"softmax_scale": spec.scale}
        if spec.causal is not None:
            # top-left with seqlen_q != seqlen_kv too (with or without a window): causal=True is how users ask for
            # it, and the output against the top-left reference shows what they get
            kwargs["causal"] = True
        if spec.dropout:
            kwargs["dropout_p"] = spec.dropout
        if spec.has_window:
            left, right = spec.window
            if spec.causal is not None:
                right = 0
            if self.window_style == "tuple":
                kwargs["window_size"] = (left, right)
            else:
                kwargs["window_size"] = (None if left < 0 else left, None if right < 0 else right)
        if spec.softcap:
            kwargs["softcap"] = spec.softcap
        if spec.bias == "alibi":
            kwargs["alibi_slopes"] = case.slopes
        if spec.deterministic:
            kwargs["deterministic"] = True
        use_varlen = spec.padded
        if use_varlen and varlen is None:
            raise NotExpressible(f"{self.module} has no flash_attn_varlen_func")
        cu_q, cu_kv = case.cu_seqlens("q"), case.cu_seqlens("kv")
        max_q, max_kv = max(spec.lens_q), max(spec.lens_kv)

        def tokens(x: Any, fmt: str, lens: tuple[int, ...]) -> Any:
            return x if fmt == "thd" else pack_tokens(bshd_view(x, fmt), lens)

        def first(result: Any) -> Any:
            return result[0] if isinstance(result, (tuple, list)) else result

        if use_varlen:
            dout = data.to_format(case.dout, "thd", spec.lens_q)

            def forward() -> Any:
                q, k, v = layout.qkv()
                q = tokens(q, plan.q_format, spec.lens_q)
                k = tokens(k, plan.kv_format, spec.lens_kv)
                v = tokens(v, plan.kv_format, spec.lens_kv)
                if self.backend == "flash-attn-4":
                    out = varlen(q, k, v, cu_seqlens_q=cu_q, cu_seqlens_k=cu_kv, max_seqlen_q=max_q,
                                 max_seqlen_k=max_kv, **kwargs)
                else:
                    out = varlen(q, k, v, cu_q, cu_kv, max_q, max_kv, **kwargs)
                return first(out)

            return Call(forward=forward, out_format="thd", dout=dout, grads_fn=autograd_grads(layout),
                        reset_fn=layout.zero_grad, details={"function": "flash_attn_varlen_func"})

        dout = case.dout

        def forward() -> Any:
            q, k, v = layout.qkv()
            out = func(bshd_view(q, plan.q_format), bshd_view(k, plan.kv_format), bshd_view(v, plan.kv_format),
                       **kwargs)
            return first(out)

        del torch
        return Call(forward=forward, out_format="bshd", dout=dout, grads_fn=autograd_grads(layout),
                    reset_fn=layout.zero_grad, details={"function": "flash_attn_func"})
