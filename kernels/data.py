"""Inputs, masks and the float64 reference, on the probe's device (imports torch).

Data are generated once per shape in a canonical (batch, seq, heads, dim) form, then copied into the layout a
config asks for (separate tensors, views into a fused QKV buffer, packed thd tokens); every runner reads the same
values, so the reference is computed once per shape and shared (train and infer included).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from .spec import CaseSpec, LayoutPlan, alibi_slopes, bshd_view

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
if hasattr(torch, "float8_e4m3fn"):
    DTYPES["fp8"] = torch.float8_e4m3fn

REFERENCE_BUDGET_BYTES = 1 << 29
"""Bytes of float64 scores per reference chunk; a handful of such buffers live at once."""


def torch_dtype(name: str) -> torch.dtype:
    return DTYPES[name]


# ---------------------------------------------------------------- canonical data


@dataclass
class CaseData:
    """Random inputs in canonical form (B, S, H, D), rounded to the config's dtype, plus masks and lengths."""

    spec: CaseSpec
    device: torch.device
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    dout: torch.Tensor
    arbitrary: torch.Tensor | None = None  # (B, 1, Sq, Skv) bool, True = attend
    bias: torch.Tensor | None = None  # (1, H, Sq, Skv) float, added after scaling
    slopes: torch.Tensor | None = None  # (H,) float32 ALiBi slopes
    q_rows: torch.Tensor | None = None  # (B, Sq) bool: query rows compared
    kv_rows: torch.Tensor | None = None  # (B, Skv) bool: key rows compared
    reference: dict[str, torch.Tensor] = field(default_factory=dict)
    regime: str = ""  # a stress regime (stress.REGIMES) the inputs were shaped for
    empty_rows: torch.Tensor | None = None  # (B, Sq) bool: rows whose mask hides every key (masked-rows regime)

    @property
    def dtype(self) -> torch.dtype:
        return self.q.dtype

    def cu_seqlens(self, which: str) -> torch.Tensor:
        lens = self.spec.lens_q if which == "q" else self.spec.lens_kv
        out = [0]
        for n in lens:
            out.append(out[-1] + n)
        return torch.tensor(out, dtype=torch.int32, device=self.device)


def make_case(spec: CaseSpec, device: str | torch.device, seed: int, regime: str = "") -> CaseData:
    """Fresh random data for a spec (normal(0, 1) q, k, v and output gradient), shaped for a stress regime."""
    device = torch.device(device)
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    dtype = torch_dtype(spec.dtype)
    gen_dtype = torch.float32

    def randn(*shape: int) -> torch.Tensor:
        x = torch.randn(*shape, generator=gen, device=device, dtype=gen_dtype)
        if dtype in (torch.bfloat16, torch.float16, torch.float32):
            return x.to(dtype)
        return x.clamp(-4, 4).to(dtype)

    b, h, hk, sq, sk, d, dv = spec.batch, spec.heads, spec.kv_heads, spec.seqlen_q, spec.seqlen_kv, spec.hdim, spec.hdim_v
    case = CaseData(spec=spec, device=device, q=randn(b, sq, h, d), k=randn(b, sk, hk, d), v=randn(b, sk, hk, dv),
                    dout=randn(b, sq, h, dv))
    if spec.arbitrary:
        keep = torch.rand(b, 1, sq, sk, generator=gen, device=device) < 0.7
        idx = torch.arange(sq, device=device)
        keep[:, 0, idx, idx % sk] = True  # every row keeps at least one key
        case.arbitrary = keep
    if regime:
        from . import stress

        stress.reshape(case, regime, gen)
        case.regime = regime
    if spec.bias == "post-scale":
        case.bias = torch.randn(1, h, sq, sk, generator=gen, device=device).to(
            dtype if dtype in (torch.bfloat16, torch.float16, torch.float32) else torch.float32)
    elif spec.bias == "alibi":
        case.slopes = torch.tensor(alibi_slopes(h), dtype=torch.float32, device=device)
    rows_q = torch.zeros(b, sq, dtype=torch.bool, device=device)
    rows_kv = torch.zeros(b, sk, dtype=torch.bool, device=device)
    for i in range(b):
        rows_q[i, : spec.lens_q[i]] = True
        rows_kv[i, : spec.lens_kv[i]] = True
    within = rows_q.clone() if regime == "masked-rows" else None
    for i in range(b):  # rows whose every key is masked have no defined output
        for start in range(0, sq, 4096):
            stop = min(sq, start + 4096)
            rows_q[i, start:stop] &= allowed_block(case, i, start, stop).any(-1)
    case.q_rows, case.kv_rows = rows_q, rows_kv
    if within is not None:
        case.empty_rows = within & ~rows_q
    with torch.no_grad():
        if case.dout.element_size() == 1:  # float8 has no masked_fill kernel
            case.dout = case.dout.float().masked_fill_(~rows_q[:, :, None, None], 0).to(case.dout.dtype)
        else:
            case.dout.masked_fill_(~rows_q[:, :, None, None], 0)
    return case


