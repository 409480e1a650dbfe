"""What one probe builds, decided from the config alone (no torch): memory layout, masks, sequence lengths.

The layout names are those of DESIGN.md: a qkv format (bshd, sbhd, thd, bhsd) for separate q, k and v tensors, or
one of TransformerEngine's qkv layouts (sb3hd, sbh3d, sbhd_sb2hd, bshd_bshd_bshd, thd_t2hd, sbhd_bshd_bshd, ...).
`qkv_fused` with a plain format means q, k and v are views into one buffer [..., (h + 2*hg) * d] (TE's
fuse_qkv_params with GQA: the sb(h+2hg)d case behind TE's layout misdetection).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

FORMATS = ("bshd", "sbhd", "thd", "bhsd")
PACKS = ("separate", "fused", "qkv_3hd", "qkv_h3d", "kv_2hd", "kv_h2d")


def bshd_view(x: Any, fmt: str) -> Any:
    """A (format) tensor as the (B, S, H, D) view, and a (B, S, H, D) tensor as the (format) view: each of these
    permutations is its own inverse. Packed tokens (thd) have no such view."""
    if fmt == "bshd":
        return x
    if fmt == "sbhd":
        return x.transpose(0, 1)
    if fmt == "bhsd":
        return x.transpose(1, 2)
    raise ValueError(f"no (B, S, H, D) view of a {fmt} tensor")


class NotBuilt(Exception):
    """The runners do not build this case (yet): the probe is `skipped`, with this reason."""


@dataclass(frozen=True)
class LayoutPlan:
    """How q, k and v sit in memory: each tensor's format and how they share buffers."""

    q_format: str
    kv_format: str
    pack: str = "separate"
    name: str = ""

    @property
    def mixed(self) -> bool:
        return self.q_format != self.kv_format


def _token(token: str) -> tuple[str, str]:
    """'sb3hd' -> ('sbhd', '3hd'); 'sbh2d' -> ('sbhd', 'h2d'); 'bshd' -> ('bshd', '')."""
    digits = [c for c in token if c.isdigit()]
    fmt = "".join(c for c in token if not c.isdigit())
    if fmt not in FORMATS:
        raise NotBuilt(f"layout token {token!r}: unknown tensor format {fmt!r}")
    if not digits:
        return fmt, ""
    n = digits[0]
    at = token.index(n)
    return fmt, (f"{n}hd" if token[at + 1:at + 2] == "h" else f"h{n}d")


def parse_layout(layout: str | None, qkv_fused: bool = False) -> LayoutPlan:
    """The plan behind a layout name; raises NotBuilt for paged-KV layouts."""
    name = layout or "bshd"
    if name.startswith("paged_kv_"):
        raise NotBuilt(f"layout {name}: paged KV caches are not built by the runners yet")
    parts = name.split("_")
    if len(parts) == 1:
        fmt, pack = _token(parts[0])
        if pack == "":
            return LayoutPlan(fmt, fmt, "fused" if qkv_fused else "separate", name)
        if pack[0] == "3" or pack[1] == "3":
            return LayoutPlan(fmt, fmt, "qkv_3hd" if pack == "3hd" else "qkv_h3d", name)
        raise NotBuilt(f"layout {name}: unknown packing {pack}")
    if len(parts) == 2:
        q_fmt, q_pack = _token(parts[0])
        kv_fmt, kv_pack = _token(parts[1])
        if q_pack or kv_pack not in ("2hd", "h2d"):
            raise NotBuilt(f"layout {name}: expected q then packed kv (e.g. sbhd_sb2hd)")
        return LayoutPlan(q_fmt, kv_fmt, "kv_2hd" if kv_pack == "2hd" else "kv_h2d", name)
    if len(parts) == 3:
        fmts = [_token(p) for p in parts]
        if any(pack for _, pack in fmts) or fmts[1][0] != fmts[2][0]:
            raise NotBuilt(f"layout {name}: expected three plain formats with k and v alike")
        q_fmt, kv_fmt = fmts[0][0], fmts[1][0]
        pack = "fused" if qkv_fused and q_fmt == kv_fmt else "separate"
        return LayoutPlan(q_fmt, kv_fmt, pack, name)
    raise NotBuilt(f"layout {name}: not understood")


@dataclass(frozen=True)
class CaseSpec:
    """Everything a runner and the reference need to know about one config, as plain numbers."""

    batch: int
    heads: int
    kv_heads: int
    seqlen_q: int
    seqlen_kv: int
    hdim: int
    hdim_v: int
    dtype: str
    train: bool
    layout: LayoutPlan
    causal: str | None = None  # None | "top-left" | "bottom-right"
    padded: bool = False  # per-sequence lengths: padding masks or thd
    arbitrary: bool = False
    window: tuple[int, int] = (-1, -1)
    window_align: str = "bottom-right"
    dropout: float = 0.0
    softcap: float = 0.0
    bias: str = "none"
    deterministic: bool = False
    lens_q: tuple[int, ...] = ()
    lens_kv: tuple[int, ...] = ()
    scale: float = 1.0
    mask: str = "none"
    notes: tuple[str, ...] = field(default=(), compare=False)

    @property
    def group(self) -> int:
        return self.heads // self.kv_heads

    @property
    def has_window(self) -> bool:
        return self.window != (-1, -1)

    @property
    def compares(self) -> bool:
        """Whether outputs can be compared with the reference (dropout draws its own random mask)."""
        return self.dropout == 0.0

    @property
    def total_q(self) -> int:
        return sum(self.lens_q)

    @property
    def total_kv(self) -> int:
        return sum(self.lens_kv)

    @property
    def full_lengths(self) -> bool:
        return all(n == self.seqlen_q for n in self.lens_q) and all(n == self.seqlen_kv for n in self.lens_kv)

    def data_key(self) -> tuple[Any, ...]:
        """What the random data and the reference depend on; train and infer of one shape share both."""
        return (self.batch, self.heads, self.kv_heads, self.seqlen_q, self.seqlen_kv, self.hdim, self.hdim_v,
                self.dtype, self.causal, self.padded, self.arbitrary, self.window, self.window_align, self.softcap,
                self.bias, self.lens_q, self.lens_kv, self.scale)


