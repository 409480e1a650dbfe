"""The shipped message index loads, its patterns find the messages they stand for, and its ids are stable."""
import hashlib
import json
import re
import string
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent.parent / "attndoctor" / "data" / "messages"
LIBRARIES = {"pytorch", "inductor", "flash-attn", "flash-attn-3", "flash-attn-4", "transformer-engine",
             "cudnn-frontend", "transformers", "diffusers", "vllm", "sglang", "flashinfer", "xformers",
             "sageattention", "jax", "llamafactory", "megatron", "ms-swift", "unsloth", "axolotl", "tgi", "natten", "kernels", "triton",
             "llama-cpp", "cuda", "loader"}
FACTS = {"hdim", "hdim_v", "heads", "kv_heads", "batch", "seqlen_q", "seqlen_kv", "dtype", "sm", "gpu", "torch",
         "cuda", "cudnn", "flash_attn", "te", "window", "dropout", "softcap", "layout", "smem_required",
         "smem_limit"}
KINDS = {"error", "warning", "log", "assert"}
GROUP = re.compile(r"\(\?P<(\w+)>((?:\\.|[^()\\])*)\)")


def _load():
    entries = []
    for path in sorted(DATA.glob("*.jsonl")):
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                entries.append((path.stem, json.loads(line)))
    return entries


ENTRIES = _load()
COMPILED = {e["id"]: re.compile(e["pattern"]) for _, e in ENTRIES}


def _sample(sub: str) -> str:
    if sub.split("|")[0] == r"-?\d+":  # an integer, or a tuple of them
        return "128"
    if sub.startswith("<class "):  # what type(x) prints
        return "<class 'torch.Tensor'>"
    if sub.startswith("[") and "\\w" in sub:
        return "bf16"
    if sub not in (".*?", ".*"):
        # one of the texts a `cond ? "A" : "B"` placeholder can print
        return re.sub(r"\\(.)", r"\1", re.split(r"(?<!\\)\|", sub)[0])
    return "some value"


def _render(entry: dict) -> str:
    """The message as the library would print it, with a sample value for each placeholder."""
    subs = [m.group(2) for m in GROUP.finditer(entry["pattern"])]
    out = []
    i = 0
    for literal, field, _spec, _conv in string.Formatter().parse(entry["template"]):
        out.append(literal)
        if field is not None:
            out.append(_sample(subs[i]))
            i += 1
    return "".join(out)


def test_size_and_breadth():
    libraries = {lib for lib, _ in ENTRIES}
    assert len(ENTRIES) >= 1500
    assert len(libraries) >= 10
    assert libraries <= LIBRARIES
    # `why`'s start reads every message file (0.4 s at 7.9k messages, 6.5 MB; 0.74 s for the whole command at 9.8k,
    # 7.6 MB; 0.75 s at 10.5k, 8.2 MB, 62 MB resident; 0.89 s at 10.7k, 8.4 MB, 62 MB on a 2-core machine that gave
    # 0.91 s without llama.cpp's 76); INDEX.json, the list of what was read, is never loaded and only
    # adds to the installed size
    assert sum(p.stat().st_size for p in DATA.glob("*.jsonl")) < 8_450_000
    assert (DATA / "INDEX.json").stat().st_size < 600_000


def test_index_json_counts_match_files():
    index = json.loads((DATA / "INDEX.json").read_text(encoding="utf-8"))
    for lib in LIBRARIES:
        n = sum(1 for l, _ in ENTRIES if l == lib)
        assert index["libraries"].get(lib, {"count": 0})["count"] == n, lib
        if n:
            assert index["libraries"][lib]["read"], lib


def test_ids_unique_stable_and_sorted():
    seen = set()
    by_file: dict = {}
    for lib, e in ENTRIES:
        assert e["library"] == lib
        norm = re.sub(r"\s+", " ", e["template"]).strip()
        digest = hashlib.sha1((lib + "\n" + norm).encode("utf-8")).hexdigest()[:12]
        assert e["id"] == f"{lib}-{digest}"
        assert e["id"] not in seen
        seen.add(e["id"])
        by_file.setdefault(lib, []).append(e["id"])
    for ids in by_file.values():
        assert ids == sorted(ids)


