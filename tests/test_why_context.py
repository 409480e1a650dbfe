"""What surrounds a message tells which library's copy of it ran and which backend it is about: a framework's
wrapper, a call frame, an autograd node, a placeholder's value."""

from __future__ import annotations

import json

import pytest


def why(cli, text: str, *flags: str) -> dict:
    code, out, err = cli("why", text, "--no-here", "--format", "json", *flags)
    assert code in (0, 1), err
    return json.loads(out)


def test_pytorch_wrapper_of_a_cudnn_frontend_message_points_at_sdpa_cudnn(cli):
    text = ("RuntimeError: cuDNN Frontend error: s_kv not a multiple of 64 or d not a multiple of 64 is not supported "
            "with cudnn version below 8.9.6")
    assert why(cli, text)["cause"]["backends"] == ["sdpa-cudnn"]
    bare = why(cli, text.replace("cuDNN Frontend error: ", ""))
    assert "sdpa-cudnn" not in bare["cause"]["backends"] or len(bare["cause"]["backends"]) > 1


def test_a_call_frame_picks_the_library_whose_copy_of_a_shared_message_ran(cli):
    text = ('  File "/x/lib/python3.10/site-packages/flash_attn/flash_attn_interface.py", line 71, in '
            "_flash_attn_backward\n    dq, dk, dv, softmax_d, = flash_attn_cuda.bwd(\n"
            "RuntimeError: dout tensor must have contiguous last dimension")
    cause = why(cli, text)["cause"]
    assert cause["backends"] == ["flash-attn-2"] and cause["topics"] == ["layout"]
    hopper = text.replace("flash_attn/flash_attn_interface.py", "hopper/flash_attn_interface.py").replace(
        "flash_attn_cuda.bwd", "flash_attn_3_cuda.bwd")
    assert why(cli, hopper)["cause"]["backends"] == ["flash-attn-3"]


@pytest.mark.parametrize("node, backend", [("FusedAttnFuncBackward", "te-fused"),
                                           ("ScaledDotProductEfficientAttentionBackward0", "sdpa-efficient")])
def test_an_anomaly_mode_nan_names_the_backward_node_kernel(cli, node, backend):
    doc = why(cli, f"RuntimeError: Function '{node}' returned nan values in its 2th output.")
    assert doc["cause"]["id"] == "TORCH-ANOMALY-NAN" and doc["cause"]["topics"] == ["numerics"]
    assert doc["cause"]["backends"] == [backend] and doc["config"]["train"] is True


def test_an_extension_built_for_another_torch_is_both_kinds_of_problem(cli):
    text = ("WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
            "    PyTorch 2.3.0+cu121 with CUDA 1201 (you have 2.1.0+cu121)")
    cause = why(cli, text)["cause"]
    assert cause["topics"] == ["install-abi", "version-mismatch"]
    assert set(cause["backends"]) == {"sdpa-efficient", "flash-attn-2"}


def test_the_torch_installed_is_the_one_after_you_have(cli):
    text = ("WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
            "    PyTorch 2.6.0+cu124 with CUDA 1204 (you have 2.8.0.dev20250331+cu128)\n"
            "    Python  3.10.16 (you have 3.10.12)")
    torch = why(cli, text)["understood"]["facts"]["torch"]
    assert torch["value"] == "2.8.0.dev20250331" and torch["line"] == 2


def test_a_placeholder_value_names_the_attention_implementation(cli):
    doc = why(cli, "Sliding Window Attention is enabled but not implemented for sdpa; unexpected results may be "
                   "encountered.")
    assert "window" in doc["cause"]["topics"] and "sdpa-math" in doc["cause"]["backends"]


def test_a_message_split_by_a_wrap_is_understood(cli):
    doc = why(cli, "triton.runtime.errors.OutOfResources: out of resource: shared memory,\n"
                   "Required: 98304, Hardware limit: 65536.\nReducing block sizes or `num_stages` may help.")
    assert doc["cause"]["topics"] == ["shared-memory"] and doc["cause"]["backends"] == ["flex-attention"]


def test_a_triton_message_gets_flex_attentions_fix_first_only_where_the_text_shows_its_kernel(cli):
    """Every Triton kernel prints the shared-memory message: FlexAttention's tiles lead the fix only when the text shows
    FlexAttention's kernel (FlexPrefill's or lmdeploy's own Triton kernels print it too)."""
    message = ("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 163842, Hardware "
               "limit: 101376. Reducing block sizes or `num_stages` may help.")
    bare = why(cli, message, "--gpu", "RTX 4090")["cause"]["fixes"][0]
    assert bare.startswith("use smaller tiles") and "if the kernel is flex-attention's: pass smaller tiles" in bare
    framed = why(cli, '  File "/venv/lib/python3.11/site-packages/torch/nn/attention/flex_attention.py", line 1330, '
                      "in flex_attention\n" + message, "--gpu", "RTX 4090")["cause"]
    assert framed["backends"] == ["flex-attention"] and framed["fixes"][0].startswith("pass smaller tiles")


def test_a_failure_that_names_no_reason_is_explained_by_the_refusal_the_facts_meet(cli):
    text = "Failed to build SDPA graph, error msg: No valid engine configs for Matmul_2_24_46_25_Reduction_39_26"
    on_t4 = why(cli, text, "--gpu", "T4")
    assert on_t4["cause"]["id"] == "CUDNN-FE-ARCH" and on_t4["cause"]["topics"] == ["gpu-arch"]
    on_h100 = why(cli, text, "--gpu", "H100")
    assert on_h100["cause"] is None or on_h100["cause"]["id"] != "CUDNN-FE-ARCH"


