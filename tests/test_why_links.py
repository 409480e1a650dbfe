"""A library message an advisory's symptom quotes points at that advisory; the words a message prints name its kind."""

import json


def why(cli, *args: str) -> dict:
    code, out, err = cli("why", "--no-here", "--format", "json", *args)
    assert code in (0, 1), err
    return json.loads(out)


def test_a_message_an_advisory_quotes_is_that_advisorys_symptom(cli):
    doc = why(cli, "--", "TypeError('Unsupported tcgen05 MMA op kind: MmaF8F6F4Op')")
    assert doc["cause"]["id"].startswith("ADV-FA4-SM100-FP8-FWD-MMAF8F6F4")
    assert "fp8" in doc["cause"]["topics"]


def test_a_message_many_rules_quote_stays_the_librarys_own(cli):
    doc = why(cli, "--", "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 98304, "
                         "Hardware limit: 65536. Reducing block sizes or `num_stages` may help.")
    assert doc["cause"]["topics"] == ["shared-memory"] and doc["cause"]["kind"] == "message"


def test_a_value_the_message_printed_names_its_kind(cli):
    doc = why(cli, "--", 'ValueError: The "packing" feature requires a flash attention implementation. Please use one '
                         'of: "flash_attn", "flash_attention_2", "flash_attention_3".')
    assert "varlen" in doc["cause"]["topics"]


def test_change_is_not_a_hang(cli):
    doc = why(cli, "--", "- WARNING - llamafactory.model.model_utils.attention - Gemma-2 should use flash attention 2, "
                         "change `flash_attn` to fa2.")
    assert "hang" not in doc["cause"]["topics"]


def test_a_build_without_the_memory_efficient_kernel_is_about_that_kernel(cli):
    doc = why(cli, "--", "UserWarning: 1Torch was not compiled with memory efficient attention. (Triggered internally "
                         "at ../aten/src/ATen/native/transformers/hip/sdp_utils.cpp:505.)")
    assert doc["cause"]["id"] == "TORCH-NOT-COMPILED-WITH-MEM-EFFICIENT"
    assert doc["cause"]["backends"] == ["sdpa-efficient"] and doc["cause"]["topics"] == ["install-missing"]


def test_the_tensor_a_shape_check_names_says_what_kind_of_call_it_was(cli):
    doc = why(cli, "--", "RuntimeError: cu_seqlens_k must have shape (batch_size + 1)")
    assert doc["cause"]["id"] == "FA-CHECK-SHAPE" and "varlen" in doc["cause"]["topics"]


def test_the_flags_that_settle_it_are_flags_why_takes(cli):
    doc = why(cli, "--", "TypeError('Unsupported tcgen05 MMA op kind: MmaF8F6F4Op')")
    code, help_text, _ = cli("why", "--help")
    flags = [f for flag in doc["settle"] for f in flag.split("/")]
    assert "--flash-attn-4" in flags and all(f in help_text for f in flags), flags


def test_a_missing_install_the_message_names_by_its_backend_is_fixed_with_that_backends_package(cli):
    doc = why(cli, "--", "WARN text_generation_launcher: Unable to use Flash Attention V2: Flash Attention V2 is not "
                         "installed.")
    assert doc["cause"]["backends"] == ["flash-attn-2"]
    assert doc["cause"]["fixes"][0].startswith("install flash-attn ")


def test_a_message_that_prints_its_reason_links_only_the_rules_of_that_kind(cli):
    """vLLM names why it skipped flash-attn: head size 88 is not the GPU's architecture; FA2 takes head dim 88, so the
    one head-dim rule the message links is ruled out and the message stands as the cause, saying so."""
    doc = why(cli, "--", "Cannot use FlashAttention-2 backend for head size 88")
    assert doc["cause"]["id"] == "VLLM-CANNOT-USE-FA2" and "head-dim" in doc["cause"]["topics"]
    assert "FA2-HDIM-MAX-256" in doc["cause"]["cause"]
    assert all(c["id"] != "FA2-ARCH-PRE-AMPERE" for c in doc["candidates"][:3])
    doc = why(cli, "--gpu", "T4", "--", "Cannot use FlashAttention-2 backend for Volta and Turing GPUs.")
    assert doc["cause"]["id"] == "FA2-ARCH-PRE-AMPERE"


def test_flash_attns_head_dim_message_from_sdpas_copy_is_sdpas_rule_and_from_flash_attn_flash_attns(cli):
    message = "RuntimeError: FlashAttention forward only supports head dimension at most 256"
    through_sdpa = ('  File "/home/u/r.py", line 6, in <module>\n'
                    "    result = torch.nn.functional.scaled_dot_product_attention(q, k, v)\n" + message)
    assert why(cli, "--", through_sdpa)["cause"]["id"] == "SDPA-FLASH-HEAD-DIM"
    through_flash_attn = ('  File "/usr/lib/python3.10/site-packages/flash_attn/flash_attn_interface.py", line 91, in '
                          "_flash_attn_forward\n    out, softmax_lse, S_dmask, rng_state = flash_attn_gpu.fwd(\n" + message)
    assert why(cli, "--", through_flash_attn)["cause"]["id"] == "FA2-HDIM-MAX-256"