def test_fields_sources_and_facts():
    for _, e in ENTRIES:
        assert e["kind"] in KINDS
        assert e["sources"] and 1 <= len(e["sources"]) <= 2
        for s in e["sources"]:
            assert s["repo"] and s["path"] and s["ref"], e["id"]
            assert isinstance(s["line"], int)
        assert e["releases"], e["id"]
        assert set(e["facts"].values()) <= FACTS, e["id"]
        assert isinstance(e["backend"], list)
        assert len(e["text"]) <= 300


def test_patterns_match_rendered_templates_and_name_the_facts():
    for _, e in ENTRIES:
        rx = COMPILED[e["id"]]
        assert set(e["facts"]) <= set(rx.groupindex), e["id"]
        fields = [f for _, f, _, _ in string.Formatter().parse(e["template"]) if f is not None]
        assert len(fields) == len(rx.groupindex), e["id"]
        m = rx.search(_render(e))
        assert m, (e["id"], e["template"], e["pattern"])


def test_patterns_match_the_literal_as_the_source_writes_it():
    checked = 0
    for _, e in ENTRIES:
        if COMPILED[e["id"]].groupindex:
            continue
        literal = e["template"].replace("{{", "{").replace("}}", "}")
        if literal in e["text"]:
            assert COMPILED[e["id"]].search(e["text"]), e["id"]
            checked += 1
    assert checked >= 500


