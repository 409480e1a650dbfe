"""A line that holds an index message in other words (a release the index did not read reworded it, or joined two
strings without their space) is read as that message, said to resemble it, and ranked below an exact one."""

from __future__ import annotations

import json

from attndoctor.why import resemble
from attndoctor.why.index import load_index, to_entry
from attndoctor.why.reader import read_text

RECORD = {
    "id": "vllm-0123456789ab", "library": "vllm", "kind": "warning",
    "template": "Please use Flashinfer backend for models with logits_soft_cap (i.e., Gemma-2). Otherwise, the output "
                "might be wrong. Set Flashinfer backend by export VLLM_ATTENTION_BACKEND=FLASHINFER.",
    "pattern": r"Please\ use\ Flashinfer\ backend\ for\ models\ with\ logits_soft_cap\ \(i\.e\.,\ Gemma\-2\)\.\ "
               r"Otherwise,\ the\ output\ might\ be\ wrong\.\ Set\ Flashinfer\ backend\ by\ export\ "
               r"VLLM_ATTENTION_BACKEND=FLASHINFER\.",
    "facts": {}, "condition": "", "backend": [],
    "sources": [{"repo": "vllm-project/vllm", "path": "vllm/attention/backends/flash_attn.py", "ref": "v0.5.3"}],
}
JOINED = ("WARNING: Please use Flashinfer backend for models withlogits_soft_cap (i.e., Gemma-2). Otherwise, the "
          "output might be wrong. Set Flashinfer backend by export VLLM_ATTENTION_BACKEND=FLASHINFER.")


def assert_causes(cli, cases):
    """Each text's cause is the catalogue entry named, of the kind named."""
    for text, (wanted, topic) in cases.items():
        code, out, _ = cli("why", "--no-here", "--format", "json", text)
        cause = json.loads(out)["cause"]
        assert code == 0 and cause["id"] == wanted and topic in cause["topics"], text


def entries(tmp_path):
    (tmp_path / "vllm.jsonl").write_text(json.dumps(RECORD) + "\n", encoding="utf-8")
    load_index.cache_clear()
    try:
        return load_index(str(tmp_path))
    finally:
        load_index.cache_clear()


def test_a_line_with_the_messages_words_resembles_it(tmp_path):
    reading = read_text(JOINED, entries(tmp_path))
    assert [(h.entry.id, h.line) for h in reading.hits] == [("VLLM-0123456789AB", 1)]
    assert 0.65 <= reading.hits[0].resembles < 1


def test_the_exact_message_is_not_a_resemblance(tmp_path):
    exact = JOINED.replace("withlogits", "with logits")
    reading = read_text(exact, entries(tmp_path))
    assert [h.resembles for h in reading.hits] == [0.0]


def test_a_code_line_or_a_frame_naming_a_few_of_its_words_is_not_the_message(tmp_path):
    text = ('  File "/x/vllm/attention/backends/flashinfer.py", line 12, in forward\n'
            "    backend = use_flashinfer_backend(models, logits_soft_cap)\n"
            "RuntimeError: CUDA error: an illegal memory access was encountered")
    assert read_text(text, entries(tmp_path)).hits == ()


def test_why_names_a_resembled_message_as_the_cause_and_says_it_resembles(cli):
    code, out, _ = cli("why", "--no-here", "--format", "json", JOINED)
    doc = json.loads(out)
    [message] = [m for m in doc["understood"]["messages"] if m["line"] == 1]
    assert message["library"] == "vllm" and 0.65 <= message["resembles"] < 1
    assert code == 0 and doc["cause"]["id"] == message["id"]
    assert "resembles" in doc["cause"]["reasons"][0] and "softcap" in doc["cause"]["topics"]
    _, text, _ = cli("why", "--no-here", JOINED)
    assert "line 1: resembles vllm" in text