def allowed_block(case: CaseData, b: int, i0: int, i1: int) -> torch.Tensor:
    """(i1 - i0, Skv) bool: which keys query rows i0..i1 of sequence b may attend to."""
    spec = case.spec
    dev = case.device
    i = torch.arange(i0, i1, device=dev)[:, None]
    j = torch.arange(spec.seqlen_kv, device=dev)[None, :]
    ok = torch.ones(i1 - i0, spec.seqlen_kv, dtype=torch.bool, device=dev)
    lq, lk = spec.lens_q[b], spec.lens_kv[b]
    if spec.causal == "top-left":
        ok &= j <= i
    elif spec.causal == "bottom-right":
        ok &= j <= i + (lk - lq)
    if spec.has_window:
        left, right = spec.window
        off = 0 if spec.window_align == "top-left" else lk - lq
        if left >= 0:
            ok &= j >= i + off - left
        if right >= 0:
            ok &= j <= i + off + right
    if spec.padded:
        ok &= j < lk
    if case.arbitrary is not None:
        ok &= case.arbitrary[b, 0, i0:i1]
    return ok


def alibi_block(case: CaseData, b: int, i0: int, i1: int) -> torch.Tensor:
    """(H, i1 - i0, Skv) float64 ALiBi bias as flash-attn defines it: -slope * |i + Lk - Lq - j|."""
    spec = case.spec
    i = torch.arange(i0, i1, device=case.device, dtype=torch.float64)[:, None]
    j = torch.arange(spec.seqlen_kv, device=case.device, dtype=torch.float64)[None, :]
    dist = (i + (spec.lens_kv[b] - spec.lens_q[b]) - j).abs()
    return -case.slopes.double()[:, None, None] * dist[None]


def dense_mask(case: CaseData, *, per_batch: bool | None = None) -> torch.Tensor:
    """The whole (B or 1, 1, Sq, Skv) bool mask, True = attend (for APIs that take an explicit mask)."""
    spec = case.spec
    per_batch = (spec.padded or case.arbitrary is not None) if per_batch is None else per_batch
    n = spec.batch if per_batch else 1
    out = torch.empty(n, 1, spec.seqlen_q, spec.seqlen_kv, dtype=torch.bool, device=case.device)
    for b in range(n):
        out[b, 0] = allowed_block(case, b, 0, spec.seqlen_q)
    return out


def additive_bias(case: CaseData) -> torch.Tensor | None:
    """(1 or B, H, Sq, Skv) float32 bias (post-scale or ALiBi), or None."""
    if case.bias is not None:
        return case.bias.float()
    if case.slopes is None:
        return None
    spec = case.spec
    n = spec.batch if spec.padded else 1
    out = torch.empty(n, spec.heads, spec.seqlen_q, spec.seqlen_kv, dtype=torch.float32, device=case.device)
    for b in range(n):
        out[b] = alibi_block(case, b, 0, spec.seqlen_q).float()
    return out


# ---------------------------------------------------------------- layouts


def to_format(x: torch.Tensor, fmt: str, lens: tuple[int, ...]) -> torch.Tensor:
    """Canonical (B, S, H, D) -> the tensor in `fmt` (a view for bshd/sbhd/bhsd, packed tokens for thd)."""
    if fmt == "thd":
        return torch.cat([x[b, :n] for b, n in enumerate(lens)], dim=0)
    return bshd_view(x, fmt)


