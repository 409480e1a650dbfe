"""PyTorch FlexAttention (torch.nn.attention.flex_attention, torch >= 2.5), called explicitly as users call it.

Masks become a BlockMask from a mask_mod (causal top-left or bottom-right, sliding windows, key padding per
sequence, an arbitrary boolean mask read from a tensor); softcap, ALiBi and a post-scale bias become a score_mod.
Packed sequences (thd) run as one sequence of all tokens with a document mask, the way FlexAttention takes them.
Dropout has no argument in flex_attention: not expressible.

flex_attention is fast only under torch.compile (eager materialises the whole score matrix), so on CUDA the runner
compiles it (`ATTNDOCTOR_FLEX_COMPILE=0` runs eager, `=1` compiles on any device); each compiled function is kept
per shape signature for the life of the worker, and Dynamo's recompile limit is raised so a sweep never falls back
to eager silently. A Triton kernel that does not fit the GPU's shared memory is a refusal (outcomes.py).
"""

from __future__ import annotations

import os
from typing import Any

from ..spec import CaseSpec
from .base import Call, KernelRunner, NotExpressible, autograd_grads, bhsd_to, to_bhsd

BACKEND = "flex-attention"
_COMPILED: dict[tuple[Any, ...], Any] = {}
RECOMPILE_LIMIT = 4096


class FlexRunner(KernelRunner):
    backend = BACKEND
    module = "torch.nn.attention.flex_attention"
    distributions = ("torch",)
    library_modules = ("torch",)

    def installed(self) -> tuple[bool, str]:
        ok, version = super().installed()
        if not ok:
            return ok, f"torch has no torch.nn.attention.flex_attention (torch >= 2.5): {version}"
        import torch

        return True, torch.__version__

    def check(self, spec: CaseSpec, device: Any) -> None:
        if spec.dropout:
            raise NotExpressible("flex_attention has no dropout argument (dropout {})".format(spec.dropout))
        plan = spec.layout
        if "thd" in (plan.q_format, plan.kv_format) and plan.q_format != plan.kv_format:
            raise NotExpressible("mixed thd and padded formats: FlexAttention takes one packed sequence for q, k "
                                 "and v alike")

    def compiled(self, device: Any) -> bool:
        """Whether flex_attention runs under torch.compile here: on CUDA unless ATTNDOCTOR_FLEX_COMPILE says."""
        choice = os.environ.get("ATTNDOCTOR_FLEX_COMPILE", "")
        if choice in ("0", "1"):
            return choice == "1"
        return getattr(device, "type", str(device)) == "cuda"

    def prepare(self, case: Any, layout: Any) -> Call:
        import torch
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention

        from .. import data

        spec: CaseSpec = case.spec
        plan = spec.layout
        packed = plan.q_format == "thd"
        mask_mod, per_batch = _mask_mod(case, packed)
        score_mod = _score_mod(case, packed)
        rows_q = spec.total_q if packed else spec.seqlen_q
        rows_kv = spec.total_kv if packed else spec.seqlen_kv
        block_mask = None
        if mask_mod is not None:
            block_mask = create_block_mask(mask_mod, spec.batch if per_batch else None, None, rows_q, rows_kv,
                                           device=str(case.device))
        compile_it = self.compiled(case.device)
        fn = _eager_static if not compile_it else flex_attention
        if compile_it:
            key = (str(case.device), spec.dtype, spec.train, spec.hdim, spec.hdim_v, spec.heads, spec.kv_heads,
                   packed, mask_mod is not None, score_mod is not None)
            fn = _COMPILED.get(key)
            if fn is None:
                import torch._dynamo

                for name in ("recompile_limit", "cache_size_limit"):
                    if hasattr(torch._dynamo.config, name) and getattr(torch._dynamo.config, name) < RECOMPILE_LIMIT:
                        setattr(torch._dynamo.config, name, RECOMPILE_LIMIT)
                fn = _COMPILED[key] = torch.compile(flex_attention, dynamic=False)
        kwargs: dict[str, Any] = {"scale": spec.scale}
        if score_mod is not None:
            kwargs["score_mod"] = score_mod
        if block_mask is not None:
            kwargs["block_mask"] = block_mask
        if spec.heads != spec.kv_heads:
            kwargs["enable_gqa"] = True
        out_format = plan.q_format
        if packed:
            dout = data.to_format(case.dout, "thd", spec.lens_q)
        else:
            dout = bhsd_to(data.to_format(case.dout, "bhsd", spec.lens_q), out_format)

        def view(x: Any, fmt: str) -> Any:
            if fmt == "thd":
                return x.transpose(0, 1).unsqueeze(0)  # (T, H, D) -> (1, H, T, D)
            return to_bhsd(x, fmt)

        def forward() -> Any:
            q, k, v = layout.qkv()
            out = fn(view(q, plan.q_format), view(k, plan.kv_format), view(v, plan.kv_format), **kwargs)
            if packed:
                return out[0].transpose(0, 1)
            return bhsd_to(out, out_format)

        details = {"compiled": compile_it, "mask": _describe(spec, packed, block_mask),
                   "score_mod": _describe_score(spec)}
        return Call(forward=forward, out_format=out_format, dout=dout, grads_fn=autograd_grads(layout),
                    reset_fn=layout.zero_grad, details=details)


