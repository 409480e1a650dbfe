"""Data regimes that random normal inputs never reach, where kernels that accept a call still go wrong.

Each regime reshapes one probe's canonical inputs (in place, before the reference is computed), so the same
runners, the same float64 reference and the same comparison judge it. Which regime a probe runs travels in the
probe request (`"regime": name`); `applicable` says when a regime means nothing for a config.
"""

from __future__ import annotations

import math
from typing import Any

REGIMES: dict[str, str] = {
    "low-lse": "every logit near -100, so each row's logsumexp lies far below -88.7 (fp32 exp underflows)",
    "dominant-key": "one key dominates every row (massive activations, attention sinks)",
    "masked-rows": "query rows whose mask hides every key (left padding of batched prompts)",
    "fp16-large": "values near the top of fp16's range",
    "grad-out-strides": "the output gradient handed to backward as a transposed view, as real models do",
}
"""The regimes, each with what it imitates."""

LOW_LOGIT = -100.0
DOMINANT_LOGIT = 30.0


def applicable(regime: str, spec: Any, backend: str = "") -> str:
    """Why `regime` means nothing for this spec (and backend), or '' when it applies."""
    if regime not in REGIMES:
        return f"unknown regime {regime!r}"
    if spec.dtype == "fp8":
        return "fp8 inputs are scaled by the caller; the regimes shape bf16/fp16/fp32 data"
    if regime == "masked-rows" and not spec.arbitrary:
        return "needs an explicit mask (mask = arbitrary)"
    if regime == "fp16-large" and spec.dtype != "fp16":
        return "fp16 only"
    if regime == "grad-out-strides":
        if not spec.train:
            return "training only"
        if backend == "cudnn-fe":
            return "the cuDNN graph declares dO's layout itself"
    if regime in ("low-lse", "dominant-key") and spec.softcap:
        return "softcap bounds every logit"
    return ""


def reshape(case: Any, regime: str, gen: Any) -> None:
    """Make the case's q, k, v (and mask) fall in the regime; values stay within the dtype's range."""
    import torch

    q, k, v = case.q, case.k, case.v
    spec = case.spec
    dtype, device = q.dtype, q.device

    def unit(d: int) -> torch.Tensor:
        u = torch.randn(d, generator=gen, device=device, dtype=torch.float32)
        return u / u.norm()

    if regime == "low-lse":
        u = unit(spec.hdim)
        a = math.sqrt(-LOW_LOGIT / spec.scale)
        noise = 0.05
        case.q = (a * u + noise * q.float()).to(dtype)
        case.k = (-a * u + noise * k.float()).to(dtype)
    elif regime == "dominant-key":
        u = unit(spec.hdim)
        lift = 4.0
        case.q = (q.float() + lift * u).to(dtype)
        strong = case.k.float()
        strong[:, 0] = (DOMINANT_LOGIT / (spec.scale * lift)) * u
        case.k = strong.to(dtype)
    elif regime == "masked-rows":
        keep = case.arbitrary
        rows = torch.arange(spec.seqlen_q, device=device)
        hidden = (rows % 7 == 3)
        keep[:, 0, hidden, :] = False
    elif regime == "fp16-large":
        case.v = (v.float().clamp(-2, 2) * 3.0e4).to(dtype)


def odd_strides(x: Any) -> Any:
    """The same values as `x` in memory whose last two dimensions are swapped (a transposed, non-contiguous view)."""
    return x.transpose(-1, -2).contiguous().transpose(-1, -2)


def convention(out: Any, case: Any, rows: Any) -> str:
    """What a kernel writes in rows that attend to nothing: zero, nan, mean-v (uniform over every key), or other."""
    import torch

    if not bool(rows.any()):
        return ""
    got = out[rows].float()  # (n, H, Dv)
    if bool(torch.isnan(got).all()):
        return "nan"
    if not bool(torch.isfinite(got).all()):
        return "non-finite"
    if bool((got == 0).all()):
        return "zero"
    spec = case.spec
    b_idx = rows.nonzero()[:, 0]
    mean_v = case.v.float().mean(dim=1)  # (B, Hk, Dv)
    expected = mean_v[b_idx].repeat_interleave(spec.group, dim=1)
    if bool(torch.allclose(got, expected, rtol=2e-2, atol=2e-2)):
        return "mean-v"
    return "other"
