"""A torch.compile'd function calling SDPA, run three times: its calls live inside the compiled graph."""
import torch
import torch.nn.functional as F


def attend(x):
    return F.scaled_dot_product_attention(x, x, x, is_causal=True)  # COMPILED-SITE


compiled = torch.compile(attend, backend="eager")
for _ in range(3):
    compiled(torch.randn(1, 2, 8, 16))