def _mask_mod(case: Any, packed: bool) -> tuple[Any, bool]:
    """(mask_mod or None, whether it differs per batch entry): True = attend, as data.allowed_block defines it."""
    import torch

    spec: CaseSpec = case.spec
    dev = case.device
    if not (spec.causal or spec.has_window or spec.padded or case.arbitrary is not None):
        return None, False
    lens_q = torch.tensor(spec.lens_q, device=dev)
    lens_kv = torch.tensor(spec.lens_kv, device=dev)
    shift = lens_kv - lens_q  # bottom-right alignment, per sequence
    causal, window, align = spec.causal, spec.window, spec.window_align
    arbitrary = case.arbitrary
    if packed:
        doc_q = torch.repeat_interleave(torch.arange(spec.batch, device=dev), lens_q)
        doc_kv = torch.repeat_interleave(torch.arange(spec.batch, device=dev), lens_kv)
        start_q = torch.cumsum(lens_q, 0) - lens_q
        start_kv = torch.cumsum(lens_kv, 0) - lens_kv

    def allowed(b: Any, i: Any, j: Any) -> Any:
        """Within one sequence b: query row i, key j."""
        ok = j < lens_kv[b]
        if causal == "top-left":
            ok = ok & (j <= i)
        elif causal == "bottom-right":
            ok = ok & (j <= i + shift[b])
        if window != (-1, -1):
            off = 0 if align == "top-left" else shift[b]
            if window[0] >= 0:
                ok = ok & (j >= i + off - window[0])
            if window[1] >= 0:
                ok = ok & (j <= i + off + window[1])
        if arbitrary is not None:
            ok = ok & arbitrary[b, 0, i, j]
        return ok

    if packed:
        def document_mask(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
            d = doc_q[q_idx]
            # a key's index within its own document, so that the arbitrary mask is read in range even for keys of
            # another document, which the document test hides
            return (doc_kv[kv_idx] == d) & allowed(d, q_idx - start_q[d], kv_idx - start_kv[doc_kv[kv_idx]])
        return document_mask, False

    def mask(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        return allowed(b, q_idx, kv_idx)

    return mask, bool(spec.padded or arbitrary is not None)


def _score_mod(case: Any, packed: bool) -> Any:
    """score_mod for softcap (before the bias, as the reference), ALiBi and a post-scale bias, or None."""
    import torch

    spec: CaseSpec = case.spec
    cap = spec.softcap
    bias = case.bias
    slopes = case.slopes
    if not cap and bias is None and slopes is None:
        return None
    dev = case.device
    lens_q = torch.tensor(spec.lens_q, device=dev)
    lens_kv = torch.tensor(spec.lens_kv, device=dev)
    if packed:
        doc_q = torch.repeat_interleave(torch.arange(spec.batch, device=dev), lens_q)
        start_q = torch.cumsum(lens_q, 0) - lens_q
        start_kv = torch.cumsum(lens_kv, 0) - lens_kv
        doc_kv = torch.repeat_interleave(torch.arange(spec.batch, device=dev), lens_kv)

    def score_mod(score: Any, b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        if cap:
            score = torch.tanh(score / cap) * cap
        if packed:
            d = doc_q[q_idx]
            # a key's index within its own document: in range even for keys the document mask hides
            i = q_idx - start_q[d]
            j = (kv_idx - start_kv[doc_kv[kv_idx]])
        else:
            d, i, j = b, q_idx, kv_idx
        if bias is not None:
            score = score + bias[0, h, i, j]
        elif slopes is not None:
            dist = (i + lens_kv[d] - lens_q[d] - j).abs()
            score = score - slopes[h] * dist
        return score

    return score_mod


def _describe(spec: CaseSpec, packed: bool, block_mask: Any) -> str:
    if block_mask is None:
        return "none"
    parts = ["documents" if packed else "", spec.causal or "", "window" if spec.has_window else "",
             "padding" if spec.padded and not packed else "", "arbitrary" if spec.arbitrary else ""]
    return "BlockMask " + "+".join(p for p in parts if p)


def _describe_score(spec: CaseSpec) -> str:
    parts = [f"softcap {spec.softcap:g}" if spec.softcap else "", spec.bias if spec.bias != "none" else ""]
    return "+".join(p for p in parts if p) or "none"


def _eager_static(*args: Any, **kwargs: Any) -> Any:
    """flex_attention outside torch.compile, each shape traced as itself: eager flex_attention is traced by dynamo
    internally, and once a second shape is seen automatic dynamic shapes make torch 2.15 fail some calls (a packed
    layout with alibi and softcap) that run when traced static."""
    import torch._dynamo
    from torch.nn.attention.flex_attention import flex_attention

    with torch._dynamo.config.patch(automatic_dynamic_shapes=False):
        return flex_attention(*args, **kwargs)
