"""Asks cuDNN, through cudnn-frontend's device descriptors, which SDPA graphs it supports on GPUs that are not here.

Run on a machine with one NVIDIA GPU, cuDNN >= 9.8 and nvidia-cudnn-frontend >= 1.13:
    python tools/cudnn_devices/probe.py OUT.jsonl
Each target GPU is this GPU's descriptor (cudnn.create_device_properties(0)) with its architecture, SM count and
shared-memory fields replaced, and the graph's sm_version and sm_count set to the target's (cudnn-frontend's own
checks read those, not the descriptor); every graph of the grid is validated, lowered and heuristics-queried
(check_support) against it, never built or run (plans for a foreign architecture cannot load). One JSON line per
(target, graph): what cuDNN answered, and the message when it refused.
"""
from __future__ import annotations

import itertools
import json
import sys
import time

# Architecture facts per target: deviceVer (major*100 + minor*10), SMs, shared memory per block (opt-in) and per SM,
# L2 bytes. Figures from the CUDA C Programming Guide's per-compute-capability table and the products' datasheets.
TARGETS = {
    "T4": dict(deviceVer=750, multiProcessorCount=40, maxSharedMemoryPerBlockOptin=65536,
               sharedMemPerMultiprocessor=65536, l2CacheSize=4194304),
    "A100": dict(deviceVer=800, multiProcessorCount=108, maxSharedMemoryPerBlockOptin=166912,
                 sharedMemPerMultiprocessor=167936, l2CacheSize=41943040),
    "RTX A6000 (sm86)": dict(deviceVer=860, multiProcessorCount=84, maxSharedMemoryPerBlockOptin=101376,
                             sharedMemPerMultiprocessor=102400, l2CacheSize=6291456),
    "L40S": dict(deviceVer=890, multiProcessorCount=142, maxSharedMemoryPerBlockOptin=101376,
                 sharedMemPerMultiprocessor=102400, l2CacheSize=100663296),
    "H100 (this GPU)": {},
    "H100 (as a descriptor)": dict(deviceVer=900, multiProcessorCount=132, maxSharedMemoryPerBlockOptin=232448,
                                   sharedMemPerMultiprocessor=233472, l2CacheSize=52428800),
    "B200": dict(deviceVer=1000, multiProcessorCount=148, maxSharedMemoryPerBlockOptin=232448,
                 sharedMemPerMultiprocessor=233472, l2CacheSize=132120576),
    "B300": dict(deviceVer=1030, multiProcessorCount=148, maxSharedMemoryPerBlockOptin=232448,
                 sharedMemPerMultiprocessor=233472, l2CacheSize=132120576),
    "RTX PRO 6000 (sm120)": dict(deviceVer=1200, multiProcessorCount=188, maxSharedMemoryPerBlockOptin=101376,
                                 sharedMemPerMultiprocessor=102400, l2CacheSize=134217728),
}
HDIMS = [(64, 64), (128, 128), (192, 128), (256, 256), (320, 320), (512, 512)]
DTYPES = ["bf16", "fp16", "fp8"]
PHASES = ["fwd-infer", "fwd-train", "bwd", "bwd-deterministic"]
EXTRAS = [  # (name, dtype, hdim, phase, options)
    ("dropout", "bf16", (128, 128), "fwd-train", {"dropout": 0.1}),
    ("dropout", "bf16", (128, 128), "bwd", {"dropout": 0.1}),
    ("dropout", "bf16", (128, 128), "bwd-deterministic", {"dropout": 0.1}),
    ("dropout", "fp8", (128, 128), "bwd-deterministic", {"dropout": 0.1}),
    ("sinks", "bf16", (128, 128), "fwd-infer", {"sinks": True}),
    ("sinks", "bf16", (128, 128), "bwd", {"sinks": True}),
    ("no-causal", "bf16", (256, 256), "bwd", {"causal": False}),
    ("window", "bf16", (128, 128), "bwd", {"window": 256}),
    ("decode", "bf16", (128, 128), "fwd-infer", {"sq": 1}),
]
B, H, S = 2, 8, 1024


def descriptor(cudnn, base: dict, fields: dict):
    data = dict(base)
    for key, value in fields.items():
        if key in data:
            data[key] = value
    return cudnn.create_device_properties(json.dumps(data)), sorted(k for k in fields if k not in base)