def test_a_refusal_at_sdpas_dispatch_does_not_explain_a_failure_inside_the_kernel(cli):
    """torch 2.4 keeps cuDNN attention behind TORCH_CUDNN_SDPA_ENABLED=1: where the text shows cuDNN's graph failing,
    the kernel was called, so that gate (which falls back before the kernel) is not the cause."""
    text = ("UserWarning: USING CUDNN SDPA (Triggered internally at sdp_utils.cpp:686.)\n"
            "RuntimeError: cuDNN Frontend error: CUDNN_BACKEND_OPERATION: cudnnFinalize Failed cudnn_status: "
            "CUDNN_STATUS_BAD_PARAM")
    cause = why(cli, text, "--torch", "2.4.0", "--gpu", "H100")["cause"]
    assert cause is None or cause["id"] != "SDPA-CUDNN-ENV-GATE-23"


def test_a_pip_conflict_names_both_packages_backends(cli):
    doc = why(cli, "transformer-engine 0.10.0+96ed6fc requires flash-attn<=1.0.7,>=1.0.6, but you have flash-attn 2.0.4 "
                   "which is incompatible.")
    assert doc["cause"]["id"] == "PIP-REQUIREMENT-CONFLICT" and doc["cause"]["topics"] == ["version-mismatch"]
    assert {"te-flash", "flash-attn-2"} <= set(doc["cause"]["backends"])


def test_a_bare_illegal_memory_access_is_ambiguous_between_backends_bugs(cli):
    doc = why(cli, "RuntimeError: CUDA error: an illegal memory access was encountered.")
    assert doc["verdict"] == "ambiguous"


VLLM_IMA = ("(Worker_TP7 pid=380351) ERROR 04-28-2026-15:50:31.931 [multiproc_executor.py:706] torch.AcceleratorError: "
            "CUDA error: an illegal memory access was encountered\n(Worker_TP7 pid=380351) ERROR 04-28-2026-15:50:31.931 "
            "[multiproc_executor.py:706] Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.")
"""ovg-project/kvcached#321: a vLLM worker's fault (FlashInfer's KV layout under kvcached), in vLLM's log form."""


@pytest.mark.parametrize("text", ["RuntimeError: CUDA error: an illegal memory access was encountered.", VLLM_IMA])
def test_a_runtime_error_that_names_no_backend_is_not_pinned_on_one_backends_bug(cli, text):
    """Any kernel can end in the CUDA runtime's words: the known bugs of four backends that do are what to check,
    not the likely cause, until the facts meet one of them."""
    doc = why(cli, text)
    assert doc["cause"]["id"] == "CUDA-ILLEGAL-MEMORY-ACCESS" and doc["cause"]["topics"] == ["other"]
    assert doc["cause"]["fixes"][0].startswith("rerun with CUDA_LAUNCH_BLOCKING=1")  # not the bugs' upgrades
    assert "ADV-TE-FUSED-BWD-CUDAGRAPH-SKV-NOT-MULT128-IMA" in doc["alternatives"]
    assert doc["verdict"] == "ambiguous"
    held = why(cli, text, "--te", "2.4.0", "--cudnn", "9.10.2", "--train", "--seqlen-kv", "1000", "--dtype", "bf16",
               "--layout", "bshd", "--mask", "causal", "--gpu", "H100")
    assert held["cause"]["id"] == "ADV-TE-FUSED-BWD-CUDAGRAPH-SKV-NOT-MULT128-IMA"


UNSLOTH_1856 = "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n    PyTorch 2.6.0+cu124 with CUDA 1204 (you have 2.8.0.dev20250331+cu128)\n    Python  3.10.16 (you have 3.10.12)\n  Please reinstall xformers (see https://github.com/facebookresearch/xformers#installing-xformers)\n  Memory-efficient attention, SwiGLU, sparse and more won't be available.\n  Set XFORMERS_MORE_DETAILS=1 for more details\n🦥 Unsloth Zoo will now patch everything to make training faster!\nINFO 04-01 10:35:40 [__init__.py:239] Automatically detected platform cuda.\n==((====))==  Unsloth 2025.3.19: Fast Qwen2 patching. Transformers: 4.50.3. vLLM: 0.8.3.dev162+g8af5a5c4.d20250401.cu128.\n   \\\\   /|    NVIDIA GeForce RTX 5090. Num GPUs = 1. Max memory: 31.367 GB. Platform: Linux.\nO^O/ \\_/ \\    Torch: 2.8.0.dev20250331+cu128. CUDA: 12.0. CUDA Toolkit: 12.8. Triton: 3.3.0\n\\        /    Bfloat16 = TRUE. FA [Xformers = None. FA2 = False]"
"""unslothai/unsloth#1856: xformers built for another torch, pasted with unsloth's start-up banner."""


def test_a_library_message_that_names_its_cause_beats_a_rule_whose_symptom_only_resembles_the_text(cli):
    cause = why(cli, UNSLOTH_1856)["cause"]
    assert cause["id"] == "XFORMERS-CANNOT-LOAD-EXTENSIONS"