MASKS = {
    "none": (None, False),
    "causal": ("top-left", False),
    "causal-bottom-right": ("bottom-right", False),
    "padding": (None, True),
    "padding-causal": ("top-left", True),
    "padding-causal-bottom-right": ("bottom-right", True),
    "arbitrary": (None, False),
}


def padded_lengths(batch: int, seqlen: int) -> tuple[int, ...]:
    """Per-sequence lengths for padding masks and thd: the first sequence full, the others shorter and odd-sized
    (not multiples of 64), so that padding really masks something."""
    out = []
    for b in range(batch):
        if b == 0:
            out.append(seqlen)
        else:
            out.append(max(1, seqlen - (b * seqlen) // (2 * batch) - 7))
    return tuple(out)


def case_spec(config: Mapping[str, Any]) -> CaseSpec:
    """The spec for a config dict (AttentionConfig.to_dict() with every shape field known).

    Raises NotBuilt for what the runners do not build, ValueError for a config missing a shape field.
    """
    missing = [k for k in ("batch", "heads", "seqlen_q", "hdim", "dtype") if config.get(k) is None]
    if missing:
        raise ValueError(f"config lacks {', '.join(missing)}; fill defaults first")
    if int(config.get("cp") or 1) > 1:
        raise NotBuilt("context parallelism (cp > 1) needs several processes; the runners run one")
    if config.get("paged_kv"):
        raise NotBuilt("paged KV caches are not built by the runners yet")
    if config.get("sinks"):
        raise NotBuilt("attention sink logits are not built by the runners yet")
    heads = int(config["heads"])
    kv_heads = int(config.get("kv_heads") or heads)
    seqlen_q = int(config["seqlen_q"])
    seqlen_kv = int(config.get("seqlen_kv") or seqlen_q)
    hdim = int(config["hdim"])
    hdim_v = int(config.get("hdim_v") or hdim)
    batch = int(config["batch"])
    if batch == 0:
        raise NotBuilt("an empty batch (batch 0) gives no values to compare with the reference")
    plan = parse_layout(config.get("layout"), bool(config.get("qkv_fused")))
    mask = str(config.get("mask") or "none")
    causal, padded = MASKS[mask]
    if "thd" in (plan.q_format, plan.kv_format):
        padded = True
    window = tuple(int(x) for x in (config.get("window") or (-1, -1)))
    notes = []
    if plan.pack in ("qkv_3hd", "qkv_h3d"):
        if heads != kv_heads or hdim != hdim_v or seqlen_q != seqlen_kv:
            raise NotBuilt(f"layout {plan.name} packs q, k and v together: it needs equal head counts, head dims "
                           "and sequence lengths")
    if plan.pack in ("kv_2hd", "kv_h2d") and hdim != hdim_v:
        raise NotBuilt(f"layout {plan.name} packs k and v together: it needs hdim == hdim_v")
    if plan.pack == "fused":
        if seqlen_q != seqlen_kv:
            raise NotBuilt("qkv_fused needs seqlen_q == seqlen_kv (one buffer holds q, k and v)")
        if plan.q_format == "bhsd" and hdim != hdim_v:
            raise NotBuilt("qkv_fused with bhsd needs hdim == hdim_v")
    lens_q = padded_lengths(batch, seqlen_q) if padded else (seqlen_q,) * batch
    lens_kv = padded_lengths(batch, seqlen_kv) if padded else (seqlen_kv,) * batch
    if padded and seqlen_q == seqlen_kv:
        lens_q = lens_kv
    if plan.pack == "fused" and lens_q != lens_kv:
        raise NotBuilt("qkv_fused needs equal per-sequence lengths for q and kv")
    return CaseSpec(
        batch=batch, heads=heads, kv_heads=kv_heads, seqlen_q=seqlen_q, seqlen_kv=seqlen_kv, hdim=hdim,
        hdim_v=hdim_v, dtype=str(config["dtype"]), train=bool(config.get("train")), layout=plan, causal=causal,
        padded=padded, arbitrary=(mask == "arbitrary"), window=(window[0], window[1]),
        window_align="top-left" if causal == "top-left" else "bottom-right",
        dropout=float(config.get("dropout") or 0.0), softcap=float(config.get("softcap") or 0.0),
        bias=str(config.get("bias") or "none"), deterministic=bool(config.get("deterministic")),
        lens_q=lens_q, lens_kv=lens_kv, scale=1.0 / math.sqrt(hdim), mask=mask, notes=tuple(notes),
    )


def alibi_slopes(heads: int) -> list[float]:
    """The ALiBi slopes of the paper (geometric, for any head count)."""
    def power_of_2(n: int) -> list[float]:
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start ** i for i in range(n)]

    if math.log2(heads).is_integer():
        return power_of_2(heads)
    closest = 2 ** math.floor(math.log2(heads))
    return power_of_2(closest) + power_of_2(2 * closest)[0::2][: heads - closest]