def graph_for(cudnn, prop, dtype: str, hdim: tuple, phase: str, opts: dict, sm: int | None, sms: int | None):
    """Declares one SDPA graph (forward or backward) against the descriptor and asks check_support."""
    dq, dv = hdim
    sq = opts.get("sq", S)
    fp8 = dtype == "fp8"
    io = {"bf16": cudnn.data_type.BFLOAT16, "fp16": cudnn.data_type.HALF, "fp8": cudnn.data_type.FP8_E4M3}[dtype]
    # The descriptor steers cuDNN's heuristics; the frontend's own checks read the target's sm from sm_version (left
    # unset they read the GPU this runs on).
    g = cudnn.pygraph(io_data_type=io, intermediate_data_type=cudnn.data_type.FLOAT,
                      compute_data_type=cudnn.data_type.FLOAT, device_property=prop, sm_version=sm, sm_count=sms)

    def t(name, s, d, dt=None):
        return g.tensor(name=name, dim=[B, H, s, d], stride=[H * s * d, s * d, d, 1], data_type=dt or io)

    def scalar(name, dt=cudnn.data_type.FLOAT):
        return g.tensor(name=name, dim=[1, 1, 1, 1], stride=[1, 1, 1, 1], data_type=dt)

    q, k, v = t("q", sq, dq), t("k", S, dq), t("v", S, dv)
    kw = {"attn_scale": dq ** -0.5}
    if opts.get("causal", True) and sq == S:
        kw["use_causal_mask"] = True
    if opts.get("window"):
        kw["sliding_window_length"] = opts["window"]
    if opts.get("dropout"):
        kw["dropout"] = (opts["dropout"], scalar("seed", cudnn.data_type.INT64), scalar("offset", cudnn.data_type.INT64))
    if opts.get("sinks"):
        kw["sink_token"] = g.tensor(name="sink", dim=[1, H, 1, 1], stride=[H, 1, 1, 1], data_type=cudnn.data_type.FLOAT)
    if phase.startswith("fwd"):
        train = phase == "fwd-train"
        if fp8:
            o, st, amax_s, amax_o = g.sdpa_fp8(q=q, k=k, v=v, descale_q=scalar("dq"), descale_k=scalar("dk"),
                                              descale_v=scalar("dv"), descale_s=scalar("ds"), scale_s=scalar("ss"),
                                              scale_o=scalar("so"), generate_stats=train, **kw)
            for a in (amax_s, amax_o):
                a.set_output(True).set_dim([1, 1, 1, 1]).set_stride([1, 1, 1, 1]).set_data_type(cudnn.data_type.FLOAT)
        else:
            o, st = g.sdpa(name="sdpa", q=q, k=k, v=v, generate_stats=train, **kw)
        o.set_output(True).set_dim([B, H, sq, dv]).set_stride([H * sq * dv, sq * dv, dv, 1])
        if train:
            st.set_output(True).set_dim([B, H, sq, 1]).set_stride([H * sq, sq, 1, 1]).set_data_type(cudnn.data_type.FLOAT)
    else:
        o, do = t("o", sq, dv), t("dO", sq, dv)
        st = g.tensor(name="stats", dim=[B, H, sq, 1], stride=[H * sq, sq, 1, 1], data_type=cudnn.data_type.FLOAT)
        if phase == "bwd-deterministic":
            kw["use_deterministic_algorithm"] = True
        if fp8:
            outs = g.sdpa_fp8_backward(q=q, k=k, v=v, o=o, dO=do, stats=st, descale_q=scalar("dq"),
                                       descale_k=scalar("dk"), descale_v=scalar("dv"), descale_o=scalar("do"),
                                       descale_dO=scalar("ddo"), descale_s=scalar("ds"), descale_dP=scalar("ddp"),
                                       scale_s=scalar("ss"), scale_dQ=scalar("sdq"), scale_dK=scalar("sdk"),
                                       scale_dV=scalar("sdv"), scale_dP=scalar("sdp"), **kw)
            grads, amaxes = outs[:3], outs[3:]
            for a in amaxes:
                a.set_output(True).set_dim([1, 1, 1, 1]).set_stride([1, 1, 1, 1]).set_data_type(cudnn.data_type.FLOAT)
        else:
            if opts.get("sinks"):
                kw["dSink_token"] = g.tensor(name="dsink", dim=[1, H, 1, 1], stride=[H, 1, 1, 1],
                                             data_type=cudnn.data_type.FLOAT)
            grads = g.sdpa_backward(name="sdpa_backward", q=q, k=k, v=v, o=o, dO=do, stats=st, **kw)
        for grad, s, d in zip(grads, (sq, S, S), (dq, dq, dv)):
            grad.set_output(True).set_dim([B, H, s, d]).set_stride([H * s * d, s * d, d, 1])
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    g.check_support()
    return g


def first_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return " ".join(text.split())[:400]


def main(path: str) -> int:
    import cudnn

    base = json.loads(cudnn.create_device_properties(0).serialize())
    info = {"cudnn_backend": cudnn.backend_version(), "cudnn_frontend": cudnn.__version__, "base_descriptor": base}
    grid = [("plain", dt, hd, ph, {}) for dt, hd, ph in itertools.product(DTYPES, HDIMS, PHASES)] + EXTRAS
    rows = []
    with open(path, "w", encoding="utf-8") as out:
        out.write(json.dumps({"kind": "run", **info}) + "\n")
        for target, fields in TARGETS.items():
            prop, missing = descriptor(cudnn, base, fields)
            for name, dtype, hdim, phase, opts in grid:
                start = time.perf_counter()
                try:
                    graph_for(cudnn, prop, dtype, hdim, phase, opts, fields.get("deviceVer", 0) // 10 or None,
                              fields.get("multiProcessorCount"))
                    answer, message = "supported", ""
                except Exception as exc:  # every refusal is the observation
                    answer, message = "refused", first_line(exc)
                row = {"kind": "check", "target": target, "deviceVer": fields.get("deviceVer", base.get("deviceVer")),
                       "variant": name, "dtype": dtype, "hdim": hdim[0], "hdim_v": hdim[1], "phase": phase,
                       "options": opts, "answer": answer, "message": message, "fields_not_in_descriptor": missing,
                       "seconds": round(time.perf_counter() - start, 4)}
                rows.append(row)
                out.write(json.dumps(row) + "\n")
                out.flush()
    # the short table: per graph, the targets that answered "supported"
    targets = list(TARGETS)
    print("cudnn", info["cudnn_backend"], "frontend", info["cudnn_frontend"])
    print("graph".ljust(40), " ".join(t.split(" ")[0][:6].ljust(6) for t in targets))
    table: dict = {}
    for r in rows:
        table.setdefault((r["variant"], r["dtype"], r["hdim"], r["hdim_v"], r["phase"]), {})[r["target"]] = r["answer"]
    for key, answers in table.items():
        label = f"{key[0]} {key[1]} d{key[2]}/{key[3]} {key[4]}"
        print(label.ljust(40), " ".join(("ok" if answers.get(t) == "supported" else "--").ljust(6) for t in targets))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "cudnn_devices.jsonl"))