def from_format(y: torch.Tensor, fmt: str, lens: tuple[int, ...], batch: int, seqlen: int) -> torch.Tensor:
    """The inverse of to_format: back to canonical (B, S, H, D); thd padding rows become NaN."""
    if fmt == "thd":
        out = torch.full((batch, seqlen) + tuple(y.shape[1:]), float("nan"), dtype=y.dtype, device=y.device)
        start = 0
        for b, n in enumerate(lens):
            out[b, :n] = y[start:start + n]
            start += n
        return out
    return bshd_view(y, fmt)


def lead_shape(fmt: str, batch: int, seqlen: int, total: int) -> tuple[int, ...]:
    """The dims before (heads, dim) of a tensor in `fmt` (bhsd has heads in the middle: handled by callers)."""
    return {"bshd": (batch, seqlen), "sbhd": (seqlen, batch), "thd": (total,)}[fmt]


@dataclass
class Layout:
    """Leaf buffers (they get the gradients) and how q, k and v are views into them."""

    plan: LayoutPlan
    leaves: list[torch.Tensor]
    views: Callable[[list[torch.Tensor]], tuple[torch.Tensor, torch.Tensor, torch.Tensor]]

    def qkv(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q, k, v as views of the leaves, built afresh so that autograd tracks them."""
        return self.views(self.leaves)

    def grads(self) -> tuple[torch.Tensor | None, ...]:
        """dq, dk, dv: the same views of the leaves' gradients (None where a leaf got none)."""
        grads = [leaf.grad for leaf in self.leaves]
        if any(g is None for g in grads):
            return (None, None, None)
        return self.views(grads)

    def zero_grad(self) -> None:
        for leaf in self.leaves:
            leaf.grad = None


def build_layout(case: CaseData, *, requires_grad: bool) -> Layout:
    """q, k, v in the config's layout, filled from the canonical data."""
    spec = case.spec
    plan = spec.layout
    b, h, hk, d, dv = spec.batch, spec.heads, spec.kv_heads, spec.hdim, spec.hdim_v
    dt, dev = case.dtype, case.device
    qf, kvf = plan.q_format, plan.kv_format
    q_src = to_format(case.q, qf, spec.lens_q)
    k_src = to_format(case.k, kvf, spec.lens_kv)
    v_src = to_format(case.v, kvf, spec.lens_kv)

    def lead(fmt: str, which: str) -> tuple[int, ...]:
        seq = spec.seqlen_q if which == "q" else spec.seqlen_kv
        total = spec.total_q if which == "q" else spec.total_kv
        return lead_shape(fmt, b, seq, total)

    def fill(buf: torch.Tensor, views: Callable[[list[torch.Tensor]], tuple[torch.Tensor, ...]]) -> None:
        with torch.no_grad():
            out = views([buf] if not isinstance(buf, list) else buf)
            for view, src in zip(out, (q_src, k_src, v_src)):
                if view is not None:
                    view.copy_(src)

    if plan.pack == "separate":
        leaves = [q_src.contiguous().clone(), k_src.contiguous().clone(), v_src.contiguous().clone()]

        def views(ls: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            return ls[0], ls[1], ls[2]
    elif plan.pack == "fused":
        if qf == "bhsd":
            buf = torch.empty(b, h + 2 * hk, spec.seqlen_q, d, dtype=dt, device=dev)

            def views(ls: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
                x = ls[0]
                return x[:, :h], x[:, h:h + hk], x[:, h + hk:]
        else:
            buf = torch.empty(lead(qf, "q") + (h * d + hk * d + hk * dv,), dtype=dt, device=dev)

            def views(ls: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
                x = ls[0]
                return (x[..., : h * d].unflatten(-1, (h, d)), x[..., h * d: h * d + hk * d].unflatten(-1, (hk, d)),
                        x[..., h * d + hk * d:].unflatten(-1, (hk, dv)))
        leaves = [buf]
        fill(buf, views)
    elif plan.pack in ("qkv_3hd", "qkv_h3d"):
        three_first = plan.pack == "qkv_3hd"
        shape = lead(qf, "q") + ((3, h, d) if three_first else (h, 3, d))
        buf = torch.empty(shape, dtype=dt, device=dev)

        def views(ls: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            x = ls[0]
            if three_first:
                return x[..., 0, :, :], x[..., 1, :, :], x[..., 2, :, :]
            return x[..., 0, :], x[..., 1, :], x[..., 2, :]
        leaves = [buf]
        fill(buf, views)
    else:  # kv_2hd / kv_h2d
        two_first = plan.pack == "kv_2hd"
        kv = torch.empty(lead(kvf, "kv") + ((2, hk, d) if two_first else (hk, 2, d)), dtype=dt, device=dev)
        q_leaf = q_src.contiguous().clone()

        def views(ls: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            x = ls[1]
            if two_first:
                return ls[0], x[..., 0, :, :], x[..., 1, :, :]
            return ls[0], x[..., 0, :], x[..., 1, :]
        leaves = [q_leaf, kv]
        with torch.no_grad():
            _, kview, vview = views(leaves)
            kview.copy_(k_src)
            vview.copy_(v_src)
    for leaf in leaves:
        leaf.requires_grad_(requires_grad)
    return Layout(plan=plan, leaves=leaves, views=views)


def canonical(case: CaseData, y: torch.Tensor, fmt: str, which: str) -> torch.Tensor:
    """A runner's tensor in `fmt` back to canonical (B, S, H, D)."""
    spec = case.spec
    lens = spec.lens_q if which == "q" else spec.lens_kv
    seq = spec.seqlen_q if which == "q" else spec.seqlen_kv
    return from_format(y, fmt, lens, spec.batch, seq)


# ---------------------------------------------------------------- reference


def _chunk_rows(heads: int, seqlen_kv: int) -> int:
    per_row = max(1, heads * seqlen_kv * 8)
    return max(1, min(4096, REFERENCE_BUDGET_BYTES // per_row))


def compute_reference(case: CaseData, *, train: bool) -> dict[str, torch.Tensor]:
    """Output (and dq, dk, dv when `train`) in float64, canonical (B, S, H, D), chunked so that no (S x S) score
    matrix of the whole problem is ever held. Cached on the case: infer reuses what train computed."""
    have = case.reference
    if "out" in have and (not train or "dq" in have):
        return have
    spec = case.spec
    b, h, hk, g = spec.batch, spec.heads, spec.kv_heads, spec.group
    sq, sk, d, dv = spec.seqlen_q, spec.seqlen_kv, spec.hdim, spec.hdim_v
    f64 = torch.float64
    out = torch.zeros(b, sq, h, dv, dtype=f64, device=case.device)
    dq = torch.zeros(b, sq, h, d, dtype=f64, device=case.device) if train else None
    dk = torch.zeros(b, sk, hk, d, dtype=f64, device=case.device) if train else None
    dvv = torch.zeros(b, sk, hk, dv, dtype=f64, device=case.device) if train else None
    rows = _chunk_rows(h, sk)
    for bi in range(b):
        # (Hk, G, S, D): query heads grouped under their key/value head
        qb = case.q[bi].to(f64).permute(1, 0, 2).reshape(hk, g, sq, d)
        kb = case.k[bi].to(f64).permute(1, 0, 2)  # (Hk, Sk, D)
        vb = case.v[bi].to(f64).permute(1, 0, 2)  # (Hk, Sk, Dv)
        dob = case.dout[bi].to(f64).permute(1, 0, 2).reshape(hk, g, sq, dv) if train else None
        for i0 in range(0, sq, rows):
            i1 = min(sq, i0 + rows)
            n = i1 - i0
            qc = qb[:, :, i0:i1].reshape(hk, g * n, d)
            s = torch.bmm(qc, kb.transpose(1, 2)).mul_(spec.scale).view(hk, g, n, sk)
            t = None
            if spec.softcap:
                t = torch.tanh(s / spec.softcap)
                s = t * spec.softcap
            if case.bias is not None:
                s = s + case.bias[0, :, i0:i1].to(f64).view(hk, g, n, sk)
            elif case.slopes is not None:
                s = s + alibi_block(case, bi, i0, i1).view(hk, g, n, sk)
            allowed = allowed_block(case, bi, i0, i1)
            s = s.masked_fill(~allowed, float("-inf"))
            m = s.amax(-1, keepdim=True)
            m = torch.where(torch.isinf(m), torch.zeros_like(m), m)
            p = torch.exp(s - m)
            denom = p.sum(-1, keepdim=True)
            p = p / torch.where(denom == 0, torch.ones_like(denom), denom)
            del s, m, denom
            pf = p.view(hk, g * n, sk)
            oc = torch.bmm(pf, vb)  # (Hk, G*n, Dv)
            out[bi, i0:i1] = oc.view(hk, g, n, dv).reshape(h, n, dv).permute(1, 0, 2)
            if not train:
                continue
            doc = dob[:, :, i0:i1].reshape(hk, g * n, dv)
            dvv[bi] += torch.bmm(pf.transpose(1, 2), doc).permute(1, 0, 2)
            dp = torch.bmm(doc, vb.transpose(1, 2)).view(hk, g, n, sk)
            delta = (doc * oc).sum(-1).view(hk, g, n, 1)
            ds = p * (dp - delta)
            del dp
            if t is not None:
                ds = ds * (1 - t * t)
            dsf = ds.view(hk, g * n, sk)
            dq[bi, i0:i1] = (torch.bmm(dsf, kb) * spec.scale).view(hk, g, n, d).reshape(h, n, d).permute(1, 0, 2)
            dk[bi] += (torch.bmm(dsf.transpose(1, 2), qc) * spec.scale).permute(1, 0, 2)
            del ds, dsf, p, pf
    have["out"] = out
    if train:
        have.update(dq=dq, dk=dk, dv=dvv)
    return have


# ---------------------------------------------------------------- comparison


def relative_error(x: torch.Tensor | None, ref: torch.Tensor, rows: torch.Tensor, floor: float = 0.0) -> float:
    """max|x - ref| / max(max|ref|, floor) over the compared rows (B, S); inf when x is missing or has NaN/inf.

    `floor` keeps a reference that is exactly zero in exact arithmetic (dq and dk when each query sees a single
    key: the softmax is constant) from turning rounding noise into an enormous relative error.
    """
    if x is None:
        return float("inf")
    if x.shape != ref.shape:
        raise ValueError(f"output shape {tuple(x.shape)} differs from the reference's {tuple(ref.shape)}")
    sel = rows[:, :, None, None]
    if not bool(sel.any()):
        return 0.0
    diff = torch.where(sel, x.to(torch.float64) - ref, 0.0).abs_()
    scale = torch.where(sel, ref, 0.0).abs_().amax()
    worst, bad = torch.stack((diff.amax(), scale)), ~torch.isfinite(diff).all()
    values = torch.cat((worst, bad.to(torch.float64).view(1))).tolist()  # one sync
    if values[2] or values[0] != values[0]:
        return float("inf")
    return values[0] / max(values[1], floor, 1e-30)


def gradient_floor(reference: dict[str, torch.Tensor], fraction: float = 1e-2) -> float:
    """A scale below which a gradient reference counts as zero: a fraction of the largest gradient's magnitude."""
    scales = [float(reference[n].abs().amax()) for n in ("dq", "dk", "dv") if n in reference]
    return fraction * max(scales) if scales else 0.0


def finite(x: torch.Tensor | None, rows: torch.Tensor) -> bool:
    if x is None:
        return False
    sel = rows[:, :, None, None].expand_as(x)
    return bool(torch.isfinite(x[sel].float()).all())


def poison_allocator(device: torch.device, nbytes: int) -> None:
    """Fill about `nbytes` of free caching-allocator memory with NaN and give it back, so that an output a library
    allocates but never writes reads NaN (best effort: the allocator may hand out other blocks)."""
    if device.type != "cuda" or nbytes <= 0:
        return
    try:
        block = torch.empty(nbytes // 2 + 1, dtype=torch.float16, device=device)
        block.fill_(float("nan"))
        del block
    except torch.OutOfMemoryError:
        pass


def nbytes_of(*tensors: Any) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))