@pytest.mark.parametrize("text,library,fact,value", [
    ("FlashAttention forward only supports head dimension at most 256", "flash-attn", None, None),
    # flash_attn/ops/triton/rotary.py@v2.7.4:177, the rotary kernel transformers' flash-attn path calls
    ("AssertionError: Input and cos/sin must have the same dtype, got torch.float32 and torch.bfloat16", "flash-attn",
     None, None),
    ("OutOfResources: out of resource: shared memory, Required: 232448, Hardware limit: 101376. "
     "Reducing block sizes or `num_stages` may help.", "triton", "smem_required", "232448"),
    ("libcudnn.so.9: cannot open shared object file: No such file or directory", "loader", None, None),
    # modelscope/ms-swift#5690, unslothai/unsloth#4983, axolotl-ai-cloud/axolotl#1527,
    # NVIDIA-NeMo/Megatron-Bridge#5895 (each as the thread quotes it)
    ('ValueError: The "packing" feature requires a flash attention implementation. Please use one of: "flash_attn", '
     '"flash_attention_2", "flash_attention_3".', "ms-swift", None, None),
    ("Unsloth: Your Flash Attention 2 installation seems to be broken. Using Xformers instead. No performance changes "
     "will be seen.", "unsloth", None, None),
    ("[2024-04-17 00:08:54,225] [INFO] [axolotl.load_model:354] [PID:808742] [RANK:2] patching with flash attention "
     "for sample packing", "axolotl", None, None),
    ("AssertionError: Context parallelism is only supported by TEDotProductAttention! when instantiating "
     "Gemma4DenseSelfAttention", "megatron", None, None),
    ("AssertionError: Transformer-Engine v1.11.0+fc03478 must be >= 1.12.0 to supporthierarchical cp commucation.",
     "megatron", "te", "1.11.0+fc03478"),
    ("RuntimeError: Unsupported head_dim: 80", "flashinfer", "hdim", "80"),
    # flashinfer-ai/flashinfer include/flashinfer/allocator.h (flashinfer-python 0.3.1 sdist, 0.7.2.post1 wheel) and
    # triton/runtime/autotuner.py (triton 2.1.0 wheel), each printed with sample values
    ("RuntimeError: Error in function 'aligned_alloc' at include/flashinfer/allocator.h:49: Buffer overflow when "
     "allocating memory for batch_prefill_tmp_v with size 268435456 and alignment 16, but only 134217728 bytes "
     "available in AlignedAllocator. Increase the workspace buffer size.", "flashinfer", None, None),
    ("triton.runtime.autotuner.OutOfResources: out of resource: shared memory, Required: 108672, Hardware limit: "
     "101376. Reducing block sizes or `num_stages` may help.", "triton", "smem_limit", "101376"),
    # huggingface/text-generation-inference server/text_generation_server/models/__init__.py@v1.0.3,
    # thu-ml/SageAttention sageattention/core.py (sageattention 1.0.6 wheel)
    ("WARN text_generation_launcher: Unable to use Flash Attention V2: Flash Attention V2 is not installed.", "tgi",
     None, None),
    ('assert headdim in [64, 96, 128], "headdim should be in [64, 96, 128]."', "sageattention", None, None),
    ("RuntimeError: Expect (32 <= headDim <= 2048) && (numTokensPerPage <= 128), got headDimPerCtaV=%d, "
     "headDimQk=%d, headDimV=%d, numTokensPerPage=%d256256256544", "flashinfer", None, None),
    # facebookresearch/xformers xformers/csrc/attention/cuda/fmha/small_k.cu@v0.0.23:748 (a check without a message)
    ("RuntimeError: Expected attn_bias.stride(1) == 0 to be true, but got false.", "xformers", None, None),
    ("ERROR 04-24 11:52:08 [fa_utils.py:42] Cannot use FA version 2 is not supported due to FA2 is only supported "
     "on devices with compute capability >= 8", "vllm", None, None),
    # huggingface/kernels kernels/variants.py (kernels 0.15.2 and 0.17.2 wheels): the reason a hub kernel's build variant
    # is refused, printed one per variant under "Cannot find a build variant for this system"
    ("torch211-cxx11-cu128-x86_64-linux: Torch version (2.11) does not match environment Torch version (2.12)",
     "kernels", "torch", "2.12"),
    # SHI-Labs/NATTEN csrc/src/hopper_fna_forward.cu@v0.21.6 and csrc/include/natten/helpers.h's CHECK_CONTIGUOUS
    # (its argument's text is the tensor's name), as the extension raises them
    ("RuntimeError: Hopper FNA only supports head dims 32, 64, 128, and 256 for now.", "natten", None, None),
    ("RuntimeError: grad_value must be contiguous", "natten", None, None),
    # llama.cpp's context as Ollama logs it (src/llama-context.cpp, llama-cpp-python 0.2.79-0.3.36 sdists) and its CUDA
    # flash attention's assert as ggml_abort prints it (ggml-cuda/fattn.cu, 0.3.16-0.3.36)
    ("Mar 24 21:17:29 jarvis ollama[2742822]: llama_init_from_model: V cache quantization requires flash_attn",
     "llama-cpp", None, None),
    ("/src/llama.cpp/ggml/src/ggml-cuda/fattn.cu:359: GGML_ASSERT(V->ne[0] == 512) failed", "llama-cpp", None, None),
    # the same library before ggml_abort (llama-cpp-python 0.2.79's llama.cpp: ggml.h printed "GGML_ASSERT: %s:%d: %s")
    ("GGML_ASSERT: /tmp/llama.cpp/ggml-cuda/fattn-common.cuh:639: !mask || mask->type == GGML_TYPE_F16", "llama-cpp",
     None, None),
    # jax-ml/jax jax/_src/cudnn/fused_attention_stablehlo.py (jax 0.6.2 and 0.5.3 wheels)
    ("NotImplementedError: Packed layout requires cudnn version >= 9.6 and at least hopper arch.", "jax", None, None),
    ("ValueError: The head dim must be <= 128 and a multiple of 8, but got 80.", "jax", None, None),
])
def test_known_messages_are_found(text, library, fact, value):
    hits = [e for lib, e in ENTRIES if lib == library and COMPILED[e["id"]].search(text)]
    assert hits, text
    if fact:
        found = {COMPILED[e["id"]].search(text).group(g) for e in hits for g, f in e["facts"].items() if f == fact}
        assert value in found


def test_a_bare_assert_in_a_traceback_names_its_library():
    """flash-attn 4's TMEM budget check has no message: the traceback's source line is what users paste."""
    text = ('  File "/venv/lib/python3.12/site-packages/flash_attn/cute/flash_bwd_sm100.py", line 171, in __init__\n'
            "    assert self.tmem_total <= self.tmem_alloc_cols\nAssertionError")
    hits = [e for lib, e in ENTRIES if COMPILED[e["id"]].search(text)]
    assert [(e["library"], e["kind"], e["condition"]) for e in hits] == [
        ("flash-attn-4", "assert", "self.tmem_total <= self.tmem_alloc_cols")]
def test_the_triton_shared_memory_message_covers_the_releases_torch_2_1_to_2_4_bundle():
    text = "out of resource: shared memory, Required: 163842, Hardware limit: 101376. Reducing block sizes or " \
           "`num_stages` may help."
    hits = [e for lib, e in ENTRIES if lib == "triton" and COMPILED[e["id"]].search(text)]
    assert hits and {"2.1.0", "2.2.0", "2.3.1", "3.0.0", "3.6.0"} <= set(hits[0]["releases"])
