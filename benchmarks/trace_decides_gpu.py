"""`attndoctor trace` deciding what it saw, on a GPU, with Hugging Face models of random weights (no download):
a Qwen2 batched generation with left padding under sdpa, and a Gemma-2 (softcap 50, sliding window) under sdpa.

    python benchmarks/trace_decides_gpu.py qwen2      # the traced program
    python benchmarks/trace_decides_gpu.py gemma2     # the traced program
    python benchmarks/trace_decides_gpu.py all        # traces both through the CLI, writes $OUT/*.json and a summary
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve()
OUT = Path(os.environ.get("OUT", "trace-decides-out"))


def qwen2() -> None:
    """Greedy generation for two prompts of different lengths, left padded, in bf16 on the GPU."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=1024, hidden_size=256, intermediate_size=512, num_hidden_layers=4,
                         num_attention_heads=8, num_key_value_heads=2)
    model = Qwen2ForCausalLM._from_config(config, attn_implementation="sdpa", dtype=torch.bfloat16).cuda()
    model.eval()
    ids = torch.randint(1, 1024, (2, 24), device="cuda")
    mask = torch.ones_like(ids)
    ids[1, :10] = 0
    mask[1, :10] = 0  # the second prompt is 14 tokens, padded on the left
    out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=4, do_sample=False, pad_token_id=0)
    print("generated", tuple(out.shape))


def gemma2() -> None:
    """A forward pass of a Gemma-2 (attn_logit_softcapping 50, sliding window 16 on the sliding layers) under sdpa."""
    import torch
    from transformers import Gemma2Config, Gemma2ForCausalLM

    torch.manual_seed(0)
    config = Gemma2Config(vocab_size=1024, hidden_size=256, intermediate_size=512, num_hidden_layers=4,
                          num_attention_heads=8, num_key_value_heads=4, head_dim=32, sliding_window=16,
                          attn_logit_softcapping=50.0)
    config._attn_implementation = "sdpa"
    model = Gemma2ForCausalLM(config).to("cuda", torch.bfloat16)
    model.config._attn_implementation = "sdpa"
    model.eval()
    with torch.no_grad():
        try:
            print(model(input_ids=torch.randint(1, 1024, (2, 64), device="cuda")).logits.shape)
        except ValueError as exc:  # transformers releases that refuse softcap under sdpa
            print(f"gemma2 under sdpa refused: {exc}")


def run_all() -> None:
    import transformers

    OUT.mkdir(parents=True, exist_ok=True)
    summary: dict = {"transformers": transformers.__version__}
    for case in ("qwen2", "gemma2"):
        report = OUT / f"{case}.json"
        done = subprocess.run([sys.executable, "-m", "attndoctor", "trace", "--format", "json", "--output",
                               str(report), "--", sys.executable, str(HERE), case], capture_output=True, text=True)
        text = subprocess.run([sys.executable, "-m", "attndoctor", "trace", "--", sys.executable, str(HERE), case],
                              capture_output=True, text=True)
        (OUT / f"{case}.txt").write_text(text.stdout + text.stderr)
        entry: dict = {"exit": done.returncode, "stdout": done.stdout[-400:], "stderr_tail": done.stderr[-800:]}
        if report.exists():
            doc = json.loads(report.read_text())
            entry["calls"] = [{k: c.get(k) for k in ("site", "module", "phase", "ran", "count", "verdict", "intent")}
                              | {"advisories": [(a["rule"], a["state"], a["where"]) for a in c.get("advisories", [])],
                                 "intent_findings": [f["text"] for f in c.get("intent_findings", [])],
                                 "mask_kind": (c.get("details") or {}).get("mask_kind"),
                                 "fully_masked_rows": (c.get("details") or {}).get("fully_masked_rows"),
                                 "seqlen": [c["config"].get("seqlen_q"), c["config"].get("seqlen_kv")]}
                              for c in doc["calls"]]
        summary[case] = entry
    (OUT / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    print(json.dumps(summary, indent=1, default=str)[:9000])


if __name__ == "__main__":
    {"qwen2": qwen2, "gemma2": gemma2, "all": run_all}[sys.argv[1]]()
