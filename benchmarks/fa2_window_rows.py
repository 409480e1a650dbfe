"""flash-attn 2's sliding window when seqlen_q exceeds seqlen_kv + 1 (Dao-AILab/flash-attention#895): runs the FA2
kernels PyTorch vendors (aten._flash_attention_forward, whose host code sets and clamps the window as
csrc/flash_attn/flash_api.cpp does) and counts the query rows whose output differs from attention under the
documented window mask (bottom-right aligned: row i sees keys j with i + sk - sq - L <= j <= i + sk - sq + R,
-1 = unbounded). Prints one line per case; run on a GPU with sm80 or later.

    python benchmarks/fa2_window_rows.py
"""
import torch

CASES = [  # (seqlen_q, seqlen_kv, left, right)
    (64, 16, 4, -1), (64, 16, -1, 20), (64, 16, 4, 20), (18, 16, 4, -1), (17, 16, 4, -1), (64, 16, 4, 8),
    (16, 64, 4, -1), (64, 64, 4, -1),
]


def reference(q, k, v, left, right):
    sq, sk = q.shape[1], k.shape[1]
    i = torch.arange(sq, device=q.device)[:, None]
    j = torch.arange(sk, device=q.device)[None, :]
    keep = torch.ones(sq, sk, dtype=torch.bool, device=q.device)
    if left >= 0:
        keep &= j >= i + sk - sq - left
    if right >= 0:
        keep &= j <= i + sk - sq + right
    s = torch.einsum("bqhd,bkhd->bhqk", q.float(), k.float()) / q.shape[-1] ** 0.5
    s = s.masked_fill(~keep, float("-inf"))
    p = torch.softmax(s, dim=-1).nan_to_num(0.0)  # a row that sees no key is zero, as flash-attn returns it
    return torch.einsum("bhqk,bkhd->bqhd", p, v.float())


def main() -> None:
    torch.manual_seed(0)
    print(torch.__version__, torch.cuda.get_device_name(), torch.cuda.get_device_capability())
    for sq, sk, left, right in CASES:
        q = torch.randn(1, sq, 2, 64, device="cuda", dtype=torch.float16)
        k = torch.randn(1, sk, 2, 64, device="cuda", dtype=torch.float16)
        v = torch.randn(1, sk, 2, 64, device="cuda", dtype=torch.float16)
        out = torch.ops.aten._flash_attention_forward(q, k, v, None, None, sq, sk, 0.0, False, False,
                                                      window_size_left=left, window_size_right=right)[0]
        want = reference(q, k, v, left, right)
        wrong = ((out.float() - want).abs().amax(dim=(0, 2, 3)) > 2e-2).nonzero().flatten().tolist()
        print(f"seqlen_q {sq:3} seqlen_kv {sk:3} window ({left:2},{right:2}): {len(wrong):2} rows wrong"
              + (f" (rows {wrong[0]}..{wrong[-1]})" if wrong else ""))


if __name__ == "__main__":
    main()
