"""The message index generator (tools/messages) writes patterns that find messages as people paste them."""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.messages.compiled import variants  # noqa: E402
from tools.messages.extract_cpp import extract  # noqa: E402
from tools.messages.model import LIT, PH, pattern_of, template_of  # noqa: E402
from tools.messages import extract_py  # noqa: E402


def test_quotes_around_a_placeholder_are_optional():
    pattern, _ = pattern_of([(LIT, "Sliding Window Attention is enabled but not implemented for `"),
                             ("ph", "attn_implementation", ""), (LIT, "`; unexpected results may be encountered.")])
    for text in ("Sliding Window Attention is enabled but not implemented for `sdpa`; unexpected results may be "
                 "encountered.", "Sliding Window Attention is enabled but not implemented for sdpa; unexpected results "
                 "may be encountered"):
        match = re.search(pattern, text)
        assert match and match.group("attn_implementation") == "sdpa"


def test_a_dtype_printed_by_msvc_is_read_without_its_struct_word():
    pattern, _ = pattern_of([(LIT, "Expected query, key, and value to have the same dtype, but got query.dtype: "),
                             ("ph", "query_dtype", ""), (LIT, " key.dtype: "), ("ph", "key_dtype", ""),
                             (LIT, " instead.")])
    match = re.search(pattern, "Expected query, key, and value to have the same dtype, but got query.dtype: struct "
                               "c10::Half key.dtype: float instead.")
    assert match and match.group("query_dtype") == "c10::Half" and match.group("key_dtype") == "float"


def test_a_message_a_module_chooses_under_its_branches_is_read_in_each_wording():
    """TGI 0.9 sets FLASH_ATT_ERROR_MESSAGE again where the GPU or CUDA is missing, and formats whichever was set."""
    from tools.messages import extract_py
    source = ('MSG = "{} requires CUDA and Flash Attention kernels to be installed."\n'
              "try:\n"
              "    if not supported:\n"
              '        MSG = "{} requires a CUDA device with capability 7.5, > 8.0 or 9.0."\n'
              "        raise ImportError('no')\n"
              "except ImportError:\n"
              "    pass\n"
              "def get_model(sharded):\n"
              "    if sharded:\n"
              '        raise NotImplementedError(MSG.format("Sharded Llama"))\n')
    raws, _ = extract_py.extract(source)
    found = {template_of(r.parts): r.condition for r in raws if r.kind == "error"}
    assert found.get("{sharded_llama} requires a CUDA device with capability 7.5, > 8.0 or 9.0.") == "not supported"


def test_bare_prints_are_read_only_where_a_source_asks():
    from tools.messages import extract_py
    source = ("def check():\n"
              "    if not ok:\n"
              "        print(\"Unsloth: Your Flash Attention 2 installation seems to be broken?\", err)\n")
    assert extract_py.extract(source)[0] == []
    raws, _ = extract_py.extract(source, prints=True)
    assert len(raws) == 1 and raws[0].kind == "log"
    pattern, _ = pattern_of(raws[0].parts)
    assert re.search(pattern, "Unsloth: Your Flash Attention 2 installation seems to be broken? No module named x")


def test_a_training_frameworks_words_name_the_backend_and_a_status_field_names_none():
    from tools.messages.sources import backends_for
    assert backends_for("unsloth", "unsloth/models/_utils.py",
                        "Unsloth: Your Flash Attention 2 installation seems to be broken.") == ["flash-attn-2"]
    assert backends_for("unsloth", "unsloth/models/llama.py",
                        "Bfloat16 = {supports_bfloat16}. FA [Xformers = {xformers_version}. FA2 = {has_fa}]") == []
    assert backends_for("megatron", "megatron/core/transformer/transformer_config.py",
                        "Batch invariant mode only supports FlashAttention (--attention-backend flash)") == ["te-flash"]
    assert backends_for("megatron", "megatron/core/transformer/attention.py",
                        "flash_attention_version=3 requested but FlashAttention-3 is not installed") == ["flash-attn-3"]
    assert backends_for("axolotl", "src/axolotl/utils/schemas/config.py",
                        "attn_implementation=fp8 requires compute capability sm_90 or higher (Hopper+).") == []
    assert backends_for("ms-swift", "swift/megatron/arguments/megatron_args.py",
                        "Forcing Flash Attention v{fa_version} as the attention backend.") == []
    assert set(backends_for("axolotl", "src/axolotl/utils/schemas/validation.py",
                            "context_parallel_size > 1 requires flash attention (attn_implementation: "
                            "flash_attention_2 or flash_attention_3).")) == {"flash-attn-2", "flash-attn-3"}


