"""Which learnable_sink dtypes flash-attn 4 takes on this GPU, and whether training gives the sink a gradient."""
# Run by benchmarks/fa4_gpu.sh with PROBE=benchmarks/fa4_sinks.py; one JSON line per case, against float64.

import importlib.metadata as metadata
import json

import torch
import flash_attn.cute as fa


def reference(q, k, v, sink, scale):
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) * scale
    column = sink.view(1, -1, 1, 1).expand(scores.shape[0], -1, scores.shape[2], 1)
    probs = torch.softmax(torch.cat([scores, column], -1), -1)[..., :-1]
    return torch.einsum("bhqk,bkhd->bqhd", probs, v)


def rel(a, b):
    return ((a.double() - b.double()).norm() / b.double().norm().clamp_min(1e-30)).item()


def case(dtype, sink_dtype, train):
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 256, 8, 128, device="cuda", dtype=dtype, requires_grad=train) for _ in range(3))
    sink = torch.randn(8, device="cuda", dtype=sink_dtype, requires_grad=train)
    sm = "".join(map(str, torch.cuda.get_device_capability()))
    row = {"flash_attn_4": metadata.version("flash-attn-4"), "sm": sm,
           "dtype": str(dtype).split(".")[1], "sink_dtype": str(sink_dtype).split(".")[1], "train": train}
    try:
        out = fa.flash_attn_func(q, k, v, learnable_sink=sink)
        out = out[0] if isinstance(out, tuple) else out
        grad = torch.randn_like(out)
        if train:
            out.backward(grad)
        torch.cuda.synchronize()
    except Exception as exc:  # the outcome is the finding
        row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
        return row
    ref_in = [t.detach().double().requires_grad_(train) for t in (q, k, v, sink)]
    ref = reference(*ref_in, 128 ** -0.5)
    row["out"] = rel(out.detach(), ref.detach())
    if train:
        ref.backward(grad.double())
        row.update(dq=rel(q.grad, ref_in[0].grad), dv=rel(v.grad, ref_in[2].grad),
                   dsink=None if sink.grad is None else rel(sink.grad, ref_in[3].grad))
    return row


for dtype in (torch.bfloat16, torch.float16):
    for sink_dtype in dict.fromkeys((dtype, torch.float32, torch.bfloat16)):
        for train in (False, True):
            print(json.dumps(case(dtype, sink_dtype, train)), flush=True)
