"""Two attention sites; the second gets a NaN in its keys on the second optimizer step."""
import torch
import torch.nn.functional as F

w = torch.randn(32, 32)
opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)  # counts the steps
x = torch.randn(1, 4, 16, 32, requires_grad=True)
for step in range(3):
    h = x @ w
    a = F.scaled_dot_product_attention(h, h, h)  # CLEAN-SITE
    k = h.clone()
    if step == 1:
        k = k.index_fill(2, torch.tensor([3]), float("nan"))
    b = F.scaled_dot_product_attention(a, k, h, is_causal=True)  # NAN-SITE
    b.sum().backward()
    opt.step()
    opt.zero_grad()
    x.grad = None
