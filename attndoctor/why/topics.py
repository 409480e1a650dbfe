"""What kind of problem a cause is (head dim, GPU architecture, broken install...), read off what it tests."""

from __future__ import annotations

import re
from typing import Any, Mapping

TOPICS = ("gpu-arch", "head-dim", "dtype", "mask", "window", "dropout", "softcap", "bias", "gqa", "seqlen", "layout",
          "paged-kv", "varlen", "fp8", "determinism", "cp", "sinks", "version-mismatch", "install-abi",
          "install-missing", "install-arch", "cuda-driver", "shared-memory", "numerics", "oom", "hang", "other")
"""The closed set of problem kinds, shared by `why`'s JSON and the corpus of pasted errors."""

NAME_TOPICS: Mapping[str, str] = {
    "hdim": "head-dim", "hdim_v": "head-dim", "dtype": "dtype", "mask": "mask", "window_left": "window",
    "window_right": "window", "dropout": "dropout", "softcap": "softcap", "bias": "bias", "heads": "gqa",
    "kv_heads": "gqa", "seqlen_q": "seqlen", "seqlen_kv": "seqlen", "layout": "layout", "qkv_fused": "layout",
    "paged_kv": "paged-kv", "deterministic": "determinism", "cp": "cp", "cp_comm": "cp", "sinks": "sinks",
    "sm": "gpu-arch", "fp8_recipe": "fp8", "batch": "seqlen",
}
"""Config and machine facts a condition reads, and the problem kind a test of each is about."""
INSTALL_TOPICS: Mapping[str, str] = {"arch": "install-arch", "abi": "install-abi", "unreadable": "install-missing"}
PACKAGES = frozenset({"torch", "cuda", "cudnn", "flash_attn", "flash_attn_3", "flash_attn_4", "cutlass_dsl", "cudnn_frontend",
                      "te", "driver", "cudnn_compiled"})
EXTENSION_FILE = re.compile(r"(?:site|dist)-packages[/\\](?:[\w.-]+[/\\])*\w+_(?:cuda|C)\.(?!py\b)")
"""An extension's compiled file under site-packages (flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so): an import
that fails on it found the package installed and its binary not loading."""
WORD_TOPICS: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p, re.I), t) for p, t in (
    # Blackwell's tensor memory (TMEM) holds the accumulators, whose columns grow with the head dim; FlashInfer's
    # NUM_MMA_D_QK / NUM_MMA_D_VO are the head dims in MMA tiles
    (r"head[_ ]?dim|headdim|head[_ ]?size|size per head|hidden_dim|embedding dimension|embed per head|(?<!contiguous )last dimension(?! must be contiguous)|"
     r"(?:\b|_)d_?(?:qk|vo?)\b|tmem", "head-dim"),
    # transformers' "request support for this architecture" / "The current architecture does not support ..." is the
    # model's architecture
    (r"compute capabilit(?:y|ies)|(?:device|GPU|CUDA) (?:with |has )?capability|\bsm_?\d{2,3}|is_sm\d|\bsm\d+x\b|cc_major|ampere|hopper|blackwell|turing|volta|"
     r"(?<!support for this )(?<!current )\barch", "gpu-arch"),
    (r"\bdtype|\bdata type|float16|bfloat16|float32|\bfp16\b|\bbf16\b|\bfp32\b|\bhalf\b", "dtype"),
    # FP4 formats (NVFP4, MXFP4) are the same kind of problem: a narrow float the kernel must support
    (r"\bfp8|float8|e4m3|e5m2|kv[_ -]?cache[_ -]?dtype|\b(?:nv|mx)?fp4\b|float4|\bmxfp\d", "fp8"),
    # a model class "...ForCausalLM" names its task, not a mask
    # xformers' attn_bias is its mask too (LowerTriangularMask, BlockDiagonalMask are attn_bias types)
    (r"causal(?!lm)|attn_mask|mask|block sparsity|sparse_block_size|padding[_ ]side|\battn_bias\b", "mask"), (r"window", "window"), (r"dropout", "dropout"), (r"soft[_ -]?cap", "softcap"),
    (r"alibi|\bbias\b|\battn_bias\b", "bias"), (r"num_heads|num_kv_heads|gqa|\bmqa\b|heads|group_size", "gqa"),
    (r"seqlen|seq_len|sequence length|max_seqlen", "seqlen"), (r"contiguous|stride|layout", "layout"),
    (r"paged|block_table|page_table|page_size|kv_cache", "paged-kv"), (r"varlen|cu_seqlens?|\bthd\b|\bpacking\b|sample_packing|padding[_ -]free", "varlen"),
    (r"determinis", "determinism"), (r"context parallel|sequence parallel|cp_group|cp_size", "cp"), (r"\bsinks?\b|\bs_aux\b", "sinks"),
    (r"undefined symbol|\bABI\b|was compiled against|built for|install(?:ation)? (?:seems to be |is |looks )?broken|"
     r"broken install|" + EXTENSION_FILE.pattern, "install-abi"),
    # xformers' "requires device with capability <= (9, 0) ... (too new)": the installed build's maximum
    # the kernels hub: a hub kernel with no prebuilt build for this machine ("does not have build: torch27-cxx11-...")
    (r"does not have (?:one of )?build|cannot find a build variant|no build variants? found|"
     r"no kernel image|no device code|\(too new\)|not compatible with the current PyTorch installation|sm_\d+ is not|"
     r"\bsm_?\d+\w* kernels? (?:is|are) not available", "install-arch"),
    (r"no module named|not installed|(?:cannot|can't|unable to|failed to|could not|couldn't) import|import error|is not available(?! on CPU)|\bnot is_\w+_available\(\)|"
     r"how to install|\bassert\s+(?:\w+\.)*(?:is_\w+_available\(\)|\w*_AVAILABLE)\b|"
     r"\b(?:xformers|flash[_-]?attn\w*|flashinfer|triton|sageattention|transformer[_-]engine|apex|natten)\s+(?:is\s+)?not found|"
     r"(?:wasn't|was not|not) (?:build|built|compiled) with|operator wasn't built", "install-missing"),
    (r"driver|cuda runtime|CUDA version", "cuda-driver"), (r"shared memory|out of resource", "shared-memory"),
    (r"out of memory", "oom"), (r"\bnan\b|\binf\b|non-finite", "numerics"), (r"\bhang|\bhung\b|deadlock|timed out", "hang"),
    # "the Flash Attention version of Qwen2_5_VL" is an implementation, not a release
    (r"version(?! v?\d+(?:\.\d+)* onwards)(?! of\b)|\bnot new enough\b|\b(?:is|was) (?:too old|outdated)\b|"
     r"\b(?:torch|pytorch|transformers|flash[_-]?attn\w*|xformers|triton|cudnn|cuda|vllm|sglang|diffusers|accelerate|"
     r"transformer[_-]engine|flashinfer|sageattention|deepspeed|peft|trl)\s*>=\s*v?\d+\.\d+", "version-mismatch"),
))


