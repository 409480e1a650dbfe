"""`why` says which of three things it found: one likely cause (exit 0), causes of different kinds it cannot tell
apart (ambiguous, exit 1, naming what would separate them), or nothing (exit 1)."""

from __future__ import annotations

import json


def ask(cli, *args):
    code, out, err = cli("why", *args, "--no-here", "--format", "json")
    return code, json.loads(out) if out.strip() else None, err


def test_a_message_that_names_its_cause_is_a_cause(cli):
    code, doc, _ = ask(cli, "ImportError: /x/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: "
                            "_ZN3c104cuda9SetDeviceEi")
    assert code == 0 and doc["verdict"] == "cause" and doc["cause"]["topics"] == ["install-abi"]


def test_a_text_nothing_explains_is_unexplained(cli):
    code, doc, _ = ask(cli, "the weather is fine today and the loss went down")
    assert code == 1 and doc["verdict"] == "unexplained" and doc["cause"] is None


def test_causes_of_different_kinds_at_one_score_are_ambiguous(cli):
    code, doc, _ = ask(cli, "RuntimeError: CUDA error: an illegal memory access was encountered")
    assert doc["verdict"] == "ambiguous" and code == 1
    assert doc["alternatives"] and doc["settle"]


def test_ambiguous_text_output_names_the_candidates_and_the_facts_to_give(cli):
    code, out, _ = cli("why", "RuntimeError: CUDA error: an illegal memory access was encountered", "--no-here")
    assert code == 1 and "ambiguous:" in out and "to tell them apart, give:" in out


NO_KERNEL = "RuntimeError: No available kernel. Aborting execution."


def test_no_available_kernel_alone_is_the_programs_narrowed_kernels(cli):
    """SDPA prints it only where the program switched its math kernel off and every kernel left refused: that much
    the line says by itself, and letting the math kernel back runs the call; each kernel's reason stays an
    alternative for the facts to decide."""
    code, doc, _ = ask(cli, NO_KERNEL)
    assert code == 0 and doc["verdict"] == "cause" and doc["cause"]["id"] == "SDPA-NO-AVAILABLE-KERNEL"
    assert any("SDPBackend.MATH" in f for f in doc["cause"]["fixes"])
    assert not any(f.startswith("disable SDPA") for f in doc["cause"]["fixes"])  # no one kernel failed alone
    assert "SDPA-FLASH-ARCH-PRE27" in {c["id"] for c in doc["candidates"]}


def test_facts_that_decide_a_kernels_refusal_lead_over_no_available_kernel(cli):
    code, doc, _ = ask(cli, NO_KERNEL, "--gpu", "V100", "--torch", "2.0.1", "--dtype", "fp16", "--hdim", "64")
    assert doc["cause"]["id"] == "SDPA-FLASH-ARCH-PRE27" and doc["cause"]["applies"] is True


def test_the_reasons_printed_before_no_available_kernel_lead(cli):
    code, doc, _ = ask(cli, "UserWarning: Both fused kernels do not support non-null attn_mask. (Triggered "
                            "internally at ../aten/src/ATen/native/transformers/cuda/sdp_utils.h:191.)\n" + NO_KERNEL)
    assert doc["cause"]["id"] == "SDPA-FLASH-ATTN-MASK"


def test_one_kind_of_problem_on_several_backends_is_one_answer(cli):
    """flash-attn 2 and 3 print the same sm80 check: both say the GPU is too old, so the answer is not ambiguous."""
    code, doc, _ = ask(cli, "RuntimeError: FlashAttention only supports Ampere GPUs or newer.", "--gpu", "V100")
    assert code == 0 and doc["verdict"] == "cause" and doc["cause"]["topics"] == ["gpu-arch"]


def test_pythons_own_import_error_points_at_the_release(cli):
    code, doc, _ = ask(cli, "ModuleNotFoundError: No module named 'torch.nn.attention.flex_attention'")
    assert code == 0 and doc["cause"]["backends"] == ["flex-attention"]
    assert any("2.5.0" in f for f in doc["cause"]["fixes"])