def test_a_serving_engines_backend_file_names_the_backend_its_words_do_not():
    from tools.messages.sources import backends_for
    sdpa = ["sdpa-flash", "sdpa-efficient", "sdpa-cudnn", "sdpa-math"]
    assert backends_for("vllm", "vllm/attention/backends/flash_attn.py",
                        "Sliding window is not supported in this version.") == ["flash-attn-2", "flash-attn-3"]
    assert backends_for("vllm", "vllm/v1/attention/backends/flash_attn.py",
                        "FlashAttention does not support encoder attention.") == ["flash-attn-2", "flash-attn-3"]
    assert backends_for("vllm", "vllm/attention/backends/torch_sdpa.py", "Sliding window is not supported.") == sdpa
    assert backends_for("vllm", "vllm/attention/selector.py",
                        "Torch SDPA backend is only used for the CPU device.") == sdpa
    assert backends_for("sglang", "sglang/srt/layers/attention/flashattention_backend.py",
                        "Sliding window is not supported.") == ["flash-attn-3"]
    assert backends_for("sglang", "sglang/srt/layers/attention/torch_flex_backend.py", "x") == ["flex-attention"]
    assert backends_for("vllm", "vllm/attention/backends/xformers.py",
                        "XFormers does not support attention logits soft capping.") == []


def test_sdpas_shared_checks_name_the_backends_that_run_them_and_a_kernels_own_stays_its():
    from tools.messages.sources import backends_for
    shared = "aten/src/ATen/native/transformers/sdp_utils_cpp.h"
    assert backends_for("pytorch", "aten/src/ATen/native/transformers/attention.cpp",
                        "Expected query, key, and value to have the same dtype, but got query.dtype: {} key.dtype: {} "
                        "and value.dtype: {} instead.", ["validate_sdpa_input"]) == ["sdpa-flash", "sdpa-efficient",
                                                                                     "sdpa-cudnn", "sdpa-math"]
    assert backends_for("pytorch", shared, "All fused kernels requires query, key and value to be 4 dimensional, but got "
                        "Query dim: {}", ["check_tensor_shapes"]) == ["sdpa-flash", "sdpa-efficient", "sdpa-cudnn"]
    assert backends_for("pytorch", shared, "Flash attention requires q,k,v to have the same last dimension") == \
        ["sdpa-flash"]
    assert backends_for("pytorch", "torch/nn/functional.py", "key_padding_mask must be a bool tensor") == []
    assert backends_for("pytorch", "aten/src/ATen/native/transformers/cuda/attention.cu",
                        "cutlassF: no kernel found to launch!", ["_efficient_attention_forward"]) == ["sdpa-efficient"]


def test_a_size_placeholder_takes_a_number_or_a_tuple():
    """torch/nn/functional.py prints `correct_2d_size`, a tuple, where other messages print an integer size."""
    pattern, _ = pattern_of([(LIT, "The shape of the 2D attn_mask is "), (PH, "attn_mask_shape", ""),
                             (LIT, ", but should be "), (PH, "correct_2d_size", ""), (LIT, ".")])
    found = re.search(pattern, "RuntimeError: The shape of the 2D attn_mask is torch.Size([77, 77]), but should be (4, 4)")
    assert found and found.group("correct_2d_size") == "(4, 4)"
    pattern, _ = pattern_of([(LIT, "head_size should be a multiple of 8, got "), (PH, "head_size", ""), (LIT, ".")])
    assert re.search(pattern, "head_size should be a multiple of 8, got 72.").group("head_size") == "72"
    assert not re.search(pattern, "head_size should be a multiple of 8, got many.")
    # a tensor's .size() prints torch.Size([...]) (transformers' "Attention mask should be of size {}, but is {}")
    pattern, _ = pattern_of([(LIT, "Attention mask should be of size "), (PH, "bsz_1_tgt_len_src_len", ""),
                             (LIT, ", but is "), (PH, "causal_attention_mask_size", "")])
    found = re.search(pattern, "ValueError: Attention mask should be of size (1, 1, 30, 30), but is torch.Size([1, 30, 30])")
    assert found and found.group("causal_attention_mask_size") == "torch.Size([1, 30, 30])"


def test_a_types_placeholder_takes_the_types_repr_whatever_its_name_holds():
    """xformers/ops/fmha/common.py prints `type(d.attn_bias)` (named type_d_attn_bias, whose `_d_` is no head dim)."""
    pattern, _ = pattern_of([(LIT, "attn_bias type is "), (PH, "type_d_attn_bias", "")])
    found = re.search(pattern, "`flshattF` is not supported because: attn_bias type is <class 'torch.Tensor'>")
    assert found and found.group("type_d_attn_bias") == "<class 'torch.Tensor'>"
    assert re.search(pattern, "attn_bias type is <class 'xformers.ops.fmha.attn_bias.BlockDiagonalMask'>")