def test_python_and_model_code_messages_about_attention_packages_name_their_kind(cli):
    """Messages users paste from around the attention kernels: flash-attn's optional extensions, Qwen's remote code,
    a Triton kernel written for the pre-MLIR triton, a model class older than its transformers, a name missing from
    an attention package."""
    cases = {
        "ModuleNotFoundError: No module named 'dropout_layer_norm'": ("PY-NO-MODULE-FLASH-ATTN-CSRC-EXTENSION",
                                                                     "install-missing"),
        "Warning: import flash_attn rms_norm fail, please install FlashAttention layer_norm to get higher efficiency":
            ("QWEN-FLASH-ATTN-PART-MISSING", "install-missing"),
        "TypeError: dot() got an unexpected keyword argument 'trans_a'": ("TRITON-DOT-TRANS-ARGUMENT",
                                                                           "version-mismatch"),
        "AttributeError: 'MyModelForCausalLM' object has no attribute '_supports_sdpa'": (
            "PY-MODEL-NO-SDPA-ATTRIBUTE", "version-mismatch"),
        "ImportError: cannot import name 'BatchDecodeWithPagedKVCacheWrapper' from 'flashinfer' (/x/__init__.py)": (
            "PY-CANNOT-IMPORT-NAME-FROM-FRAMEWORK", "version-mismatch"),
    }
    assert_causes(cli, cases)
    _, out, _ = cli("why", "--no-here", "--format", "json", "ModuleNotFoundError: No module named 'rotary'")
    assert all(m["id"] != "PY-NO-MODULE-FLASH-ATTN-CSRC-EXTENSION" for m in json.loads(out)["understood"]["messages"])


def test_a_message_a_terminal_wrapped_inside_a_word_is_found(cli):
    text = ("RuntimeError: BatchPrefillWithPagedKVCachePyTorchWrapper::Forward(at::Tensor, bool)::<lambda()> failed "
            "to dispatch grou\np_size 5")
    _, out, _ = cli("why", "--no-here", "--format", "json", text)
    doc = json.loads(out)
    assert doc["cause"]["id"] == "FLASHINFER-FAILED-TO-DISPATCH" and "gqa" in doc["cause"]["topics"]


def test_nvcc_without_the_compress_mode_option_is_an_old_toolkit(cli):
    code, out, _ = cli("why", "--no-here", "--format", "json", "nvcc fatal   : Unknown option '-compress-mode=size'")
    cause = json.loads(out)["cause"]
    assert code == 0 and cause["id"] == "NVCC-UNKNOWN-COMPRESS-MODE" and "version-mismatch" in cause["topics"]


def test_a_compiler_error_in_an_attention_librarys_sources_is_a_toolkit_mismatch(cli):
    """nvcc's 'file(line): error:' inside flash_attn's sources names flash-attn; nvcc's summary line names no package."""
    text = ("/tmp/flash-attention/csrc/flash_attn/src/flash_fwd_launch_template.h(68): error: expression must have a "
            "constant value\nNote #2767-D: the value of *this cannot be used as a constant")
    code, out, _ = cli("why", "--no-here", "--format", "json", text)
    cause = json.loads(out)["cause"]
    assert cause["id"] == "NVCC-BUILD-COMPILE-ERROR" and cause["backends"] == ["flash-attn-2"]
    assert cause["topics"] == ["version-mismatch"] and "prebuilt wheel" in cause["fixes"][0]
    _, out, _ = cli("why", "--no-here", "--format", "json", '3 errors detected in the compilation of "csrc/x.cu".')
    assert json.loads(out)["cause"]["id"] == "NVCC-BUILD-COMPILE-ERROR"
    _, out, _ = cli("why", "--no-here", "--format", "json", "/home/me/app/kernels/foo.cu(12): error: bad")
    assert (json.loads(out).get("cause") or {}).get("id") != "NVCC-BUILD-COMPILE-ERROR"  # not an attention library


def test_triton_without_libcuda_and_a_fused_op_on_the_cpu_name_their_kind(cli):
    cases = {
        "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\nAssertionError: libcuda.so cannot found!":
            ("TRITON-LIBCUDA-NOT-FOUND", "install-missing"),
        "NotImplementedError: Could not run 'aten::_scaled_dot_product_efficient_attention' with arguments from the "
        "'CPU' backend. This could be because the operator doesn't exist for this backend": (
            "PYTORCH-ATTENTION-OP-NOT-ON-BACKEND", "install-missing"),
    }
    assert_causes(cli, cases)


