"""cuDNN SDPA through cudnn-frontend's Python graph API: a forward graph (with stats when training) and a
backward graph, each validated, built and executed on the config's tensors with their real strides.

q, k and v are declared as (B, H, S, D) tensors with the strides of the config's layout (views into a fused
buffer keep the buffer's strides), outputs and gradients are written into NaN-filled buffers of the same layout,
padding runs through seq_len tensors, thd through ragged offsets.
"""

from __future__ import annotations

import re
from typing import Any

from ..spec import CaseSpec, NotBuilt
from .base import Call, KernelRunner, bhsd_to, to_bhsd


def stats_argument(version: str, train: bool) -> dict[str, bool]:
    """How pygraph.sdpa is told to emit the softmax stats a backward needs: is_inference before cudnn-frontend 1.13,
    generate_stats from 1.13 (python/pygraph/sdpa.cpp@v1.12.0 and @v1.13.0)."""
    parts = [int(p) for p in re.findall(r"\d+", str(version))[:2]]
    if len(parts) == 2 and tuple(parts) < (1, 13):
        return {"is_inference": not train}
    return {"generate_stats": train}


class CudnnFeRunner(KernelRunner):
    backend = "cudnn-fe"
    module = "cudnn"
    distributions = ("nvidia-cudnn-frontend",)
    library_modules = ("cudnn",)

    def __init__(self) -> None:
        self._handle = None

    def version(self) -> str:
        fe = super().version()
        try:
            import cudnn

            backend = cudnn.backend_version()
        except Exception:  # noqa: BLE001
            backend = None
        return f"{fe} (cuDNN {backend})" if backend is not None else fe

    def check(self, spec: CaseSpec, device: Any) -> None:
        if getattr(device, "type", str(device)) != "cuda":
            raise NotBuilt("cudnn-frontend runs on CUDA devices only")
        if spec.softcap:
            raise NotBuilt("softcap needs a score_mod graph (tanh) in cudnn-frontend; not built here")
        if spec.arbitrary:
            raise NotBuilt("an arbitrary mask needs an additive -inf bias or a score_mod in cudnn-frontend; "
                           "not built here")
        if spec.bias == "alibi":
            raise NotBuilt("cuDNN's use_alibi_mask computes its own slopes; not compared here")
        if spec.dtype not in ("bf16", "fp16"):
            raise NotBuilt(f"{spec.dtype} runs through cudnn-frontend's sdpa_fp8 graphs, not built here")
        plan = spec.layout
        if plan.mixed and "thd" in (plan.q_format, plan.kv_format):
            raise NotBuilt("mixed thd and padded formats are not built for cudnn-frontend")

    def handle(self) -> Any:
        import cudnn

        if self._handle is None:
            self._handle = cudnn.create_handle()
        return self._handle

    def prepare(self, case: Any, layout: Any) -> Call:
        import cudnn
        import torch

        from .. import data

        spec: CaseSpec = case.spec
        plan = spec.layout
        thd = plan.q_format == "thd"
        handle = self.handle()
        stream = torch.cuda.current_stream().cuda_stream
        cudnn.set_stream(handle=handle, stream=stream)
        io = {torch.bfloat16: cudnn.data_type.BFLOAT16, torch.float16: cudnn.data_type.HALF}[case.dtype]
        b, h, hk, sq, sk, d, dv = (spec.batch, spec.heads, spec.kv_heads, spec.seqlen_q, spec.seqlen_kv, spec.hdim,
                                   spec.hdim_v)
        q, k, v = (x.detach() for x in layout.qkv())

        def declare(graph: Any, name: str, x: Any, fmt: str, seqlen: int, heads: int) -> Any:
            """A graph tensor (B, H, S, D) for a format tensor; thd gets dims [B, H, Smax, D] and a ragged offset."""
            if fmt == "thd":
                tok, head = x.stride(0), x.stride(1)
                return graph.tensor(name=name, dim=[b, heads, seqlen, x.shape[-1]],
                                    stride=[seqlen * tok, head, tok, 1], data_type=io)
            view = to_bhsd(x, fmt)
            return graph.tensor(name=name, dim=list(view.shape), stride=list(view.stride()), data_type=io)

        def api(x: Any, fmt: str) -> Any:
            return x if fmt == "thd" else to_bhsd(x, fmt)

        def output(graph: Any, pack: dict[Any, Any], t: Any, x: Any, fmt: str, seqlen: int, heads: int,
                   which: str, name: str) -> None:
            """Mark a graph tensor as an output written into buffer x, laid out as `declare` lays out inputs."""
            if fmt == "thd":
                tok = x.stride(0)
                t.set_output(True).set_dim([b, heads, seqlen, x.shape[-1]]).set_stride(
                    [seqlen * tok, x.stride(1), tok, 1]).set_data_type(io)
                rt, rv = ragged(graph, name, x, which)
                t.set_ragged_offset(rt)
                pack[rt] = rv
                pack[t] = x
            else:
                view = to_bhsd(x, fmt)
                t.set_output(True).set_dim(list(view.shape)).set_stride(list(view.stride())).set_data_type(io)
                pack[t] = view

        # outputs: O in q's format, poisoned; gradients in the leaves' layout, poisoned
        o_fmt = plan.q_format
        if thd:
            o_buf = torch.full((spec.total_q, h, dv), float("nan"), dtype=case.dtype, device=case.device)
        else:
            shape = {"bshd": (b, sq, h, dv), "sbhd": (sq, b, h, dv), "bhsd": (b, h, sq, dv)}[o_fmt]
            o_buf = torch.full(shape, float("nan"), dtype=case.dtype, device=case.device)
        stats = torch.full((b, h, sq, 1), float("nan"), dtype=torch.float32, device=case.device)
        seq_q = torch.tensor(spec.lens_q, dtype=torch.int32, device=case.device).view(b, 1, 1, 1)
        seq_kv = torch.tensor(spec.lens_kv, dtype=torch.int32, device=case.device).view(b, 1, 1, 1)
        seed = torch.full((1, 1, 1, 1), 123457, dtype=torch.int64, device=case.device)
        offset = torch.full((1, 1, 1, 1), 1, dtype=torch.int64, device=case.device)
        bias = case.bias.to(case.dtype) if case.bias is not None else None

        def ragged(graph: Any, name: str, x: Any, which: str) -> tuple[Any, Any]:
            cu = case.cu_seqlens(which).long() * x.stride(0)
            t = graph.tensor(name=name, dim=[b + 1, 1, 1, 1], stride=[1, 1, 1, 1], data_type=cudnn.data_type.INT64)
            return t, cu.view(b + 1, 1, 1, 1)

        def options(graph: Any, pack: dict) -> dict[str, Any]:
            kw: dict[str, Any] = {"attn_scale": spec.scale}
            if spec.causal == "top-left":
                kw["use_causal_mask"] = True
            elif spec.causal == "bottom-right":
                kw["use_causal_mask_bottom_right"] = True
            if spec.has_window:
                left, right = spec.window
                if left >= 0:
                    kw["sliding_window_length"] = left + 1
                if spec.causal is None:
                    if right >= 0:
                        kw["diagonal_band_right_bound"] = right
                    kw["diagonal_alignment"] = cudnn.diagonal_alignment.BOTTOM_RIGHT
                elif right > 0:
                    pass  # causal already bounds the right side at the diagonal
            if spec.padded:
                tq = graph.tensor_like(seq_q)
                tk = graph.tensor_like(seq_kv)
                pack[tq], pack[tk] = seq_q, seq_kv
                kw.update(use_padding_mask=True, seq_len_q=tq, seq_len_kv=tk)
            if bias is not None:
                tb = graph.tensor_like(bias)
                pack[tb] = bias
                kw["bias"] = tb
            if spec.dropout:
                ts, to = graph.tensor_like(seed), graph.tensor_like(offset)
                pack[ts], pack[to] = seed, offset
                kw["dropout"] = (spec.dropout, ts, to)
            return kw

        def build(graph: Any) -> Any:
            graph.validate()
            graph.build_operation_graph()
            graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
            graph.check_support()
            graph.build_plans()
            return torch.empty(max(1, graph.get_workspace_size()), dtype=torch.uint8, device=case.device)

        # ---- forward graph
        fg = cudnn.pygraph(io_data_type=io, intermediate_data_type=cudnn.data_type.FLOAT,
                           compute_data_type=cudnn.data_type.FLOAT, handle=handle)
        tq = declare(fg, "q", q, plan.q_format, sq, h)
        tk = declare(fg, "k", k, plan.kv_format, sk, hk)
        tv = declare(fg, "v", v, plan.kv_format, sk, hk)
        fpack: dict[Any, Any] = {tq: api(q, plan.q_format), tk: api(k, plan.kv_format), tv: api(v, plan.kv_format)}
        if thd:
            for t, x, which, name in ((tq, q, "q", "rq"), (tk, k, "kv", "rk"), (tv, v, "kv", "rv")):
                rt, rv = ragged(fg, name, x, which)
                t.set_ragged_offset(rt)
                fpack[rt] = rv
        fkw = options(fg, fpack)
        o, st = fg.sdpa(name="sdpa", q=tq, k=tk, v=tv, **stats_argument(cudnn.__version__, spec.train), **fkw)
        output(fg, fpack, o, o_buf, o_fmt, sq, h, "q", "ro")
        if spec.train:
            st.set_output(True).set_dim([b, h, sq, 1]).set_stride(list(stats.stride())).set_data_type(
                cudnn.data_type.FLOAT)
            fpack[st] = stats
        fws = build(fg)

        def bind() -> None:
            """Run on the caller's current stream (a CUDA graph capture runs on a side stream)."""
            cudnn.set_stream(handle=handle, stream=torch.cuda.current_stream().cuda_stream)

        def forward() -> Any:
            bind()
            fg.execute(fpack, fws, handle=handle)
            return o_buf

        details = {"graph": "sdpa" + (" + sdpa_backward" if spec.train else "")}
        if not spec.train:
            return Call(forward=forward, out_format=o_fmt, details=details)

        # ---- backward graph: gradients land in buffers shaped like the layout's leaves
        grad_leaves = [torch.full_like(leaf, float("nan")) for leaf in layout.leaves]
        dq, dk, dvv = (x for x in layout.views(grad_leaves))
        dout = data.to_format(case.dout, o_fmt, spec.lens_q).contiguous()
        bg = cudnn.pygraph(io_data_type=io, intermediate_data_type=cudnn.data_type.FLOAT,
                           compute_data_type=cudnn.data_type.FLOAT, handle=handle)
        bq = declare(bg, "q", q, plan.q_format, sq, h)
        bk = declare(bg, "k", k, plan.kv_format, sk, hk)
        bv = declare(bg, "v", v, plan.kv_format, sk, hk)
        bo = declare(bg, "o", o_buf, o_fmt, sq, h)
        bdo = declare(bg, "dO", dout, o_fmt, sq, h)
        bst = bg.tensor(name="stats", dim=[b, h, sq, 1], stride=list(stats.stride()), data_type=cudnn.data_type.FLOAT)
        bpack: dict[Any, Any] = {bq: api(q, plan.q_format), bk: api(k, plan.kv_format), bv: api(v, plan.kv_format),
                                 bo: api(o_buf, o_fmt), bdo: api(dout, o_fmt), bst: stats}
        if thd:
            for t, x, which, name in ((bq, q, "q", "rq"), (bk, k, "kv", "rk"), (bv, v, "kv", "rv"),
                                      (bo, o_buf, "q", "ro"), (bdo, dout, "q", "rdo")):
                rt, rv = ragged(bg, name, x, which)
                t.set_ragged_offset(rt)
                bpack[rt] = rv
        bkw = options(bg, bpack)
        if spec.deterministic:
            bkw["use_deterministic_algorithm"] = True
        gq, gk, gv = bg.sdpa_backward(name="sdpa_backward", q=bq, k=bk, v=bv, o=bo, dO=bdo, stats=bst, **bkw)
        for t, x, fmt, seqlen, heads, which, name in ((gq, dq, plan.q_format, sq, h, "q", "rdq"),
                                                      (gk, dk, plan.kv_format, sk, hk, "kv", "rdk"),
                                                      (gv, dvv, plan.kv_format, sk, hk, "kv", "rdv")):
            output(bg, bpack, t, x, fmt, seqlen, heads, which, name)
        bws = build(bg)

        def backward(out: Any) -> None:
            bind()
            bg.execute(bpack, bws, handle=handle)

        def grads() -> tuple[tuple[Any, str, str], ...]:
            return ((dq, plan.q_format, "q"), (dk, plan.kv_format, "kv"), (dvv, plan.kv_format, "kv"))

        return Call(forward=forward, out_format=o_fmt, backward_fn=backward, grads_fn=grads, details=details)


__all__ = ["CudnnFeRunner", "bhsd_to"]
