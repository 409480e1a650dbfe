"""On a GPU: try to reproduce the advisories this machine's stack reaches that `verify --stress` has no regime for, each
in a fresh process (one ends in an illegal memory access), and write one JSON line per run. The runs that went wrong
and the control runs just below a bound (which must run clean) are kept in tests/observations/advisories/ for the
replay test; any other "ok" run did not reproduce, and its advisory's notes say so.

Run: python benchmarks/advisory_repro.py OUT.jsonl   (ONLY=ID,ID runs those advisories' cases alone)
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

RAISED = re.compile(r"^[\w.]*(?:Error|Exception): ")
"""The line of a traceback that names the exception (CUDA's advice lines come after it)."""

CASES = {
    # pytorch/pytorch#191612: a float32 attn_mask with bf16 q, k, v through the cuDNN backend
    "ADV-SDPA-CUDNN-FP32-MASK-REINTERPRETED": ("""
import torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
torch.manual_seed(0)
q, k, v = (torch.randn(1, 8, 512, 64, device='cuda', dtype=torch.bfloat16) for _ in range(3))
mask = torch.zeros(1, 1, 512, 512, device='cuda', dtype=torch.float32).masked_fill(
    torch.rand(512, 512, device='cuda') < 0.3, float('-inf'))
ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=mask)
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
bad = int((~torch.isfinite(out)).sum()); err = float((out.float() - ref).abs().nan_to_num(1e9).max())
print(json.dumps({'outcome': 'wrong-results' if bad or err > 0.1 else 'ok', 'nonfinite': bad, 'max_abs_error': err}))
""", {"batch": 1, "heads": 8, "seqlen": 512, "hdim": 64, "dtype": "bf16", "train": False, "mask": "arbitrary"}),
    # pytorch/pytorch#148476: memory-efficient backward when only the float mask requires grad
    "ADV-SDPA-EFFICIENT-MASK-ONLY-GRAD-IMA": ("""
import torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
q, k, v = (torch.randn(1, 8, 256, 64, device='cuda', dtype=torch.float16) for _ in range(3))
mask = torch.zeros(1, 8, 256, 256, device='cuda', dtype=torch.float16, requires_grad=True)
with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
out.sum().backward()
torch.cuda.synchronize()
print(json.dumps({'outcome': 'ok', 'mask_grad_finite': bool(torch.isfinite(mask.grad).all())}))
""", {"batch": 1, "heads": 8, "seqlen": 256, "hdim": 64, "dtype": "fp16", "train": True, "bias": "post-scale"}),
    # pytorch/pytorch#174245: cuDNN's dropout resolution of 1/16. Uniform attention (q = k = 0) over an identity V makes
    # each output element one kept-or-dropped weight: the kept fraction and the rescale show the rate applied
    "ADV-SDPA-CUDNN-DROPOUT-SIXTEENTHS-ROUNDED-PRE212": ("""
import torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
torch.manual_seed(0)
B, H, N = 4, 8, 128
rows = {}
for p in (0.1, 0.3, 0.0625):
    q = torch.zeros(B, H, N, N, device='cuda', dtype=torch.float16, requires_grad=True)
    k = torch.zeros(B, H, N, N, device='cuda', dtype=torch.float16, requires_grad=True)
    v = torch.eye(N, device='cuda', dtype=torch.float16).expand(B, H, N, N).contiguous().requires_grad_()
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=p)
    kept = out.detach().float() != 0
    frac = float(kept.float().mean())
    scale = float(out.detach().float()[kept].mean()) * N
    rows[str(p)] = {'dropped': round(1 - frac, 5), 'rescale_rate': round(1 - 1 / scale, 5), 'sigma': round((p * (1 - p) / kept.numel()) ** 0.5, 6)}
off = {p: r for p, r in rows.items() if abs(r['dropped'] - float(p)) > 6 * r['sigma'] + 1e-4}
print(json.dumps({'outcome': 'wrong-results' if off else 'ok', 'rates': rows}))
""", {"batch": 4, "heads": 8, "seqlen": 128, "hdim": 128, "dtype": "fp16", "train": True, "dropout": 0.1}),
    # pytorch/pytorch#192138: one query, key/value expanded over heads (stride 0), is_causal=True: a top-left causal
    # mask leaves query 0 the first key only
    "ADV-SDPA-EFFICIENT-SQ1-SHARED-KV-CAUSAL-PAST-DIAGONAL-PRE214": ("""
import torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
torch.manual_seed(0)
rows = {}
for d, n in ((64, 128), (128, 300)):
    q = torch.randn(2, 8, 1, d, device='cuda', dtype=torch.float16)
    k = torch.randn(2, 1, n, d, device='cuda', dtype=torch.float16).expand(2, 8, n, d)
    v = torch.randn(2, 1, n, d, device='cuda', dtype=torch.float16).expand(2, 8, n, d)
    with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    with sdpa_kernel(SDPBackend.MATH):
        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)
    rows[f'd{d}_kv{n}'] = {'max_abs_error': round(float((out.float() - ref).abs().max()), 5),
                           'ref_is_first_value': bool(torch.allclose(ref, v[..., :1, :].float(), atol=1e-3))}
    k2, v2 = k.contiguous(), v.contiguous()
    with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
        out2 = F.scaled_dot_product_attention(q, k2, v2, is_causal=True)
    rows[f'd{d}_kv{n}']['contiguous_max_abs_error'] = round(float((out2.float() - ref).abs().max()), 5)
bad = any(r['max_abs_error'] > 1e-2 for r in rows.values())
print(json.dumps({'outcome': 'wrong-results' if bad else 'ok', 'runs': rows}))
""", {"batch": 2, "heads": 8, "seqlen_q": 1, "seqlen_kv": 128, "hdim": 64, "dtype": "fp16", "train": False,
      "mask": "causal"}),
    # pytorch/pytorch#191937: broadcast (stride-0) key/value with a boolean attn_mask and seqlen_kv % 32 == 1
    "ADV-SDPA-EFFICIENT-STRIDE0-KV-MASK-KV1MOD32": ("""
import torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
torch.manual_seed(0)
rows = {}
for d in (64, 256, 512):
    for n in (97, 98, 129):
        q = torch.randn(1, 8, 64, d, device='cuda', dtype=torch.bfloat16)
        k = torch.randn(1, 1, n, d, device='cuda', dtype=torch.bfloat16).expand(1, 8, n, d)
        v = torch.randn(1, 1, n, d, device='cuda', dtype=torch.bfloat16).expand(1, 8, n, d)
        mask = torch.rand(1, 1, 64, n, device='cuda') > 0.2
        mask[..., 0] = True
        try:
            with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        except RuntimeError as exc:
            rows[f'd{d}_kv{n}'] = {'refused': str(exc).splitlines()[0][:120]}
            continue
        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=mask)
        rows[f'd{d}_kv{n}'] = {'max_abs_error': round(float((out.float() - ref).abs().max()), 4)}
bad = any(r.get('max_abs_error', 0) > 0.25 for key, r in rows.items() if key.endswith(('kv97', 'kv129')))
print(json.dumps({'outcome': 'wrong-results' if bad else 'ok', 'runs': rows}))
""", {"batch": 1, "heads": 8, "seqlen_q": 64, "seqlen_kv": 97, "hdim": 64, "dtype": "bf16", "train": False,
      "mask": "arbitrary"}),
    # pytorch/pytorch#145869's repro: a score_mod reading a captured [B, H, Q, KV] bias (16 x 32 x 4096 x 4096, 2^33
    # elements) indexes it in 32 bits. FLEX_BIAS="b,h,n,d,dtype" changes the shape (1,1,46340,64,bf16: below 2^31)
    "ADV-FLEX-CAPTURED-BIAS-INT32-INDEX-IMA": ("""
import os, torch
from torch.nn.attention.flex_attention import flex_attention
b, h, n, d, dt = os.environ.get('FLEX_BIAS', '16,32,4096,128,float32').split(',')
b, h, n, d, dt = int(b), int(h), int(n), int(d), getattr(torch, dt)
torch.manual_seed(0)
q, k, v = (torch.randn(b, h, n, d, device='cuda', dtype=dt) for _ in range(3))
bias = torch.randn(b, h, n, n, device='cuda', dtype=dt)
def add_bias(score, bi, hi, q_idx, kv_idx):
    return score + bias[bi, hi, q_idx, kv_idx]
out = torch.compile(flex_attention)(q, k, v, score_mod=add_bias)
torch.cuda.synchronize()
err = 0.0
for bi, hi in ((0, 0), (b - 1, h - 1)):
    rows = torch.tensor([0, n // 2, n - 1], device='cuda')
    s = (q[bi, hi, rows].float() @ k[bi, hi].float().T) / d ** 0.5 + bias[bi, hi, rows].float()
    ref = torch.softmax(s, -1) @ v[bi, hi].float()
    err = max(err, float((out[bi, hi, rows].float() - ref).abs().max()))
print(json.dumps({'outcome': 'wrong-results' if err > 0.05 else 'ok', 'bias_elements': b * h * n * n, 'max_abs_error_rows': err}))
""", {"batch": 16, "heads": 32, "seqlen": 4096, "hdim": 128, "dtype": "fp32", "train": False, "bias": "post-scale"}),
    # pytorch/pytorch#142228: the memory-efficient kernel's grid puts heads on a 16-bit dimension
    "ADV-SDPA-EFFICIENT-GRID-DIM-CRASH": (GRID := """
import os, torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
h = int(os.environ['GRID_HEADS'])
q, k, v = (torch.randn(1, h, 10, 16, device='cuda', dtype=torch.float32) for _ in range(3))
with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
    out = F.scaled_dot_product_attention(q, k, v)
torch.cuda.synchronize()
ref = torch.softmax(q[0, -1] @ k[0, -1].T / 4, -1) @ v[0, -1]
print(json.dumps({'outcome': 'ok', 'last_head_max_abs_error': float((out[0, -1] - ref).abs().max())}))
""", {"batch": 1, "heads": 65536, "seqlen": 10, "hdim": 16, "dtype": "fp32", "train": False}, {"GRID_HEADS": "65536"}),
    "ADV-SDPA-EFFICIENT-GRID-DIM-CRASH:control": (GRID, {"batch": 1, "heads": 65535, "seqlen": 10, "hdim": 16,
                                                         "dtype": "fp32", "train": False}, {"GRID_HEADS": "65535"}),
    # pytorch/pytorch#188015: with q = k = 0 the scores are uniform, so the loss sum(out * g) is linear in v and equals
    # sum(v.grad * v) per (batch, head) slot exactly when the backward regenerates the forward's dropout mask
    "ADV-SDPA-EFFICIENT-DROPOUT-RNG-OFFSET-32BIT-PRE214": (DROPOUT := """
import os, torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
b, h, n = map(int, os.environ['DROP_SHAPE'].split(','))
torch.manual_seed(0)
q, k = (torch.zeros(b, h, n, 64, device='cuda', dtype=torch.float32, requires_grad=True) for _ in range(2))
v = torch.randn(b, h, n, 64, device='cuda', dtype=torch.float32, requires_grad=True)
with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
g = torch.randn_like(out)
out.backward(g)
lhs = (out.detach() * g).sum(dim=(2, 3)).double().flatten()
rhs = (v.grad * v.detach()).sum(dim=(2, 3)).double().flatten()
rel = ((lhs - rhs).abs() / lhs.abs().clamp_min(1e-6)).tolist()
bad = [i for i, r in enumerate(rel) if r > 0.05]
print(json.dumps({'outcome': 'wrong-results' if bad else 'ok', 'slots': b * h, 'mismatched_slots': bad[:64],
                  'max_rel_matched': max((r for r in rel if r <= 0.05), default=None)}))
""", {"batch": 1, "heads": 40, "seqlen": 8192, "hdim": 64, "dtype": "fp32", "train": True, "dropout": 0.5},
        {"DROP_SHAPE": "1,40,8192"}),
    "ADV-SDPA-EFFICIENT-DROPOUT-RNG-OFFSET-32BIT-PRE214:control": (DROPOUT, {
        "batch": 1, "heads": 32, "seqlen": 8192, "hdim": 64, "dtype": "fp32", "train": True, "dropout": 0.5},
        {"DROP_SHAPE": "1,32,8192"}),
}
"""Advisory id -> (code, config, environment); an id ending in ':control' is the same code on a config its advisory
does not apply to, which must run clean."""


def main() -> None:
    import torch

    env = {"gpu": torch.cuda.get_device_name(), "sm": int("".join(map(str, torch.cuda.get_device_capability()))),
           "torch": torch.__version__.split("+")[0], "cudnn": ".".join(
               str(x) for x in divmod(torch.backends.cudnn.version(), 10000)[:1] + divmod(
                   torch.backends.cudnn.version() % 10000, 100))}
    only = [x for x in os.environ.get("ONLY", "").split(",") if x]
    with open(sys.argv[1], "w") as out:
        for name, (code, config, *extra) in CASES.items():
            rule, control = name.removesuffix(":control"), name.endswith(":control")
            if only and rule not in only:
                continue
            done = subprocess.run([sys.executable, "-c", "import json\n" + code], capture_output=True, text=True,
                                  timeout=300, env={**os.environ, **(extra[0] if extra else {})})
            if done.returncode == 0 and done.stdout.strip():
                result = json.loads(done.stdout.strip().splitlines()[-1])
            else:
                lines = done.stderr.strip().splitlines() or ["(no output)"]
                raised = [line for line in lines if RAISED.match(line)]
                result = {"outcome": "crashed", "error": (raised or lines)[-1][:300]}
            line = json.dumps({"advisory": rule, **({"control": True} if control else {}), "config": config, "env": env,
                               **result})
            out.write(line + "\n")
            print(line)


if __name__ == "__main__":
    main()
