"""An nn.Module model whose attention layer calls SDPA: the module path names the layer."""
import torch
import torch.nn.functional as F


class Attention(torch.nn.Module):
    def forward(self, x):
        return F.scaled_dot_product_attention(x, x, x, is_causal=True)  # SDPA-SITE


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn = Attention()

    def forward(self, x):
        return self.self_attn(x)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([Block(), Block()])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


model = Model()
model(torch.randn(1, 2, 8, 16))  # MODEL-SITE