def test_pip_without_a_release_and_xformers_without_its_operators_name_their_kind(cli):
    cases = {
        "ERROR: No matching distribution found for flashinfer-python": ("PIP-NO-DISTRIBUTION-ATTENTION-PACKAGE",
                                                                        "install-missing"),
        "RuntimeError: No such operator xformers::efficient_attention_forward_generic - did you forget to build "
        "xformers with `python setup.py develop`?": ("XFORMERS-NO-SUCH-OPERATOR", "install-abi"),
    }
    assert_causes(cli, cases)
    _, out, _ = cli("why", "--no-here", "--format", "json", "ERROR: No matching distribution found for requests")
    assert json.loads(out)["cause"] is None


def test_a_kernel_called_with_another_releases_arguments_is_a_version_mismatch(cli):
    assert_causes(cli, {
        "TypeError: varlen_fwd(): incompatible function arguments. The following argument types are supported:": (
            "PYBIND-ATTENTION-KERNEL-ARGUMENTS", "version-mismatch"),
        "RuntimeError: _vllm_fa2_C::fwd_kvcache() expected at most 21 argument(s) but received 22 argument(s). "
        "Declaration: _vllm_fa2_C::fwd_kvcache(Tensor q)": ("TORCH-OP-SCHEMA-ARGUMENT-COUNT", "version-mismatch"),
        # FlashInfer's JIT modules name the kernel in the namespace and the step in the op (flashinfer-ai/flashinfer#1720)
        "RuntimeError: batch_prefill_with_kv_cache_dtype_q_bf16_dtype_kv_bf16_head_dim_qk_128::plan() is missing value "
        "for argument '_15'. Declaration: batch_prefill_with_kv_cache_dtype_q_bf16::plan(Tensor _0, int _15) -> Tensor _0": (
            "TORCH-OP-SCHEMA-ARGUMENT-COUNT", "version-mismatch"),
        "TypeError: apply_rotary_pos_emb_flashatt() takes 2 positional arguments but 4 were given": (
            "PY-ATTENTION-CALL-SIGNATURE", "version-mismatch"),
        "TypeError: FlashAttention.forward() missing 1 required positional argument: 'cu_seqlens'": (
            "PY-ATTENTION-CALL-SIGNATURE", "version-mismatch"),
        # flash-attn's public functions too, where no entry of flash-attn's own speaks for the form
        "TypeError: flash_attn_func() missing 1 required positional argument: 'max_s'": (
            "PY-ATTENTION-CALL-SIGNATURE", "version-mismatch"),
        "TypeError: flash_attn_varlen_func() takes from 6 to 14 positional arguments but 15 were given": (
            "PY-ATTENTION-CALL-SIGNATURE", "version-mismatch"),
    })
    # flash-attn's own functions keep their entry, which names the releases
    assert_causes(cli, {"TypeError: flash_attn_func() got an unexpected keyword argument 'softcap'": (
        "FA-UNEXPECTED-KEYWORD", "softcap"),
        "TypeError: _flash_attn_forward() missing 1 required positional argument: 'window_size_right'": (
        "FA-MISSING-POSITIONAL", "version-mismatch")})
    _, out, _ = cli("why", "--no-here", "--format", "json", "TypeError: process(): incompatible function arguments.")
    assert json.loads(out)["cause"] is None


def test_each_new_entry_stays_off_a_neighbouring_text(cli):
    """One text each that comes near a new entry's words and is not its message."""
    near = {
        "QWEN-FLASH-ATTN-PART-MISSING": "Warning: import flash_attn fail, please install FlashAttention to get higher "
                                        "efficiency",
        "TRITON-DOT-TRANS-ARGUMENT": "TypeError: dot() got an unexpected keyword argument 'out_dtype'",
        "TRITON-LIBCUDA-NOT-FOUND": "OSError: libcudart.so.12: cannot open shared object file",
        "PYTORCH-ATTENTION-OP-NOT-ON-BACKEND": "NotImplementedError: Could not run 'aten::empty_strided' with arguments "
                                               "from the 'Meta' backend.",
        "PY-MODEL-NO-SDPA-ATTRIBUTE": "AttributeError: 'LlamaModel' object has no attribute 'rotary_emb'",
        "NVCC-UNKNOWN-COMPRESS-MODE": "nvcc fatal   : Unknown option '-foo'",
        "XFORMERS-NO-SUCH-OPERATOR": "RuntimeError: No such operator torchvision::nms",
        "TORCH-OP-SCHEMA-ARGUMENT-COUNT": "RuntimeError: torchvision::nms() expected at most 3 argument(s) but received "
                                          "4 argument(s).",
        "PIP-NO-DISTRIBUTION-ATTENTION-PACKAGE": "ERROR: No matching distribution found for numpy",
        "PY-ATTENTION-CALL-SIGNATURE": "TypeError: load_state_dict() got an unexpected keyword argument 'assign'",
        "BUILD-HEADER-NOT-FOUND": "fatal error: config.json: No such file or directory",
        "TRITON-LAUNCHER-BUILD-FAILED": "subprocess.CalledProcessError: Command '['nvcc', '/tmp/x/kernel.cu', '-O3']' "
                                        "returned non-zero exit status 1.",
    }
    for entry, text in near.items():
        _, out, _ = cli("why", "--no-here", "--format", "json", text)
        assert entry not in [m["id"] for m in json.loads(out)["understood"]["messages"]], entry


