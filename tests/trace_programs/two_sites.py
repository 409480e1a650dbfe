"""Calls SDPA at two lines: three times with GQA and is_causal, once with a boolean mask; then exits 3."""
import sys

import torch
import torch.nn.functional as F

q = torch.randn(2, 8, 64, 32, requires_grad=True)
k = torch.randn(2, 2, 64, 32, requires_grad=True)
v = torch.randn(2, 2, 64, 32, requires_grad=True)
for _ in range(3):
    F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True).sum().backward()  # GQA-SITE
mask = torch.ones(64, 64, dtype=torch.bool).tril()
with torch.no_grad():
    out = F.scaled_dot_product_attention(q, q, q, attn_mask=mask)  # MASK-SITE
print("program output", tuple(out.shape))
sys.stderr.write("program stderr\n")
sys.exit(3)