def test_a_module_constant_formatted_into_a_raise_is_its_message():
    """torch/utils/cpp_extension.py raises RuntimeError(CUDA_MISMATCH_MESSAGE.format(...)) with a module constant."""
    from tools.messages import extract_py
    source = ('''CUDA_MISMATCH_MESSAGE = """
The detected CUDA version ({0}) mismatches the version that was used to compile
PyTorch ({1}). Please make sure to use the same CUDA versions.
"""


def _check_cuda_version(compiler_name, compiler_version):
    if cuda_ver != torch_cuda_version:
        raise RuntimeError(CUDA_MISMATCH_MESSAGE.format(cuda_str_version, torch.version.cuda))
''')
    raws, _ = extract_py.extract(source)
    assert len(raws) == 1
    pattern, _ = pattern_of(raws[0].parts)
    assert re.search(pattern, "RuntimeError: The detected CUDA version (12.1) mismatches the version that was used to "
                              "compile PyTorch (11.8). Please make sure to use the same CUDA versions.")


def test_a_message_written_over_lines_is_found_as_a_terminal_shows_it_or_joined():
    """A triple-quoted message starts with a newline and breaks its sentence over lines; a paste keeps the breaks or
    joins them, and why joins wrapped lines with one space."""
    pattern, _ = pattern_of([(LIT, "\nThe detected CUDA version ("), (PH, "cuda_str_version", ""),
                             (LIT, ") mismatches the version that was used to compile\nPyTorch ("),
                             (PH, "torch_version_cuda", ""), (LIT, "). Please make sure to use the same CUDA versions.\n")])
    joined = ("The detected CUDA version (12.1) mismatches the version that was used to compile PyTorch (11.8). Please "
              "make sure to use the same CUDA versions.")
    assert re.search(pattern, "RuntimeError: " + joined)
    assert not re.search(pattern, "RuntimeError: The detected CUDA version (12.1) is fine")


def test_a_value_said_to_be_unsupported_is_too_generic_a_message():
    """vllm/model_executor/models/llama.py@wheel:vllm-0.6.6:179 raises f"{type(interleaved_sliding_window)} is not
    supported.": its words fit any error that says something is not supported."""
    from tools.messages.model import skip_reason
    for words in (" is not supported.", " are not supported", " is not implemented"):
        assert skip_reason([(PH, "type_interleaved_sliding_window", ""), (LIT, words)]) == "generic text", words
    assert skip_reason([(PH, "x", ""), (LIT, " is not supported for sliding window attention.")]) is None
    # megatron/legacy/model/transformer.py@core_v0.15.0 raises "This is no longer supported." for a retired option
    for words in ("This is no longer supported.", "It is not yet supported", "this is currently not implemented"):
        assert skip_reason([(LIT, words)]) == "generic text", words


def test_pythons_own_wording_raised_by_a_library_is_no_message_of_it():
    """cudnn/_pygraph.py raises AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")."""
    from tools.messages.model import skip_reason
    assert skip_reason([(PH, "type_self_name", ""), (LIT, " object has no attribute "), (PH, "name", "")]) == \
        "Python's or PyTorch's own wording"
    # cudnn/api_base.py raises PyTorch's `view` error word for word: any reshape of the wrong size prints it
    assert skip_reason([(LIT, "shape '"), (PH, "new_shape", ""), (LIT, "' is invalid for input of size "),
                        (PH, "old_numel", "")]) == "Python's or PyTorch's own wording"
    assert skip_reason([(LIT, "'SDPA' object has no attribute 'sdpa_backend' before cudnn 9"), (PH, "x", "")]) is None


def test_megatron_core_tags_are_versions():
    from tools.messages.build import tag_version
    assert tag_version("core_v0.13.0") == "0.13.0"
def _read_cpp(source: str) -> dict:
    from tools.messages import extract_cpp
    raws, _ = extract_cpp.extract(source)
    return {template_of(r.parts): r for r in raws}


def test_a_named_stream_is_the_message_of_the_check_that_prints_it():
    found = _read_cpp("""
      default: {                                         \\
        std::ostringstream err_msg;                      \\
        err_msg << "Unsupported head_dim: " << head_dim; \\
        FLASHINFER_ERROR(err_msg.str());                 \\
      }""")
    assert list(found) == ["Unsupported head_dim: {head_dim}"]


def test_a_message_streamed_after_a_tvm_check_is_read_with_its_condition():
    found = _read_cpp("""
      TVM_FFI_ICHECK(status == cudaSuccess)
          << "BatchPrefillWithRaggedKVCache failed with error " << cudaGetErrorString(status);
      TVM_FFI_ICHECK_EQ(lse.size(0), q.size(0));
      TVM_FFI_ICHECK_EQ(k_head_dim, nope_dim + rope_dim) << "k head_dim must equal nope_dim + rope_dim";""")
    assert set(found) == {"BatchPrefillWithRaggedKVCache failed with error {cudageterrorstring_status}",
                          "k head_dim must equal nope_dim + rope_dim"}
    assert found["k head_dim must equal nope_dim + rope_dim"].condition == "k_head_dim == nope_dim + rope_dim"