def test_the_exception_class_before_a_reworded_message_is_not_its_words(cli):
    """Another build's Triton words its out-of-resource error differently; the class name in front is who raised it."""
    text = ("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 163842, Hardware "
            "limitation: 101376. reducing the block size or `num_stages` may help")
    _, out, _ = cli("why", "--no-here", "--format", "json", text)
    cause = json.loads(out)["cause"]
    assert cause["id"].startswith("TRITON-") and "resembles" in cause["reasons"][0]
    assert "shared-memory" in cause["topics"]


def test_numbers_both_lines_print_do_not_make_them_alike():
    """'head_dim_v=64 should be a multiple of 128' shares only three words with 'head_kv should be a multiple of 64'
    once the 64 both print is set aside."""
    record = {**RECORD, "id": "sglang-0123456789ab", "library": "sglang", "kind": "assert",
              "template": "head_kv should be a multiple of 64", "pattern": r"head_kv\ should\ be\ a\ multiple\ of\ 64"}
    vocabulary = resemble._Vocabulary([to_entry(record, "sglang.jsonl")])
    assert vocabulary.best("NotImplementedError: head_dim_v=64 should be a multiple of 128") is None
    assert vocabulary.best("AssertionError: head_kv should be a multiple of 64 here") is not None


def test_words_hundreds_of_messages_print_do_not_make_two_lines_alike():
    """PyTorch's in-place broadcast error ("output with shape [..] doesn't match the broadcast shape [..]") shares
    four words with NATTEN's "Output shape output.shape=.. doesn't match input shape ..." (src/natten/ops.py@v0.17.5),
    all of them in hundreds of the index's messages: no sign of the same check. A line that keeps a rarer word of the
    message still resembles it."""
    line = "RuntimeError: output with shape [3, 4, 1, 1] doesn't match the broadcast shape [3, 4, 1, 280]"
    assert not resemble.resembling_hits([line], [], tuple(load_index()))
    reworded = "AssertionError: Output shape torch.Size([1, 8]) doesn't match the input shape output_0 of natten"
    assert [h.entry.library for h in resemble.resembling_hits([reworded], [], tuple(load_index()))] == ["natten"]


def test_a_build_without_a_header_is_a_missing_install(cli):
    assert_causes(cli, {
        "/x/util/tensor_fill.h:52:10: fatal error: curand_kernel.h: No such file or directory": (
            "BUILD-HEADER-NOT-FOUND", "install-missing"),
        "csrc\\flash_api.cpp(1): fatal error C1083: Cannot open include file: 'cuda_runtime.h': No such file or "
        "directory": ("BUILD-HEADER-NOT-FOUND", "install-missing"),
    })


def test_triton_failing_to_build_a_kernels_launcher_is_a_missing_install(cli):
    assert_causes(cli, {
        "subprocess.CalledProcessError: Command '['/usr/bin/gcc', '/tmp/tmpq4/main.c', '-O3', '-I/x/triton/common/../"
        "third_party/cuda/include', '-shared', '-fPIC', '-lcuda', '-o', '/tmp/tmpq4/k.so']' returned non-zero exit "
        "status 1.": ("TRITON-LAUNCHER-BUILD-FAILED", "install-missing")})
