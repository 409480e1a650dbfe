"""On a GPU: reproduce the advisories this machine's stack reaches that `verify --stress` has no regime for, each in a
fresh process (one ends in an illegal memory access), and write one JSON line per run for the replay test.

Run: python benchmarks/advisory_repro.py OUT.jsonl
"""

from __future__ import annotations

import json
import subprocess
import sys

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
}


def main() -> None:
    import torch

    env = {"gpu": torch.cuda.get_device_name(), "sm": int("".join(map(str, torch.cuda.get_device_capability()))),
           "torch": torch.__version__.split("+")[0], "cudnn": ".".join(
               str(x) for x in divmod(torch.backends.cudnn.version(), 10000)[:1] + divmod(
                   torch.backends.cudnn.version() % 10000, 100))}
    with open(sys.argv[1], "w") as out:
        for rule, (code, config) in CASES.items():
            done = subprocess.run([sys.executable, "-c", "import json\n" + code], capture_output=True, text=True,
                                  timeout=120)
            if done.returncode == 0 and done.stdout.strip():
                result = json.loads(done.stdout.strip().splitlines()[-1])
            else:
                error = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
                result = {"outcome": "crashed", "error": error[:300]}
            line = {"advisory": rule, "config": config, "env": env, **result}
            out.write(json.dumps(line) + "\n")
            print(json.dumps(line))


if __name__ == "__main__":
    main()
