"""FlexAttention sweep for `attndoctor verify --backend flex-attention --config-file`, and the table of its records.

    python benchmarks/flex_grid.py configs OUT.jsonl [--shard I/N]   # write the sweep (or every N-th config from I)
    python benchmarks/flex_grid.py table RECORDED.jsonl              # one line per recorded probe

The sweep: head dims 32..512 (96, 192 and the 192/128 MLA pair included) in bf16 training with a causal mask; fp16
and fp32 at 128, 256 and 512; inference; every mask and score_mod the runner builds (none, bottom-right, padding,
arbitrary, window, softcap, ALiBi, post-scale bias, packed documents); GQA, MQA, decode and fp8. Each shape costs
one torch.compile of flex_attention (4-11 s on an H100), so it stays at about 30 probes.
"""

from __future__ import annotations

import json
import sys

BASE = {"batch": 2, "heads": 8, "kv_heads": 8, "seqlen_q": 1024, "seqlen_kv": 1024, "dtype": "bf16", "train": True,
        "mask": "causal", "layout": "bshd"}


def sweep() -> list[dict]:
    cases: list[dict] = []
    for d in (32, 64, 96, 128, 192, 256, 512):
        cases.append({"hdim": d})
    cases.append({"hdim": 192, "hdim_v": 128})
    for dtype, d in (("fp16", 128), ("fp16", 512), ("fp32", 128), ("fp32", 256), ("fp32", 512)):
        cases.append({"hdim": d, "dtype": dtype})
    cases += [{"hdim": 128, "train": False}, {"hdim": 512, "train": False, "dtype": "fp32"}]
    d128 = {"hdim": 128}
    cases += [
        {**d128, "mask": "none"},
        {**d128, "mask": "causal-bottom-right", "seqlen_q": 512},
        {**d128, "mask": "padding"},
        {**d128, "mask": "arbitrary"},
        {**d128, "window": [256, 0]},
        {**d128, "softcap": 30.0},
        {**d128, "bias": "alibi"},
        {**d128, "mask": "none", "bias": "post-scale"},
        {**d128, "mask": "padding-causal", "layout": "thd"},
        {**d128, "heads": 16, "kv_heads": 4},
        {**d128, "heads": 16, "kv_heads": 1},
        {**d128, "heads": 16, "kv_heads": 4, "seqlen_q": 1, "seqlen_kv": 4096, "train": False, "mask": "none"},
        {**d128, "dtype": "fp8", "train": False},
    ]
    out = []
    for i, delta in enumerate(cases):
        config = {**BASE, **delta, "name": f"flex{i:02d}"}
        config.setdefault("hdim_v", config["hdim"])
        out.append(config)
    return out


def table(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            rows = [json.loads(line) for line in handle if line.strip()]
    except OSError as exc:
        return f"no records: {exc}"
    head = f"{'name':7} {'dtype':5} {'d':>7} {'mode':5} {'mask/mod':28} {'outcome':13} {'agree':12} {'err':>8} " \
           f"{'first ms':>9}  error"
    lines = [head, "-" * len(head)]
    for r in rows:
        c = r.get("config", {})
        mods = "+".join(x for x in (c.get("mask", ""), c.get("layout") if c.get("layout") == "thd" else "",
                                     f"win{c['window'][0]}" if c.get("window", [-1])[0] != -1 else "",
                                     f"cap{c['softcap']:g}" if c.get("softcap") else "",
                                     c.get("bias") if c.get("bias") not in (None, "none") else "",
                                     f"gqa{c['heads']}/{c['kv_heads']}" if c.get("heads") != c.get("kv_heads") else "",
                                     f"sq{c['seqlen_q']}" if c.get("seqlen_q") != c.get("seqlen_kv") else "") if x)
        err = r.get("rel_error")
        err = f"{err:.1e}" if isinstance(err, (int, float)) else str(err or "")
        first = r.get("ms_first")
        first = f"{first:.0f}" if isinstance(first, (int, float)) else ""
        d = f"{c.get('hdim')}/{c.get('hdim_v')}" if c.get("hdim") != c.get("hdim_v") else str(c.get("hdim"))
        lines.append(f"{c.get('name', ''):7} {c.get('dtype', ''):5} {d:>7} {'train' if c.get('train') else 'infer':5} "
                     f"{mods[:28]:28} {r.get('outcome', ''):13} {r.get('agreement', ''):12} {err:>8} {first:>9}  "
                     f"{(r.get('error') or '')[:110]}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "configs":
        configs = sweep()
        if "--shard" in argv:
            i, n = (int(x) for x in argv[argv.index("--shard") + 1].split("/"))
            configs = configs[i::n]
        with open(argv[1], "w", encoding="utf-8") as handle:
            for config in configs:
                handle.write(json.dumps(config) + "\n")
        print(f"{len(configs)} configs -> {argv[1]}", file=sys.stderr)
        return 0
    if len(argv) == 2 and argv[0] == "table":
        print(table(argv[1]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