def test_the_error_printed_word_for_word_beats_a_rule_whose_symptom_only_resembles_it(cli):
    """PyTorch's own check (q, k and v of different dtypes) is the cause, not the rule that SDPA flash refuses
    fp32, which the words 'dtype' and 'float' call up and the fp32 the message printed satisfies."""
    code, doc, _ = ask(cli, "RuntimeError: Expected query, key, and value to have the same dtype, but got "
                            "query.dtype: float key.dtype: float and value.dtype: c10::Half instead.")
    assert code in (0, 1) and doc["cause"]["kind"] == "message" and doc["cause"]["id"].startswith("PYTORCH-")
    rules = [c for c in doc["candidates"] if c["id"] in ("SDPA-FLASH-DTYPE", "SDPA-CUDNN-DTYPE")]
    assert rules and all(c["score"] < doc["cause"]["score"] for c in rules)


def test_a_reason_every_xformers_operator_gives_is_the_cause(cli):
    text = """NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:
     query       : shape=(1, 4096, 8, 64) (torch.bfloat16)
`fa2F@v2.5.7` is not supported because:
    requires device with capability > (8, 0) but your GPU has capability (7, 5) (too old)
    bf16 is only supported on A100+ GPUs
`cutlassF-pt` is not supported because:
    bf16 is only supported on A100+ GPUs"""
    _, doc, _ = ask(cli, text)
    assert "dtype" in doc["cause"]["topics"]
    assert any("operators give it" in r or "cutlass operator" in r for r in doc["cause"]["reasons"])


def test_a_missing_module_the_versions_given_rule_out_is_another_install(cli):
    """No torch.nn.attention.flex_attention, with torch 2.5.1 given: not an old torch but another torch imported."""
    text = "ModuleNotFoundError: No module named 'torch.nn.attention.flex_attention'"
    _, doc, _ = ask(cli, "--torch", "2.5.1", text)
    assert "install-missing" in doc["cause"]["topics"] and doc["cause"]["fixes"][0].startswith("check which torch")
    _, doc, _ = ask(cli, "--torch", "2.4.1", text)
    assert doc["cause"]["topics"] == ["version-mismatch"] and "2.5.0" in doc["cause"]["fixes"][0]


def test_cudnn_not_finding_nvrtc_is_nvrtc_missing_not_an_extension_built_for_another_cuda(cli):
    """cuDNN's own 'Could not load library' line holds the loader's words too; cuDNN's runtime compiler is what is
    missing (cocktailpeanut/fluxgym#208's lines)."""
    code, doc, _ = ask(cli, "Could not load library libnvrtc.so.12. Error: libnvrtc.so.12: cannot open shared object "
                            "file: No such file or directory")
    assert code == 0 and doc["cause"]["id"] == "CUDNN-NVRTC-NOT-LOADED"
    assert "LOADER-CUDA-RUNTIME-MISSING" not in {c["id"] for c in doc["candidates"]}
    assert any("nvidia-cuda-nvrtc-cu12" in f for f in doc["cause"]["fixes"])


def test_an_attention_op_missing_on_a_device_names_its_kernel_backward_included(cli):
    """intel/torch-xpu-ops#3143: the memory-efficient backward has no XPU kernel; the way out keeps that kernel out."""
    code, doc, _ = ask(cli, "NotImplementedError: The operator 'aten::_scaled_dot_product_efficient_attention_backward' "
                            "is not currently implemented for the XPU device.")
    assert doc["cause"]["id"] == "PYTORCH-ATTENTION-OP-NOT-ON-DEVICE" and doc["cause"]["backends"] == ["sdpa-efficient"]
    assert any("enable_mem_efficient_sdp(False)" in f for f in doc["cause"]["fixes"])