def test_ggml_asserts_print_their_condition_and_llama_logs_their_function():
    """ggml.h: GGML_ASSERT(x) aborts with "GGML_ASSERT(" #x ") failed"; llama.cpp logs open with __func__."""
    found = _read_cpp("""
      GGML_ASSERT(V->ne[0] == 512);
      GGML_ABORT("flash-attn tile (320/256): expected GQA ratio multiple of 32");
      if (params.flash_attn && model->arch == LLM_ARCH_GROK) {
          LLAMA_LOG_WARN("%s: flash_attn is not compatible with Grok - forcing off\\n", __func__);
      }""")
    assert set(found) == {"GGML_ASSERT(V->ne[0] == 512) failed",
                          "flash-attn tile (320/256): expected GQA ratio multiple of 32",
                          "{func}: flash_attn is not compatible with Grok - forcing off\n"}
    assert found["GGML_ASSERT(V->ne[0] == 512) failed"].condition == "V->ne[0] == 512"
    assert found["{func}: flash_attn is not compatible with Grok - forcing off\n"].kind == "warning"


def test_an_assert_macro_that_prints_file_line_and_condition_is_read_in_its_releases_wording():
    """ggml.h before ggml_abort (llama-cpp-python 0.2.79's llama.cpp): GGML_ASSERT printed "GGML_ASSERT: %s:%d: %s"."""
    from tools.messages import extract_cpp

    header = ('#define GGML_ASSERT(x) \\\n    do { \\\n        if (!(x)) { \\\n            fflush(stdout); \\\n'
              '            fprintf(stderr, "GGML_ASSERT: %s:%d: %s\\n", __FILE__, __LINE__, #x); \\\n'
              '            abort(); \\\n        } \\\n    } while (0)\n')
    asserts = extract_cpp.printed_asserts(header)
    assert asserts == {"GGML_ASSERT": "GGML_ASSERT: "}
    raws, _ = extract_cpp.extract("void f() {\n    GGML_ASSERT(V->ne[0] == 512);\n}\n", asserts=asserts)
    (raw,) = raws
    pattern, _ = pattern_of(raw.parts)
    assert raw.condition == "V->ne[0] == 512"
    assert re.search(pattern, "GGML_ASSERT: /llama.cpp/ggml-cuda/fattn.cu:359: V->ne[0] == 512")
    raws, _ = extract_cpp.extract("void f() {\n    GGML_ASSERT(V->ne[0] == 512);\n}\n")
    assert template_of(raws[0].parts) == "GGML_ASSERT(V->ne[0] == 512) failed"


def test_a_printf_string_takes_any_text_whatever_its_name_says():
    """llama.cpp's fattn.cu: `%s` of ggml_type_name(K->type) prints "q8_0", not a number its name (`_k_`) suggests."""
    found = _read_cpp("""
      GGML_LOG_WARN("%s: no FlashAttention vector kernel compiled for K/V types %s-%s, converting K and V to f16\\n",
                    __func__, ggml_type_name(K->type), ggml_type_name(V->type));""")
    (raw,) = found.values()
    pattern, _ = pattern_of(raw.parts)
    assert re.search(pattern, "ggml_cuda_flash_attn_ext: no FlashAttention vector kernel compiled for K/V types "
                              "q8_0-q4_0, converting K and V to f16")


def test_flashinfer_checks_space_their_arguments_and_c10_str_does_not_format():
    found = _read_cpp("""
      FLASHINFER_CHECK(rows <= cap, "batch_prefill partial outputs need", rows, "rows");
      TORCH_CHECK(ok, "Expect (32 <= headDim <= 2048), got headDimQk=%d", headDimQk);
      TLLM_CHECK_WITH_INFO(ok, "Expect a positive count, got count=%d here", count);""")
    assert set(found) == {"batch_prefill partial outputs need {rows} rows",
                          "Expect (32 <= headDim <= 2048), got headDimQk=%d{headdimqk}",
                          "Expect a positive count, got count={count} here"}


def test_an_assert_whose_message_is_an_exception_reads_the_exceptions_text():
    from tools.messages import extract_py
    source = ("def pick(backend):\n"
              "    assert is_cpu(), RuntimeError(\n"
              "        \"Torch SDPA backend is only used for the CPU device.\")\n")
    raws, _ = extract_py.extract(source)
    assert [r.kind for r in raws] == ["assert"]
    pattern, _ = pattern_of(raws[0].parts)
    assert re.search(pattern, "AssertionError: Torch SDPA backend is only used for the CPU device.")


def test_an_assert_without_a_message_is_read_as_its_own_line_unless_it_checks_wiring():
    from tools.messages import extract_py
    source = ("def plan(self, head_dim):\n"
              "    assert self.tmem_total <= self.tmem_alloc_cols\n"
              "    assert head_dim\n"
              "    assert self.scheduler is not None and isinstance(self.tile, Tile)\n"
              "    assert (head_dim % 8 == 0 and\n"
              "            head_dim <= 256)\n")
    raws, _ = extract_py.extract(source)
    assert [(r.kind, r.parts, r.condition) for r in raws] == [
        ("assert", [(LIT, "assert self.tmem_total <= self.tmem_alloc_cols")], "self.tmem_total <= self.tmem_alloc_cols")]
    traceback = ('  File "/venv/lib/python3.12/site-packages/flash_attn/cute/flash_bwd_sm100.py", line 171, in __init__\n'
                 "    assert self.tmem_total <= self.tmem_alloc_cols\nAssertionError\n")
    assert re.search(pattern_of(raws[0].parts)[0], traceback)


