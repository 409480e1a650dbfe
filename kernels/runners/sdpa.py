"""PyTorch scaled_dot_product_attention, one backend forced at a time through torch.nn.attention.sdpa_kernel.

Masks go the way users pass them: `is_causal` for top-left causal, `causal_lower_right` for bottom-right, a key
padding mask (B, 1, 1, Skv) for padding, and an explicit boolean (or, with a bias, additive float) `attn_mask`
for everything else (sliding windows included: SDPA has no window argument). thd runs through nested (jagged)
tensors, as SDPA takes packed sequences; there is_causal is the only mask, and the flash kernel aligns it to the
bottom right (so it stands for a bottom-right causal mask there). The reason SDPA refuses a backend comes as warnings, which the probe
records (a fresh catch_warnings with simplefilter("always"), since SDPA warns once per call site).
"""

from __future__ import annotations

import contextlib
from typing import Any

from ..spec import CaseSpec, NotBuilt
from .base import Call, KernelRunner, NotExpressible, autograd_grads, bhsd_to, to_bhsd

SDPA_BACKENDS = {
    "sdpa-flash": "FLASH_ATTENTION",
    "sdpa-efficient": "EFFICIENT_ATTENTION",
    "sdpa-cudnn": "CUDNN_ATTENTION",
    "sdpa-math": "MATH",
}


class SdpaRunner(KernelRunner):
    module = "torch"
    distributions = ("torch",)
    library_modules = ("torch",)

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.member = SDPA_BACKENDS[backend]

    def installed(self) -> tuple[bool, str]:
        ok, version = super().installed()
        if not ok:
            return ok, version
        try:
            from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: F401
        except ImportError as exc:
            return False, f"torch {version} has no torch.nn.attention.sdpa_kernel ({exc})"
        if not hasattr(SDPBackend, self.member):
            return False, f"torch {version} has no SDPBackend.{self.member}"
        import torch

        return True, torch.__version__

    def context_manager(self, spec: CaseSpec) -> Any:
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel

        stack = contextlib.ExitStack()
        stack.enter_context(sdpa_kernel([getattr(SDPBackend, self.member)]))
        if spec.deterministic:
            stack.enter_context(_deterministic(torch))
        return stack

    def check(self, spec: CaseSpec, device: Any) -> None:
        if spec.softcap:
            raise NotExpressible("F.scaled_dot_product_attention has no softcap argument")
        plan = spec.layout
        if "thd" in (plan.q_format, plan.kv_format):
            if plan.q_format != plan.kv_format:
                raise NotBuilt("mixed thd and padded formats are not built for SDPA")
            if spec.arbitrary or spec.has_window or spec.bias != "none":
                raise NotExpressible("SDPA on nested (jagged) tensors takes no attn_mask, so no window, arbitrary "
                                     "mask or bias")
            if spec.causal == "bottom-right" and spec.lens_q != spec.lens_kv and self.backend != "sdpa-flash":
                raise NotExpressible("SDPA on nested tensors has only is_causal, top-left outside the flash kernel")

    def prepare(self, case: Any, layout: Any) -> Call:
        spec: CaseSpec = case.spec
        if spec.layout.q_format == "thd":
            return self._prepare_nested(case, layout)
        import torch
        import torch.nn.functional as F

        from .. import data

        kwargs: dict[str, Any] = {"dropout_p": spec.dropout, "scale": spec.scale}
        if spec.heads != spec.kv_heads:
            kwargs["enable_gqa"] = True
        bias = data.additive_bias(case)
        explicit = spec.padded or spec.arbitrary or spec.has_window
        if bias is not None:
            allowed = data.dense_mask(case)
            kwargs["attn_mask"] = bias.to(case.dtype).masked_fill(~allowed, float("-inf"))
        elif explicit:
            if spec.padded and spec.causal is None and not spec.arbitrary and not spec.has_window:
                keys = torch.arange(spec.seqlen_kv, device=case.device)[None, :]
                lens = torch.tensor(spec.lens_kv, device=case.device)[:, None]
                kwargs["attn_mask"] = (keys < lens)[:, None, None, :]
            else:
                kwargs["attn_mask"] = data.dense_mask(case)
        elif spec.causal == "top-left":
            kwargs["is_causal"] = True
        elif spec.causal == "bottom-right":
            from torch.nn.attention.bias import causal_lower_right

            kwargs["attn_mask"] = causal_lower_right(spec.seqlen_q, spec.seqlen_kv)
        plan = spec.layout
        dout = data.to_format(case.dout, "bhsd", spec.lens_q)
        out_format = plan.q_format

        def forward() -> Any:
            q, k, v = layout.qkv()
            out = F.scaled_dot_product_attention(to_bhsd(q, plan.q_format), to_bhsd(k, plan.kv_format),
                                                 to_bhsd(v, plan.kv_format), **kwargs)
            return bhsd_to(out, out_format)

        details = {"mask": _describe_mask(kwargs)}
        return Call(forward=forward, out_format=out_format, dout=bhsd_to(dout, out_format),
                    grads_fn=autograd_grads(layout), reset_fn=layout.zero_grad, details=details)

    def _prepare_nested(self, case: Any, layout: Any) -> Call:
        import torch
        import torch.nn.functional as F

        from .. import data

        spec: CaseSpec = case.spec
        kwargs: dict[str, Any] = {"dropout_p": spec.dropout, "scale": spec.scale}
        if spec.causal is not None:
            kwargs["is_causal"] = True
        if spec.heads != spec.kv_heads:
            kwargs["enable_gqa"] = True
        off_q = case.cu_seqlens("q").long()
        off_kv = off_q if spec.lens_q == spec.lens_kv else case.cu_seqlens("kv").long()
        dout = data.to_format(case.dout, "thd", spec.lens_q)

        def forward() -> Any:
            q, k, v = layout.qkv()
            nq = torch.nested.nested_tensor_from_jagged(q, off_q).transpose(1, 2)
            nk = torch.nested.nested_tensor_from_jagged(k, off_kv).transpose(1, 2)
            nv = torch.nested.nested_tensor_from_jagged(v, off_kv).transpose(1, 2)
            out = F.scaled_dot_product_attention(nq, nk, nv, **kwargs)
            return out.transpose(1, 2).values()

        return Call(forward=forward, out_format="thd", dout=dout, grads_fn=autograd_grads(layout),
                    reset_fn=layout.zero_grad, details={"mask": "nested tensors" + (" is_causal" if spec.causal
                                                                                     else "")})


@contextlib.contextmanager
def _deterministic(torch: Any) -> Any:
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before)


def _describe_mask(kwargs: dict[str, Any]) -> str:
    if kwargs.get("is_causal"):
        return "is_causal=True"
    mask = kwargs.get("attn_mask")
    if mask is None:
        return "none"
    if type(mask).__name__ == "CausalBias":
        return "causal_lower_right"
    return f"attn_mask {str(mask.dtype).replace('torch.', '')} {tuple(mask.shape)}"