_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*")


def rule_topics(rule: Any) -> tuple[str, ...]:
    """A rule's kinds: the facts its condition tests, the packages it pairs, its effect and data conditions."""
    names = set(getattr(rule, "names", ()) or ())
    text = getattr(rule, "condition_text", "") or ""
    # the condition's first test is what the rule is about ("max(hdim, hdim_v) > 256 and ... dtype ..." is a head dim)
    first: dict[str, int] = {}
    for word in _IDENTIFIER.finditer(text):
        first.setdefault(word.group(0), word.start())
    out = [NAME_TOPICS[n] for n in sorted(names, key=lambda n: (first.get(n, len(text)), n)) if n in NAME_TOPICS]
    if "'fp8'" in text or "fp8_recipe" in names:
        out.append("fp8")
    if "'thd'" in text:
        out.append("varlen")
    if "installed(" in text:
        out.append("install-missing")
    packages = (names | set(getattr(rule, "when", {}) or {})) & PACKAGES
    if getattr(rule, "effect", "") == "api-mismatch" or len(packages - {"cudnn_compiled"}) >= 2:
        out.append("version-mismatch")
    if getattr(rule, "data", ()) or getattr(rule, "effect", "") == "wrong-results":
        out.append("numerics")
    if not out and packages:
        out.append("version-mismatch")
    return tuple(dict.fromkeys(out)) or ("other",)


def text_topics(*texts: str) -> tuple[str, ...]:
    """The kinds a message's own words name (for messages no rule models)."""
    joined = " ".join(t for t in texts if t)
    return tuple(dict.fromkeys(t for pattern, t in WORD_TOPICS if pattern.search(joined)))


_GROUP_NAME = re.compile(r"\(\?P<\w+>")
"""A placeholder's name in an index pattern ({flash_attn_version}) is the source's variable, not the message's words."""


MASK_AS_BIAS = frozenset({"pytorch"})
"""Libraries whose kernels take the caller's mask as their `bias`: SDPA hands attn_mask to the memory-efficient kernel
as its attn_bias (pytorch/pytorch aten/src/ATen/native/transformers/attention.cpp@v2.6.0:744), so its messages about
`bias` are about the mask the program passed."""


def entry_topics(entry: Any, rules: Mapping[str, Any]) -> tuple[str, ...]:
    """A catalogue or index message's kinds: its install kind, else its rules' kinds, else its own words."""
    if getattr(entry, "topic", ""):
        return tuple(entry.topic)
    if getattr(entry, "install", ""):
        return (INSTALL_TOPICS.get(entry.install, "install-missing"),)
    linked = [t for rid in getattr(entry, "rules", ()) if rid in rules for t in rule_topics(rules[rid])]
    pattern = getattr(entry, "pattern", None) and entry.pattern.pattern or ""
    words = re.sub(r"\\(.)", r"\1", _GROUP_NAME.sub("(", pattern) if getattr(entry, "indexed", False) else pattern)
    own = text_topics(words, getattr(entry, "note", ""))
    if "bias" in own and getattr(entry, "library", "") in MASK_AS_BIAS:
        own = tuple(dict.fromkeys(("mask", *own)))
    if getattr(entry, "indexed", False):
        return tuple(dict.fromkeys(own + tuple(linked))) or ("other",)
    return tuple(dict.fromkeys(linked)) or own or text_topics(entry.meaning, entry.fix) or ("other",)


def install_topics(finding: Mapping[str, Any]) -> tuple[str, ...]:
    kind = str(finding.get("kind") or "")
    return (INSTALL_TOPICS[kind],) if kind in INSTALL_TOPICS else ("install-missing",)