def test_an_exception_message_extended_by_plus_equals_and_passed_to_super_is_read():
    from tools.messages import extract_py
    # triton/runtime/errors.py as the triton 2.2.0 and 2.3.1 wheels ship it
    source = ('class OutOfResources(Exception):\n'
              '    def __init__(self, required, limit, name):\n'
              '        self.message = f"out of resource: {name}, " f"Required: {required}, " '
              'f"Hardware limit: {limit}"\n'
              '        self.message += ". Reducing block sizes or `num_stages` may help."\n'
              '        self.required = required\n'
              '        super().__init__(self.message)\n')
    raws, _ = extract_py.extract(source)
    assert [template_of(r.parts) for r in raws] == [
        "out of resource: {name}, Required: {required}, Hardware limit: {limit}. Reducing block sizes or "
        "`num_stages` may help."]
    pattern, facts = pattern_of(raws[0].parts)
    assert facts == {"required": "smem_required", "limit": "smem_limit"}


def test_a_message_extended_under_a_branch_is_read_as_its_opening_and_an_open_tail():
    """transformers' modeling_utils.py builds 'Specified `attn_implementation=...` is not supported. The only possible
    arguments are ...' by adding the implementations the model class has, each under its own `if`."""
    from tools.messages import extract_py
    branch = ('def check(mask):\n'
              '    msg = "Memory efficient kernel not used because"\n'
              '    if mask:\n'
              '        msg += " of the attention mask"\n'
              '    raise RuntimeError(msg + ".")\n')
    raws, skipped = extract_py.extract(branch)
    assert [template_of(r.parts) for r in raws] == ["Memory efficient kernel not used because{msg_rest}."]
    pattern, _ = pattern_of(raws[0].parts)
    assert re.search(pattern, "RuntimeError: Memory efficient kernel not used because of the attention mask.")
    twice = ('def check(mask):\n'
             '    msg = "a"\n'
             '    msg = "Memory efficient kernel not used because"\n'
             '    if mask:\n'
             '        msg += " of the attention mask"\n'
             '    raise RuntimeError(msg)\n')
    assert extract_py.extract(twice)[0] == []


def test_a_plain_class_init_is_not_read_as_a_message():
    from tools.messages import extract_py
    plain = ('class Logger(Base):\n'
             '    def __init__(self):\n'
             '        super().__init__("flashinfer jit logger for attention kernels")\n')
    assert extract_py.extract(plain)[0] == []


def test_flashinfer_allocator_overflow_is_one_template():
    found = _read_cpp("""
      std::ostringstream oss;
      oss << "Buffer overflow when allocating memory for " << name << " with size " << size
          << " and alignment " << alignment << ", but only " << remaining_space
          << " bytes available in AlignedAllocator. Increase the workspace buffer size.";
      FLASHINFER_ERROR(oss.str());""")
    assert list(found) == ["Buffer overflow when allocating memory for {name} with size {size} and alignment "
                           "{alignment}, but only {remaining_space} bytes available in AlignedAllocator. Increase the "
                           "workspace buffer size."]


def _release(tmp_path, version, strings):
    import gzip

    (tmp_path / "strings").mkdir(exist_ok=True)
    with gzip.open(tmp_path / "strings" / f"torch-{version}.txt.gz", "wt", encoding="ascii") as fh:
        fh.write("".join(s + "\n" for s in strings))


def _entry(*parts):
    return {"kind": "error", "condition": "c", "backend": ["sdpa-flash"]}, list(parts)


