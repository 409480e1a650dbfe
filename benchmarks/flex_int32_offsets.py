"""Compiled FlexAttention on key/value buffers of 2^31 elements or more (pytorch/pytorch#160955, #190857): each case
runs in its own process (an illegal memory access ends the CUDA context) and prints whether it ran and, where it
did, its largest error against SDPA's math backend on a slice. Run on a GPU.

    python benchmarks/flex_int32_offsets.py [WORD ...]   # only the cases whose name holds a WORD
"""
import re
import subprocess
import sys

CASES = {  # name: (k/v storage, permute to (batch, heads, seqlen, hdim), seqlen_q, train)
    "bshd view past 2^31, q 64": ((1, 24000, 700, 128), (0, 2, 1, 3), 64, False),
    "bshd view below 2^31, q 64": ((1, 16000, 700, 128), (0, 2, 1, 3), 64, False),
    "bhsd heads 80, q 64": ((1, 80, 216000, 128), (0, 1, 2, 3), 64, False),
    "bhsd batch 80, q 1024": ((80, 1, 216000, 128), (0, 1, 2, 3), 1024, False),
    "bshd view past 2^31, q 1024": ((1, 24000, 700, 128), (0, 2, 1, 3), 1024, False),
    "bshd view past 2^31, q 1024, train": ((1, 24000, 700, 128), (0, 2, 1, 3), 1024, True),
}

CHILD = r"""
import sys, torch
from torch.nn.attention.flex_attention import flex_attention
storage, order, seqlen_q, train = eval(sys.argv[1])
torch.manual_seed(0)
kv = torch.randn(storage, device="cuda", dtype=torch.bfloat16).permute(order)
q = torch.randn(kv.shape[0], kv.shape[1], seqlen_q, 128, device="cuda", dtype=torch.bfloat16)
if train:
    kv.requires_grad_(True)
out = torch.compile(flex_attention)(q, kv, kv)
if train:
    out.sum().backward()
torch.cuda.synchronize()
ref = torch.nn.functional.scaled_dot_product_attention(q[:2, :2].float(), kv[:2, :2].float(), kv[:2, :2].float())
print(f"ran; max error {(out[:2, :2].float() - ref).abs().max().item():.3g}"
      + (f"; grad finite {bool(torch.isfinite(kv.grad).all())}" if train else ""))
"""


def main() -> None:
    import torch

    print(torch.__version__, torch.cuda.get_device_name())
    for name, case in CASES.items():
        if sys.argv[1:] and not any(word in name for word in sys.argv[1:]):
            continue
        done = subprocess.run([sys.executable, "-c", CHILD, repr(case)], capture_output=True, text=True, timeout=600)
        errors = [line for line in done.stderr.splitlines() if re.match(r"^[\w.]*(Error|Exception)\b", line)]
        print(f"{name:36} exit {done.returncode}: {(done.stdout.strip() or (errors or ['?'])[-1])[:300]}")


if __name__ == "__main__":
    main()
