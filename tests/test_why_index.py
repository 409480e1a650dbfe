"""The message index joins `why`: a library's own message, read from its source, is found, gives its facts, and
names its kind of problem and a fix even where no rule models it."""

from __future__ import annotations

import json

import pytest

from attndoctor.errors import RuleError
from attndoctor.why.index import LazyPattern, literal_of, load_index, to_entry
from attndoctor.why.reader import read_text
from attndoctor.why.topics import TOPICS, entry_topics, rule_topics, text_topics

RECORD = {
    "id": "flash-attn-0123456789ab", "library": "flash-attn", "kind": "error",
    "template": "FlashAttention only supports head dimension at most {max_hdim}, got {head_size}",
    "pattern": r"FlashAttention\ only\ supports\ head\ dimension\ at\ most\ (?P<max_hdim>\d+),\ got\ (?P<head_size>\d+)",
    "facts": {"head_size": "hdim", "max_hdim": "not_a_field"}, "condition": "head_size <= 256",
    "backend": ["flash-attn-2"],
    "sources": [{"repo": "Dao-AILab/flash-attention", "path": "csrc/flash_attn/flash_api.cpp", "ref": "v2.8.3",
                 "line": 1}],
    "releases": ["2.8.3"], "text": "TORCH_CHECK(head_size <= 256, ...)",
}