def test_a_release_that_words_a_check_otherwise_gives_its_own_message(tmp_path):
    arch = _entry((LIT, "Flash attention only supports gpu architectures in the range [sm80, sm90]. Attempting to "
                        "run on a sm "), (PH, "major", ""), (LIT, "."), (PH, "minor", ""), (LIT, " gpu."))
    mask = _entry((LIT, "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                        "attn_mask.dtype: "), (PH, "mask_dtype", ""), (LIT, " and  query.dtype: "),
                  (PH, "query_dtype", ""), (LIT, " instead."))
    _release(tmp_path, "2.1.2", [
        "Flash attention only supports gpu architectures in the range [sm75, sm90]. Attempting to run on a sm ",
        "Expected attn_mask dtype to be bool or to match query dtype, but got attn_mask.dtype: ",
        " and  query.dtype: "])
    got = {id(item): parts for item, version, ref, parts in variants([arch, mask], str(tmp_path))}
    assert got[id(arch)][0] == (LIT, "Flash attention only supports gpu architectures in the range [sm75, sm90]. "
                                     "Attempting to run on a sm ")
    assert got[id(arch)][1:] == arch[1][1:]  # the short literals (" gpu.") are not looked for
    pattern, _ = pattern_of(got[id(mask)])
    assert re.search(pattern, "Expected attn_mask dtype to be bool or to match query dtype, but got attn_mask.dtype: "
                              "float and  query.dtype: c10::BFloat16 instead.")


def test_a_look_alike_or_a_split_literal_is_not_taken_for_a_rewording(tmp_path):
    batch = _entry((LIT, "batch size must be positive"))
    warn = _entry((LIT, "Flash Attention defaults to a non-deterministic algorithm. To explicitly enable determinism "
                        "call torch.use_deterministic_algorithms(True, warn_only=False)."))
    seqused = _entry((LIT, "seqused_k must be contiguous and on the same device"))
    _release(tmp_path, "2.3.1", ["Blocksize must be positive", "saved_v must be contiguous and on the same device",
                                 "To explicitly enable determinism call torch.use_deterministic_algorithms(True, "
                                 "warn_only=False).", "Flash Attention defaults to a non-deterministic algorithm. "])
    got = [(item is warn, parts) for item, _, _, parts in variants([batch, warn, seqused], str(tmp_path))]
    # the release printed the warning's two sentences as two literals: its shorter form is the message's start
    assert got == [(True, [(LIT, "Flash Attention defaults to a non-deterministic algorithm. ")])]


def test_a_message_whose_literals_a_release_holds_is_emitted_by_that_release(tmp_path):
    same = _entry((LIT, "Flash attention requires q,k,v to have the same last dimension. Got Query.size(-1): "),
                  (PH, "q", "d"))
    _release(tmp_path, "2.7.1", ["Flash attention requires q,k,v to have the same last dimension. Got Query.size(-1): "])
    assert [(v, parts) for _, v, _, parts in variants([same], str(tmp_path))] == [("2.7.1", None)]


FLASHINFER_CHECKS = """
void BatchDecode(torch::Tensor paged_kv_indptr, int64_t batch_size, torch::Tensor q) {
  CHECK_DIM(3, q);  // (batch_size, num_heads, head_dim)
  CHECK_GE(paged_kv_indptr.size(0),  batch_size + 1);
}
"""


def test_flashinfer_s_argument_text_checks_print_their_arguments():
    raws, _ = extract(FLASHINFER_CHECKS, stringizing=True)
    found = {pattern_of(r.parts)[0]: r.condition for r in raws}
    assert len(found) == 2
    ge = next(p for p in found if p.startswith("CHECK_GE"))
    match = re.search(ge, "RuntimeError: CHECK_GE(paged_kv_indptr.size(0), batch_size + 1) failed. 5 vs 9")
    assert match and found[ge] == "paged_kv_indptr.size(0) >= batch_size + 1"
    assert any(re.search(p, "q must be a 3D tensor") for p in found)
    assert extract(FLASHINFER_CHECKS) == ([], {})  # another code base's CHECK_EQ is not FlashInfer's


MEM_EFF_MACRO = """
#define CHECK_NOSPARSE_LASTCONTIGUOUS_CUDA(TENSOR)                        \\
  TORCH_CHECK(TENSOR.is_cuda(), #TENSOR " must be a CUDA tensor");     \\
  TORCH_CHECK(                                                         \\
      TENSOR.stride(-1) == 1, #TENSOR ": last dimension must be contiguous");
"""
MEM_EFF_CALL = """
std::tuple<at::Tensor, at::Tensor> _efficient_attention_forward(const at::Tensor& query, std::optional<at::Tensor> bias) {
  CHECK_NOSPARSE_LASTCONTIGUOUS_CUDA(query);
  if (bias.has_value()) {
    CHECK_NOSPARSE_LASTCONTIGUOUS_CUDA((*bias));
  }
}
"""


def test_a_check_macro_defined_in_one_file_prints_each_call_s_argument_in_another():
    """PyTorch's memory-efficient attention checks its tensors through a macro of gemm_kernel_utils.h that prints
    the argument's text: the call in attention.cu prints "(*bias): last dimension must be contiguous"."""
    from tools.messages.extract_cpp import check_macros

    macros = check_macros(MEM_EFF_MACRO)
    assert macros == {"CHECK_NOSPARSE_LASTCONTIGUOUS_CUDA": ("TENSOR", (
        ("TENSOR.is_cuda()", " must be a CUDA tensor"), ("TENSOR.stride(-1) == 1", ": last dimension must be contiguous")))}
    raws, _ = extract(MEM_EFF_CALL, macros=macros)
    found = {template_of(r.parts): (r.condition, r.scope) for r in raws}
    assert found["(*bias): last dimension must be contiguous"] == ("(*bias).stride(-1) == 1", ["_efficient_attention_forward"])
    assert "query must be a CUDA tensor" in found and len(found) == 4
    assert extract(MEM_EFF_CALL) == ([], {})  # without the release's macros the calls print nothing known
    assert extract(MEM_EFF_MACRO, macros=macros)[0] == []  # a definition is not a call


def test_a_modules_own_name_is_written_out_so_pythons_attribute_error_elsewhere_is_not_its():
    """flashinfer/__init__.py's lazy __getattr__ raises f"module {__name__!r} has no attribute {name!r}": Python
    prints the same words for any module, so the message is flashinfer's only with flashinfer's name in it."""
    from tools.messages import extract_py
    from tools.messages.model import module_named, module_of

    raws, _ = extract_py.extract('def __getattr__(name):\n'
                                 '    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")\n')
    assert module_of("flashinfer/__init__.py") == "flashinfer"
    assert module_of("python/cudnn/api_base.py") == "cudnn.api_base"
    parts = module_named(raws[0].parts, "flash_attn/cute/flash_fwd.py")
    assert template_of(parts) == "module 'flash_attn.cute.flash_fwd' has no attribute {name}"
    pattern, _ = pattern_of(parts)
    assert re.search(pattern, "AttributeError: module 'flash_attn.cute.flash_fwd' has no attribute 'FlashAttentionForwardSm90'")
    assert not re.search(pattern, "AttributeError: module 'cutlass.cute.core' has no attribute 'ThrMma'")


def _indexed(releases_of_message: dict, read: list, condition: str = "") -> dict:
    """One library's index after `finish`: the messages (template -> releases) and the files read (release, path)."""
    from tools.messages.build import Index
    from tools.messages.model import Raw

    idx = Index()
    for release, path in read:
        idx.note_read("vllm", "vllm-project/vllm", f"wheel:vllm-{release}", path, release)
    for template, releases in releases_of_message.items():
        for release in releases:
            raw = Raw(kind="error", parts=[(LIT, template)], condition=condition, text=template, line=1)
            idx.add("vllm", "vllm-project/vllm", f"wheel:vllm-{release}", release, "vllm/a.py", raw)
    return {e["template"]: e for e in idx.finish()["vllm"]}


def test_a_message_gone_from_a_later_read_of_its_file_is_retired_at_that_release():
    read = [(r, "vllm/a.py") for r in ("0.5.5", "0.6.6", "0.9.2", "0.11.2")]
    got = _indexed({"Sliding window is not supported by this backend": ["0.5.5", "0.6.6"]}, read)
    assert got["Sliding window is not supported by this backend"]["retired"] == "0.9.2"


def test_no_retirement_where_the_file_was_not_read_again_or_the_check_was_reworded():
    moved = _indexed({"Sliding window is not supported by this backend": ["0.5.5", "0.6.6"]},
                     [("0.5.5", "vllm/a.py"), ("0.6.6", "vllm/a.py"), ("0.9.2", "vllm/b.py")])
    assert "retired" not in moved["Sliding window is not supported by this backend"]
    reworded = _indexed({"Sliding window is not supported by this backend": ["0.5.5", "0.6.6"],
                         "This backend does not support sliding window": ["0.9.2"]},
                        [(r, "vllm/a.py") for r in ("0.5.5", "0.6.6", "0.9.2")], condition="window is not None")
    assert not any("retired" in e for e in reworded.values())


def _one_wheel_cache(tmp_path):
    """A cache holding one fake release wheel of 'demo' whose module raises one attention message."""
    import zipfile

    folder = tmp_path / "cache" / "wheels" / "demo-1.0"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / "demo-1.0-py3-none-any.whl", "w") as whl:
        whl.writestr("demo/attention.py", "def f(head_dim):\n    raise ValueError(f'the demo attention kernel "
                                          "only takes head dims up to 256, got {head_dim}')\n")
    return tmp_path / "cache"