def test_a_runtime_fault_in_a_kernel_the_text_names_is_not_an_advisory_of_another_backend(cli):
    doc = why(cli, "--", "CUDA error (.../hopper/flash_fwd_launch_template.h:209):\n"
                         "an illegal memory access was encountered")
    assert doc["cause"]["id"] == "CUDA-ILLEGAL-MEMORY-ACCESS" and doc["cause"]["backends"] == ["flash-attn-3"]
    assert "upgrade flash-attn 3" in doc["cause"]["fixes"][0]
    # without a kernel named, the advisories the runtime's message is the symptom of stay in play, beside it
    bare = why(cli, "--", "RuntimeError: CUDA error: an illegal memory access was encountered")
    assert bare["verdict"] == "ambiguous" and any(a.startswith("ADV-") for a in bare["alternatives"])


def test_an_advisory_quoting_the_runtimes_words_is_not_their_source_where_no_kernel_is_named(cli):
    """ADV-FLASH-ATTN-2-273-WHEELS-NO-BLACKWELL's symptom is CUDA's 'no kernel image' line, which any kernel prints."""
    line = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
    bare = why(cli, "--", line)
    assert bare["cause"]["id"] == "CUDA-NO-KERNEL-IMAGE"
    advisory = next(c for c in bare["candidates"] if c["id"] == "ADV-FLASH-ATTN-2-273-WHEELS-NO-BLACKWELL")
    assert not any("comes from it" in r for r in advisory["reasons"])
    framed = why(cli, "--", '  File "/x/site-packages/flash_attn/flash_attn_interface.py", line 91, in _flash_attn_forward'
                            "\n" + line)
    advisory = next(c for c in framed["candidates"] if c["id"] == "ADV-FLASH-ATTN-2-273-WHEELS-NO-BLACKWELL")
    assert any("comes from it" in r for r in advisory["reasons"])


def test_of_two_libraries_printing_one_message_the_one_the_text_names_goes_first(cli):
    doc = why(cli, "--", "LlamaModel is using LlamaSdpaAttention, but `torch.nn.functional.scaled_dot_product_attention` "
                         "does not support `output_attentions=True`. Falling back to the manual attention implementation, "
                         "but specifying the manual implementation will be required from Transformers version v5.0.0 "
                         "onwards. This warning can be removed using the argument `attn_implementation=\"eager\"` when "
                         "loading the model.")
    assert doc["cause"]["id"].startswith("TRANSFORMERS-"), doc["cause"]["id"]  # ms-swift prints a copy of it
    assert "the text names transformers" in doc["cause"]["reasons"][0]


def test_a_library_named_in_words_apart_is_named(cli):
    """ComfyUI's fallback line writes SageAttention as 'sage attention'; FlashInfer prints the same words."""
    doc = why(cli, "--", "Error running sage attention: Unsupported head_dim: 256, using pytorch attention instead.")
    assert doc["cause"]["id"].startswith("SAGEATTENTION-"), doc["cause"]["id"]
    assert "the text names SageAttention" in doc["cause"]["reasons"][0]


def test_of_two_libraries_printing_one_message_and_not_named_each_ones_fix_is_offered(cli):
    """FlashInfer and SageAttention both print 'Unsupported head_dim: {}'; a line that names neither gets both fixes."""
    doc = why(cli, "--", "ValueError: Unsupported head_dim: 512")
    libraries = {doc["cause"]["id"].split("-")[0], *(c.split("-")[0] for c in doc["alternatives"])}
    assert {"FLASHINFER", "SAGEATTENTION"} <= libraries
    other = "SageAttention" if doc["cause"]["id"].startswith("FLASHINFER") else "FlashInfer"
    assert any(f.startswith(f"where {other} printed it") for f in doc["cause"]["fixes"]), doc["cause"]["fixes"]


def test_two_messages_of_one_library_are_not_told_apart_by_the_library_name_nearby(cli):
    text = ("No operator found for `memory_efficient_attention_forward` with inputs:\n"
            "query : shape=(1, 3136, 1, 512) (torch.float32)\n"
            "`ckF` is not supported because:\n"
            "max(query.shape[-1] != value.shape[-1]) > 256\n"
            "device=mps (supported: {'cuda'})\n"
            "dtype=torch.float32 (supported: {torch.float16, torch.bfloat16})\n"
            "operator wasn't built - see `python -m xformers.info` for more info")
    assert not any("the text names" in reason for c in why(cli, "--", text)["candidates"] for reason in c["reasons"])