def write(tmp_path, *records):
    (tmp_path / "flash-attn.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    load_index.cache_clear()
    return str(tmp_path)


def test_literal_of_takes_the_longest_literal_part():
    assert literal_of(RECORD["template"]) == "FlashAttention only supports head dimension at most"
    assert literal_of("{a} {b}") == ""


def test_a_message_quoted_without_its_final_period_is_found(tmp_path):
    record = {**RECORD, "id": "vllm-0123456789ab", "library": "vllm", "facts": {},
              "template": "XFormers does not support attention logits soft capping.",
              "pattern": r"XFormers does not support attention logits soft capping\.?"}
    assert literal_of(record["template"]) == "XFormers does not support attention logits soft capping"
    reading = read_text("ValueError: XFormers does not support attention logits soft capping",
                        load_index(write(tmp_path, record)))
    assert [h.entry.id for h in reading.hits] == ["VLLM-0123456789AB"]


def test_an_index_message_is_found_and_gives_its_facts(tmp_path):
    entries = load_index(write(tmp_path, RECORD))
    assert len(entries) == 1 and entries[0].indexed and entries[0].id == "FLASH-ATTN-0123456789AB"
    assert entries[0].facts == {"head_size": "hdim"}  # a name that is no attndoctor field is not a fact
    reading = read_text("RuntimeError: FlashAttention only supports head dimension at most 256, got 320", entries)
    assert [h.entry.id for h in reading.hits] == ["FLASH-ATTN-0123456789AB"]
    assert reading.facts["hdim"].value == 320


def test_a_message_pasted_up_to_its_first_value_is_found_by_its_opening_words(tmp_path):
    record = {**RECORD, "id": "flashinfer-0123456789ab", "library": "flashinfer", "facts": {}, "backend": [],
              "template": "Buffer overflow when allocating memory for {name} with size {size} and alignment "
                          "{alignment}, but only {remaining_space} bytes available in AlignedAllocator.",
              "pattern": r"Buffer overflow when allocating memory for (?P<name>.*?) with size (?P<size>-?\d+) and "
                         r"alignment (?P<alignment>-?\d+), but only (?P<remaining_space>-?\d+) bytes available in "
                         r"AlignedAllocator\.?"}
    entries = load_index(write(tmp_path, record))
    reading = read_text("RuntimeError: Buffer overflow when allocating memory for batch_prefill_tmp_v", entries)
    assert [(h.entry.id, h.groups.get("name")) for h in reading.hits] == [
        ("FLASHINFER-0123456789AB", "batch_prefill_tmp_v")]
    assert not read_text("RuntimeError: Buffer overflow when allocating memory", entries).hits
    # a message whose opening says too little before its value has no such form
    assert to_entry(RECORD, "f.jsonl").pattern.opening is None


def test_a_generic_message_is_left_out_and_a_bad_line_names_its_file(tmp_path):
    generic = dict(RECORD, id="flash-attn-ffffffffffff", template="{x} failed", pattern=r"(?P<x>.*?)\ failed")
    assert to_entry(generic, "f.jsonl") is None
    (tmp_path / "x.jsonl").write_text("{not json\n", encoding="utf-8")
    load_index.cache_clear()
    with pytest.raises(RuleError, match="x.jsonl:1"):
        load_index(str(tmp_path))


def test_the_pattern_compiles_only_when_used():
    lazy = LazyPattern(r"a(?P<n>\d)")
    assert lazy._compiled is None
    assert [m.group("n") for m in lazy.finditer("a1 a2")] == ["1", "2"] and lazy._compiled is not None


def test_topics_come_from_what_a_rule_tests_and_what_a_message_says():
    from attndoctor.engine.rules import load_rulebase

    base = {r.id: r for r in load_rulebase().rules}
    assert rule_topics(base["FA2-ARCH-PRE-AMPERE"]) == ("gpu-arch",)
    assert "head-dim" in rule_topics(base["SDPA-FLASH-HEAD-DIM"])
    assert text_topics("out of resource: shared memory, Required: 139776") == ("shared-memory",)
    assert text_topics("undefined symbol: _ZN3c10") == ("install-abi",)
    assert "fp8" in text_topics("kv_cache_sf must be provided for NVFP4 KV cache.")
    assert "fp8" not in text_topics("the fp32 accumulator of an fp16 kernel")
    # xformers' per-operator reasons: a capability above the build's maximum is the build's, one below the minimum the GPU's
    too_new = text_topics("requires device with capability <= (9, 0) but your GPU has capability (12, 0) (too new)")
    assert {"gpu-arch", "install-arch"} <= set(too_new)
    too_old = text_topics("requires device with capability > (8, 0) but your GPU has capability (7, 5) (too old)")
    assert "gpu-arch" in too_old and "install-arch" not in too_old
    # xformers' and SDPA's "cu_seqlen" (one word, no s) is the packed-sequence offsets, as cu_seqlens_q is
    assert "varlen" in text_topics("cu_seqlen only supports batch_size=1")
    assert text_topics("xFormers wasn't build with CUDA support") == ("install-missing",)
    assert text_topics("operator wasn't built - see `python -m xformers.info`") == ("install-missing",)
    assert "install-arch" in text_topics("SM89 kernel is not available. Make sure you GPUs with compute capability 8.9.")
    assert "install-arch" not in text_topics("FlashAttention is not available on this device")
    # llama.cpp's ggml: the binary was built without this GPU's architecture
    assert "install-arch" in text_topics("CUDA kernel flash_attn_ext_f16 has no device code compatible with CUDA arch 750.")
    # "{class_name} does not support Flash Attention {flash_attn_version} yet"
    flash = next(e for e in load_index() if e.id == "TRANSFORMERS-0EF22806E9D8")
    assert "version-mismatch" not in entry_topics(flash, base)
    assert text_topics("failed to dispatch data type Float") == ("dtype",)
    assert "bias" in text_topics("Broadcasting the `attn_bias` tensor is not supported (shape: (16, 4096, 4096))")
    assert {"mask", "bias"} <= set(text_topics("Expected attn_bias.stride(1) == 0 to be true, but got false."))
    assert text_topics("assert self.tmem_total <= SM100_TMEM_CAPACITY_COLUMNS")[0] == "head-dim"
    assert text_topics("Invalid configuration : NUM_MMA_Q=1 NUM_MMA_D_QK=16 NUM_MMA_D_VO=16") == ("head-dim",)
    assert text_topics("Assertion failed: Size per head is not a multiple of X") == ("head-dim",)
    assert set(rule_topics(base["FA2-ARCH-PRE-AMPERE"])) <= set(TOPICS)


def test_why_names_an_index_message_as_the_cause_with_a_fix(cli, tmp_path, monkeypatch):
    monkeypatch.setattr("attndoctor.why.index.INDEX_DIR", tmp_path)
    write(tmp_path, RECORD)
    code, out, err = cli("why", "RuntimeError: FlashAttention only supports head dimension at most 256, got 320",
                         "--no-here", "--format", "json")
    load_index.cache_clear()
    doc = json.loads(out)
    assert code == 0, err
    assert doc["cause"]["id"] == "FLASH-ATTN-0123456789AB" and doc["verdict"] == "cause"
    assert doc["cause"]["backends"] == ["flash-attn-2"] and "head-dim" in doc["cause"]["topics"]
    assert doc["cause"]["fixes"] and doc["config"]["hdim"] == 320


def test_an_import_that_fails_on_a_compiled_extension_file_is_a_broken_build(cli):
    """transformers' "Failed to import {module} because of the following error ...: {e}"
    (huggingface/transformers src/transformers/utils/import_utils.py@v4.46.0 _LazyModule._get_module): where {e} names
    an extension's file under site-packages, the package is installed and its binary did not load; where it says
    "No module named", the package is missing."""
    broken = ("RuntimeError: Failed to import transformers.models.llama.modeling_llama because of the following error "
              "(look up to see its traceback): /opt/venv/lib/python3.11/site-packages/flash_attn_2_cuda.cpython-311-"
              "x86_64-linux-gnu.so: undefined symbol")
    assert text_topics(broken)[0] == "install-abi"
    cut = broken.split("flash_attn_2_cuda.")[0] + "flash_attn_2_cuda."  # a paste cut after the module's name
    assert text_topics(cut)[0] == "install-abi"
    missing = ("RuntimeError: Failed to import transformers.models.llama.modeling_llama because of the following error "
               "(look up to see its traceback): No module named 'flash_attn'")
    assert text_topics(missing)[0] == "install-missing"
    assert "install-abi" not in text_topics("ImportError: /opt/venv/lib/python3.11/site-packages/torch/nn/_C.py")
    doc = json.loads(cli("why", cut, "--no-here", "--format", "json")[1])  # the error's own words keep that path
    assert doc["cause"]["topics"][0] == "install-abi" and doc["cause"]["fixes"][0].startswith("reinstall flash-attn")


def test_a_model_class_named_for_causal_lm_is_no_mask():
    """transformers' messages print the model's class: "...ForCausalLM" is its task, not a causal mask."""
    assert "mask" not in text_topics("InternLM2ForCausalLM does not support Flash Attention 2.0 yet.")
    assert text_topics("is_causal=True needs a square mask") == ("mask",)


def test_a_models_architecture_is_no_gpu_architecture():
    """transformers' "The current architecture does not support Flash Attention 2.0 ... support for this
    architecture" is about the model; a GPU architecture still is one."""
    assert "gpu-arch" not in text_topics("The current architecture does not support Flash Attention 2.0. Please open "
                                         "an issue on GitHub to request support for this architecture: https://x")
    assert text_topics("sdpa fp8 forward operation is only supported on Blackwell architecture") == ("gpu-arch", "fp8")


def test_a_message_later_releases_no_longer_print_offers_the_upgrade_and_a_current_one_does_not(cli):
    """transformers printed the Gemma 3 eager advice up to 4.55.4; 4.57.6's modeling_gemma3.py no longer does."""
    gone = ("It is strongly recommended to train Gemma3 models with the `eager` attention implementation instead of "
            "`sdpa`. Use `eager` with `AutoModelForCausalLM.from_pretrained('<path-to-checkpoint>', "
            "attn_implementation='eager')`.")
    code, out, err = cli("why", gone, "--no-here", "--format", "json")
    doc = json.loads(out)
    assert code in (0, 1), err
    assert doc["cause"]["id"] == "TRANSFORMERS-B8610A7B7A9F"
    assert any(f.startswith("upgrade transformers to 4.57.6 or later") for f in doc["cause"]["fixes"])
    current = "ValueError: Encoder self-attention and encoder/decoder cross-attention are not implemented for " \
              "TritonAttentionImpl"
    doc = json.loads(cli("why", current, "--no-here", "--format", "json")[1])
    assert doc["cause"]["id"] == "VLLM-EB9DFFEEB8DB"
    assert not any("no longer prints" in f for f in doc["cause"]["fixes"])


def test_a_check_that_holds_only_below_a_cudnn_release_offers_that_release(cli):
    """cudnn-frontend's THD check fails on sm < 90 only while `get_backend_version() < 91801`
    (NVIDIA/cudnn-frontend include/cudnn_frontend/node/sdpa_support_surface.h@v1.20.0:347): cuDNN 9.18.1 lifts it. Where
    the cuDNN given is already past the bound, the message came from another cuDNN than the one given."""
    text = "cuDNN Error: THD (ragged offset) is only supported in Hopper and above : 80."
    doc = json.loads(cli("why", text, "--no-here", "--format", "json", "--gpu", "A100", "--cudnn", "9.10.2")[1])
    assert doc["config"]["layout"] == "thd"  # the message names the layout, so the rule behind it is in reach
    assert any(f.startswith("upgrade cuDNN to 9.18.1") or f.startswith("upgrade cudnn to 9.18.1")
               for f in doc["cause"]["fixes"])
    doc = json.loads(cli("why", text, "--no-here", "--format", "json", "--gpu", "A100", "--cudnn", "9.10.2",
                         "--layout", "bshd")[1])
    assert doc["cause"]["id"] == "CUDNN-FRONTEND-BB295E1883CF"
    assert doc["cause"]["fixes"][0].startswith("upgrade cuDNN to 9.18.1 or later")
    doc = json.loads(cli("why", text, "--no-here", "--format", "json", "--gpu", "A100", "--cudnn", "9.19.0")[1])
    assert not any(f.startswith("upgrade cuDNN") for f in doc["cause"]["fixes"])
    assert any("cuDNN the process loads" in f for f in doc["cause"]["fixes"])
    # a check that fails from a release on, or that an upgrade alone does not lift, offers none
    from attndoctor.why.fixes import cudnn_bound_fix

    assert cudnn_bound_fix("detail::get_backend_version() >= 90000 && (d_qk > 256)", None) == ()
    assert cudnn_bound_fix("(output_data_type == DataType_t::HALF) && (detail::get_backend_version() < 91300 || "
                           "prop_major < 10)", None) == ()
    assert cudnn_bound_fix("detail::get_backend_version() <= 90900 && d_qk > 128", "9.8.0")[0].startswith(
        "upgrade cuDNN past 9.9.0")
    assert cudnn_bound_fix("max_q <= 128 and cudnn_version < 92400", None)[0].startswith("upgrade cuDNN to 9.24.0")
    assert cudnn_bound_fix("is_bias && detail::get_backend_version() < 8906", None)[0].startswith(
        "upgrade cuDNN to 8.9.6")
    # the lower of the compiled and the loaded cuDNN (cudnn-frontend's stats_use_log2 check)
    assert cudnn_bound_fix("stats_use_log2 && std::min(detail::get_compiled_version(), detail::get_backend_version()) "
                           "< 92700", None)[0].startswith("upgrade cuDNN to 9.27.0")


def test_a_message_printed_word_for_word_beats_one_whose_placeholder_takes_those_words(cli):
    """PyTorch's memory-efficient kernel prints "(*bias): last dimension must be contiguous" word for word
    (CHECK_NOSPARSE_LASTCONTIGUOUS_CUDA in mem_eff_attention/gemm_kernel_utils.h); flash-attn 4's f"{name} must be
    contiguous" (flash_attn/cute/interface.py) matches the same line only by taking "(*bias): last dimension" as the
    name. The message whose own words cover the line is the likelier source; a line only the looser one reads keeps
    it."""
    doc = json.loads(cli("why", "RuntimeError: (*bias): last dimension must be contiguous", "--no-here", "--format",
                         "json")[1])
    assert doc["cause"]["id"] == "PYTORCH-25CFA74DD912"
    doc = json.loads(cli("why", "AssertionError: q must be contiguous", "--no-here", "--format", "json")[1])
    assert doc["cause"]["id"] == "FLASH-ATTN-4-7C97EB8A6362"


def test_the_memory_efficient_kernels_bias_is_sdpas_mask_and_a_contiguous_last_dimension_is_a_layout():
    """SDPA hands its attn_mask to the memory-efficient kernel as its bias (aten/src/ATen/native/transformers/
    attention.cpp@v2.6.0:744, `_scaled_dot_product_efficient_attention(query_, key, value, attn_mask, ...)`): a
    PyTorch message about `bias` is about the mask the program passed. "last dimension must be contiguous" is about
    the tensor's memory layout, not its head dim."""
    from attndoctor.engine.rules import load_rulebase

    base = {r.id: r for r in load_rulebase().rules}
    bias = next(e for e in load_index() if e.id == "PYTORCH-25CFA74DD912")
    topics = entry_topics(bias, base)
    assert topics[0] == "mask" and "layout" in topics and "head-dim" not in topics
    assert "head-dim" in text_topics("query: last dimension must be a multiple of 8")
    fp8 = next(e for e in load_index() if e.id == "CUDNN-FRONTEND-4586B20EF34E")  # cuDNN's bias is a bias of its own
    assert "mask" not in entry_topics(fp8, base) and "bias" in entry_topics(fp8, base)