def _demo_source():
    return {"name": "demo-wheels", "repo": "demo/demo", "wheels": "demo-*", "library": lambda p, ref="": "flash-attn",
            "include": [r"^demo/attention\.py$"]}


def _run_build(monkeypatch, tmp_path, out, *args):
    from tools.messages import build, native

    monkeypatch.setattr(build, "CACHE", str(_one_wheel_cache(tmp_path)))
    monkeypatch.setattr(build, "SOURCES", [_demo_source(), {**_demo_source(), "name": "other-wheels",
                                                             "wheels": "other-*"}])
    monkeypatch.setattr(native, "read_all", lambda cache: iter(()))
    return build.main(["--out", str(out), *args])


def _seed(out):
    import json

    out.mkdir()
    (out / "vllm.jsonl").write_text('{"id": "vllm-000000000000"}\n', encoding="utf-8")
    (out / "INDEX.json").write_text(json.dumps({"generated": "2026-01-01", "generator": "tools/messages", "libraries": {
        "vllm": {"count": 1, "read": [], "skipped": {}}}}), encoding="utf-8")


def test_a_library_none_of_whose_sources_could_be_read_keeps_its_messages(monkeypatch, tmp_path):
    import json

    out = tmp_path / "messages"
    _seed(out)
    assert _run_build(monkeypatch, tmp_path, out) == 0
    assert (out / "vllm.jsonl").read_text(encoding="utf-8") == '{"id": "vllm-000000000000"}\n'
    index = json.loads((out / "INDEX.json").read_text(encoding="utf-8"))
    assert index["libraries"]["vllm"]["count"] == 1 and index["libraries"]["flash-attn"]["count"] == 1
    assert "head dims up to 256" in (out / "flash-attn.jsonl").read_text(encoding="utf-8")


