"""Like transformers' sdpa_attention_forward: softcap, sliding_window and s_aux arrive in kwargs and SDPA gets none."""
import torch.nn.functional as F


def sdpa_attention_forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    return F.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask, dropout_p=dropout,
                                          scale=scaling, is_causal=attention_mask is None)  # LIBRARY-SITE
