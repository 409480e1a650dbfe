"""Which SDPA backend takes a masked grouped-query call, and the peak memory it needs, against K/V expanded.

    python3 benchmarks/gqa_mask_choice.py NAME   (writes $OUT/NAME.json; run once as is and once with
    TORCH_CUDNN_SDPA_DEPRIORITIZED=1, the order where cuDNN attention comes after math)
"""
import json, os, sys, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
names = {int(getattr(SDPBackend, n)): n for n in ("MATH", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION")
         if hasattr(SDPBackend, n)}
rows = []
def run(label, q, k, v, mask, gqa, backends=None):
    torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats(); base = torch.cuda.memory_allocated()
    choice = torch.ops.aten._fused_sdp_choice(q, k, v, mask, 0.0, False, enable_gqa=gqa) if backends is None else None
    err = ""
    try:
        if backends is None:
            F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=gqa)
        else:
            with sdpa_kernel(backends):
                F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=gqa)
        torch.cuda.synchronize()
    except Exception as e:
        err = f"{type(e).__name__}: {str(e)[:120]}"
    peak = (torch.cuda.max_memory_allocated() - base) / 2**30
    rows.append({"case": label, "choice": names.get(choice, choice), "peak_gib": round(peak, 2), "error": err})
dev = "cuda"
B, H, KV, L, D = 1, 32, 8, 8192, 128
q = torch.randn(B, H, L, D, device=dev, dtype=torch.bfloat16)
k = torch.randn(B, KV, L, D, device=dev, dtype=torch.bfloat16); v = torch.randn_like(k)
mask = torch.ones(L, L, device=dev, dtype=torch.bool).tril()
run("mask + enable_gqa", q, k, v, mask, True)
run("no mask + enable_gqa", q, k, v, None, True)
ke, ve = k.repeat_interleave(H // KV, 1), v.repeat_interleave(H // KV, 1)
run("mask + K/V repeat_interleave", q, ke, ve, mask, False)
run("mask + enable_gqa under CUDNN_ATTENTION", q, k, v, mask, True, [SDPBackend.CUDNN_ATTENTION])
json.dump({"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(), "gpu": torch.cuda.get_device_name(),
           "TORCH_CUDNN_SDPA_DEPRIORITIZED": os.environ.get("TORCH_CUDNN_SDPA_DEPRIORITIZED", ""), "rows": rows},
          open(os.path.join(os.environ.get("OUT", "."), f"{sys.argv[1] if len(sys.argv) > 1 else 'gqa_mask_choice'}.json"), "w"),
          indent=1)
print(torch.__version__, torch.backends.cudnn.version(), torch.cuda.get_device_name())
for r in rows: print(f"{r['case']:42} {str(r['choice']):20} {r['peak_gib']:7} {r['error']}")