def test_only_rebuilds_the_named_sources_and_refuses_an_unknown_name(monkeypatch, tmp_path, capsys):
    out = tmp_path / "messages"
    _seed(out)
    assert _run_build(monkeypatch, tmp_path, out, "--only", "demo-wheels") == 0
    assert (out / "flash-attn.jsonl").exists() and (out / "vllm.jsonl").exists()
    assert _run_build(monkeypatch, tmp_path, out, "--only", "nonesuch") == 2
    assert "unknown source 'nonesuch'" in capsys.readouterr().err
    assert _run_build(monkeypatch, tmp_path, out, "--only", "other-wheels") == 2  # nothing of it in the cache
    assert "other-wheels read no file" in capsys.readouterr().err


def test_only_refuses_to_drop_a_release_the_last_build_read(monkeypatch, tmp_path, capsys):
    import json

    out = tmp_path / "messages"
    _seed(out)
    index = json.loads((out / "INDEX.json").read_text(encoding="utf-8"))
    index["libraries"]["flash-attn"] = {"count": 1, "read": [{"repo": "demo/demo", "ref": "wheel:demo-0.9",
                                                               "paths": ["demo/attention.py"]}], "skipped": {}}
    (out / "INDEX.json").write_text(json.dumps(index), encoding="utf-8")
    (out / "flash-attn.jsonl").write_text('{"id": "flash-attn-000000000000"}\n', encoding="utf-8")
    assert _run_build(monkeypatch, tmp_path, out, "--only", "demo-wheels") == 2
    assert "wheel:demo-0.9" in capsys.readouterr().err
    assert (out / "flash-attn.jsonl").read_text(encoding="utf-8") == '{"id": "flash-attn-000000000000"}\n'


def test_a_condition_is_told_apart_as_what_the_check_requires_or_what_makes_it_fail():
    """`assert cond` and TORCH_CHECK(cond) print when cond is false; `if cond: raise`, `if (cond) throw` and
    cudnn-frontend's RETURN_CUDNN_FRONTEND_ERROR_IF(cond, ...) when it is true: the meaning `why` prints follows it."""
    from attndoctor.why.index import meaning_of
    from tools.messages import extract_py

    raws, _ = extract_py.extract("def f(d):\n    assert d <= 256, 'head dim too large for this kernel'\n"
                                 "    if d % 8:\n        raise ValueError('head dim must be a multiple of eight')\n")
    assert [(r.condition, r.trigger) for r in raws] == [("d <= 256", False), ("d % 8", True)]
    raws, _ = extract('void f(int d) {\n  TORCH_CHECK(d <= 256, "FlashAttention forward only supports head dimension '
                      'at most 256");\n  if (d % 8 != 0) { throw std::runtime_error("head dim must be a multiple of '
                      'eight"); }\n  RETURN_CUDNN_FRONTEND_ERROR_IF(d > 256, error_code_t::GRAPH_NOT_SUPPORTED, '
                      '"Num hidden_dim should be less than or equal to 256");\n}\n')
    assert [(r.condition, r.trigger) for r in raws] == [("d <= 256", False), ("d % 8 != 0", True), ("d > 256", True)]
    assert meaning_of({"library": "pytorch", "condition": "d <= 256"}).endswith("its check `d <= 256` failed")
    assert meaning_of({"library": "cudnn-frontend", "condition": "d > 256", "trigger": True}).endswith("when `d > 256`")
    # a guard that only keeps a warning from repeating (llama.cpp's `if (!warned)`) says nothing about the cause
    assert meaning_of({"library": "llama-cpp", "condition": "!warned", "trigger": True, "kind": "warning"}) == \
        "llama.cpp prints this warning"


def test_a_reason_passed_as_a_keyword_is_read_where_the_source_asks_for_it():
    """The kernels hub records why a build variant does not fit as `VariantStatus(..., reason=f"...")` and prints
    the list later; other libraries' `reason=` arguments (pytest.skip, a status code) are not messages."""
    source = ('def check(v, torch_version):\n'
              '    return Status(v, reason=f"Torch version ({v.version}) does not match environment Torch version '
              '({torch_version})")\n')
    found, _ = extract_py.extract(source, reasons=True)
    assert [template_of(r.parts) for r in found] == [
        "Torch version ({v_version}) does not match environment Torch version ({torch_version})"]
    assert extract_py.extract(source)[0] == []
