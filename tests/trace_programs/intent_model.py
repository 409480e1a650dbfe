"""A Gemma-2-like model (softcap 50, window 4 on even layers) and a gpt-oss-like layer (sinks) under SDPA, called
through a transformers-like attention function; a call made through a library in site-packages; and a layer asking
for softcap 30 that calls a flash-attn stand-in with and without it."""
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE / "fake_libs"), str(HERE / "fake_libs" / "site-packages")]

import attnlib  # noqa: E402
from flash_attn import flash_attn_func  # noqa: E402
from transformers.integrations.sdpa_attention import sdpa_attention_forward  # noqa: E402


class SoftcapAttention(torch.nn.Module):
    def __init__(self, layer):
        super().__init__()
        self.attn_logit_softcapping = 50.0
        self.sliding_window = 4 if layer % 2 == 0 else None

    def forward(self, x):
        window, softcap = self.sliding_window, self.attn_logit_softcapping
        return sdpa_attention_forward(self, x, x, x, None, sliding_window=window, softcap=softcap)  # ATTN-SITE


class SinkAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.sinks = torch.nn.Parameter(torch.zeros(2))

    def forward(self, x):
        return sdpa_attention_forward(self, x, x, x, None, s_aux=self.sinks)  # SINK-ATTN-SITE


class FlashSoftcapAttention(torch.nn.Module):
    """Asks for softcap 30 and calls flash-attn with it (applied) or without it (dropped)."""

    def __init__(self, passes_softcap):
        super().__init__()
        self.softcap = 30.0
        self.passes_softcap = passes_softcap

    def forward(self, x):
        if self.passes_softcap:
            return flash_attn_func(x, x, x, causal=True, softcap=self.softcap)  # FLASH-APPLIED-SITE
        return flash_attn_func(x, x, x, causal=True)  # FLASH-DROPPED-SITE


class Layer(torch.nn.Module):
    def __init__(self, layer):
        super().__init__()
        self.self_attn = SoftcapAttention(layer)

    def forward(self, x):
        return self.self_attn(x)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([Layer(i) for i in range(4)])

    def forward(self, x):
        for layer in self.layers:
            layer(x)
        return x


with torch.no_grad():
    x = torch.randn(1, 2, 16, 8)
    Model()(x)  # MODEL-SITE
    Model()(x[:, :, :3])  # SHORT-SITE
    SinkAttention()(x)  # SINK-SITE
    attnlib.attend(x)  # LIB-SITE
    FlashSoftcapAttention(True)(x.transpose(1, 2))
    FlashSoftcapAttention(False)(x.transpose(1, 2))
