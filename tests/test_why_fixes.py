"""A fix for a message no rule models is one the user can apply to that kind of problem."""

import json

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of 79.19 GiB"


def fixes(cli, text: str) -> list[str]:
    code, out, err = cli("why", "--no-here", "--format", "json", "--", text)
    assert code in (0, 1), err
    doc = json.loads(out)
    assert "oom" in doc["cause"]["topics"]
    return doc["cause"]["fixes"]


def test_out_of_memory_in_flex_attention_is_fixed_by_compiling_it(cli):
    frames = OOM + '\n  File "/venv/lib/python3.12/site-packages/torch/nn/attention/flex_attention.py", line 1300, in flex_attention'
    assert fixes(cli, frames)[0].startswith("compile it: torch.compile(flex_attention)")


def test_out_of_memory_is_not_a_setting_to_change_to_what_a_check_accepts(cli):
    found = fixes(cli, OOM)
    assert not any(f.startswith("change the oom") for f in found)
    assert found[0].startswith("make the call need less memory")


def test_a_log_about_a_failed_import_is_the_cause_where_no_error_was_recognised(cli):
    """transformers/modeling_flash_attention_utils.py (wheel 4.54.1:276) asks this when flash_attn does not import."""
    text = ("Unable to import the official flash attention, do you want to try to use `kernels-community/flash-attn` "
            "(trust remote code) Yes or No?")
    code, out, err = cli("why", "--no-here", "--format", "json", "--", text)
    doc = json.loads(out)
    assert code == 0 and doc["cause"]["kind"] == "message" and doc["cause"]["topics"] == ["install-missing"]
    assert doc["cause"]["fixes"][0].startswith("install flash-attn ")


def test_a_log_is_not_the_cause_beside_an_error(cli):
    text = ("Unable to import the official flash attention, do you want to try to use `kernels-community/flash-attn` "
            "(trust remote code) Yes or No?\n"
            "RuntimeError: FlashAttention only supports Ampere GPUs or newer.")
    code, out, err = cli("why", "--no-here", "--format", "json", "--", text)
    assert json.loads(out)["cause"]["topics"] != ["install-missing"]


def test_a_message_whose_modelled_causes_the_facts_rule_out_says_so_and_offers_none_of_their_fixes(cli):
    """sm89 meets neither flash-attn's pre-Ampere refusal nor its Blackwell one before 2.7.3."""
    text = "RuntimeError: FlashAttention only supports Ampere GPUs or newer."
    code, out, err = cli("why", "--no-here", "--format", "json", "--gpu", "RTX 4060 Ti", "--flash-attn", "2.7.2",
                         "--", text)
    cause = json.loads(out)["cause"]
    assert cause["id"] == "FA-AMPERE-OR-NEWER" and "rule out every cause modelled for it" in cause["cause"]
    assert not any("2.7.3" in f for f in cause["fixes"])


def test_the_same_message_on_a_gpu_it_refuses_keeps_its_rules_fix(cli):
    text = "RuntimeError: FlashAttention only supports Ampere GPUs or newer."
    code, out, err = cli("why", "--no-here", "--format", "json", "--gpu", "RTX 5090", "--flash-attn", "2.7.2",
                         "--", text)
    cause = json.loads(out)["cause"]
    assert "rule out" not in cause["cause"]
    assert any("2.7.3" in f for f in cause["fixes"])


def test_the_checked_fix_and_the_rules_literal_are_one_fix(cli):
    text = ("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your NVIDIA GeForce "
            "RTX 2080 Ti GPU has compute capability 7.5. You can use float16 instead by explicitly setting the`dtype` "
            "flag in CLI, for example: --dtype=half.")
    code, out, err = cli("why", "--no-here", "--format", "json", "--gpu", "RTX 2080 Ti", "--", text)
    found = [f.replace("'", "") for f in json.loads(out)["cause"]["fixes"]]
    assert len(found) == len(set(found)), found


def test_a_messages_advice_is_not_cut_at_the_dot_of_a_name_or_a_version():
    """transformers' right-padding message asks for `tokenizer.padding_side = 'left'`; a version keeps its dots too."""
    from attndoctor.why.fixes import own_advice

    padded = ("You are attempting to perform batched generation with padding_side='right' this may lead to unexpected "
              "behaviour for Flash Attention version of Qwen2_5_VL. Make sure to  call `tokenizer.padding_side  = "
              "'left'` before tokenizing the input.")
    assert own_advice([padded], 1) == ("as the message says: Make sure to  call `tokenizer.padding_side  = 'left'` "
                                       "before tokenizing the input.",)
    versioned = "flash-attn is too old. Please upgrade flash-attn to 2.6.1 or later. Then retry."
    assert own_advice([versioned], 1) == ("as the message says: Please upgrade flash-attn to 2.6.1 or later.",)


def test_a_messages_advice_that_says_what_you_need_to_do_is_taken():
    """torch/nn/attention/flex_attention.py: '... you likely need to create a new block mask.'"""
    from attndoctor.why.fixes import own_advice

    text = ("ValueError: block_mask was created for block_mask.shape=(1, 1, 4096, 4096) but got q_len=8192 and "
            "kv_len=8192. As the block mask was created for a smaller length than you're using it for, you likely need "
            "to create a new block mask.")
    assert own_advice([text], 1) == ("as the message says: you likely need to create a new block mask.",)
    assert own_advice(["RuntimeError: you need to be careful with masks here."], 1) == ()


def test_a_loader_message_is_fixed_in_the_package_that_ships_the_file(cli):
    """The loader prints "undefined symbol" for any extension; the fix is the package whose file it names."""
    cases = {
        "ImportError: /usr/local/lib/python3.10/dist-packages/sageattention/_qattn_sm80.cpython-310-x86_64-linux-gnu.so:"
        " undefined symbol: _ZN3c104cuda9SetDeviceEi": "sageattention",
        "ImportError: /root/sgl_kernel/common_ops.abi3.so: undefined symbol: _ZN3c104cuda14ExchangeDeviceEa": "sgl-kernel",
        "ImportError: libtorch_cuda.so: cannot open shared object file: No such file or directory": "torch",
    }
    for text, package in cases.items():
        code, out, err = cli("why", "--no-here", "--format", "json", "--", text)
        cause = json.loads(out)["cause"]
        fixes = cause["fixes"]
        assert any(package in f for f in fixes), (package, fixes)
        assert cause["kind"] != "message" or cause["cause"].startswith(f"{package}'s compiled file does not load"), cause
        assert not any("the dynamic loader" in f for f in fixes), fixes


def test_a_reason_of_xformers_cutlass_operator_outranks_those_of_operators_ruled_out_anyway(cli):
    """xformers lists every operator's reasons; the cutlass operator is the one that runs where no other does."""
    text = """NotImplementedError: No operator found for `memory_efficient_attention_backward` with inputs:
     query       : shape=(16, 4096, 1, 80) (torch.float16)
     attn_bias   : <class 'torch.Tensor'>
`cutlassB` is not supported because:
    Broadcasting the `attn_bias` tensor is not supported (shape: (16, 4096, 4096)/ expected: (16, 1, 4096, 4096))
`smallkB` is not supported because:
    dtype=torch.float16 (supported: {torch.float32})
    unsupported embed per head: 80"""
    code, out, err = cli("why", "--no-here", "--format", "json", "--", text)
    cause = json.loads(out)["cause"]
    assert "Broadcasting" in cause["cause"] or "bias" in cause["topics"], cause
    assert "head-dim" not in cause["topics"]


def test_a_library_error_a_catalogue_entry_explains_on_its_line_is_not_a_bare_failure(cli):
    """xformers' "can't load C++/CUDA extensions" names its cause (a build for another torch); the torch it reports
    (1.12) must not make "no SDPA before torch 2.0" the refusal behind a reasonless failure."""
    text = ("WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
            "    PyTorch 1.13.1+cu117 with CUDA 1107 (you have 1.12.1+cu113)\n"
            "    Python  3.10.9 (you have 3.10.9)")
    code, out, err = cli("why", "--no-here", "--format", "json", "--", text)
    assert json.loads(out)["cause"]["id"] == "XFORMERS-CANNOT-LOAD-EXTENSIONS"


def test_a_library_that_does_not_support_something_yet_is_fixed_by_a_later_release(cli):
    code, out, _ = cli("why", "--no-here", "--format", "json", "--",
                       "ValueError: SiglipVisionModel does not support Flash Attention 2.0 yet. Please request to add "
                       "support where the model is hosted, on its model hub page")
    assert json.loads(out)["cause"]["fixes"][0].startswith("upgrade transformers: the message says")
    code, out, _ = cli("why", "--no-here", "--format", "json", "--",
                       "RuntimeError: FlashAttention only supports Ampere GPUs or newer.")
    assert not any(f.startswith("upgrade flash-attn: the message says") for f in json.loads(out)["cause"]["fixes"])


def test_a_feature_a_library_says_it_does_not_currently_implement_is_fixed_by_a_later_release(cli):
    for text, library in (("NotImplementedError: Cascade attention is not implemented for ROCM AITER", "vLLM"),
                          ("ValueError: Group query attention is not currently supported in cross attention.",
                           "Megatron-LM")):
        code, out, _ = cli("why", "--no-here", "--format", "json", "--", text)
        assert json.loads(out)["cause"]["fixes"][0].startswith(f"upgrade {library}: the message says"), text
    code, out, _ = cli("why", "--no-here", "--format", "json", "--",
                       "RuntimeError: FlashAttention currently only supports FP16 and BF16.")
    assert not any("the message says the support is not there yet" in f for f in json.loads(out)["cause"]["fixes"])


def test_a_message_that_asks_users_to_request_the_support_is_fixed_by_a_later_release(cli):
    """transformers/modeling_utils.py@wheel:transformers-4.46.3: the model class has no flash-attn 2 path; the message
    asks for it to be requested, so a later release may have it."""
    code, out, _ = cli("why", "--no-here", "--format", "json", "--",
                       "ValueError: The current architecture does not support Flash Attention 2.0. Please open an issue "
                       "on GitHub to request support for this architecture: https://github.com/huggingface/transformers/"
                       "issues/new")
    assert json.loads(out)["cause"]["fixes"][0].startswith("upgrade transformers: the message says")
    code, out, _ = cli("why", "--no-here", "--format", "json", "--",
                       "ValueError: LlamaForCausalLM does not support an attention implementation through "
                       "torch.nn.functional.scaled_dot_product_attention yet. Please request the support for this "
                       "architecture: https://github.com/huggingface/transformers/issues/28005.")
    assert json.loads(out)["cause"]["fixes"][0].startswith("upgrade transformers: the message says")


def test_an_unknown_error_whose_kind_no_fix_covers_says_where_to_look_in_plain_words(cli):
    """An error of no indexed library ('cutlass.base_dsl error: ...') has no source to cite: the last resort is to look
    its words up, said as a sentence ("see the library that printed it's check" was neither)."""
    code, out, _ = cli("why", "--no-here", "--format", "json", "--", "RuntimeError: cutlass.base_dsl error: CUDA version mismatch")
    fixes = json.loads(out)["cause"]["fixes"]
    assert not any("printed it's" in f for f in fixes), fixes
    assert any(f.startswith("look the message's words up in the source or tracker of the library that printed it")
               for f in fixes), fixes


def test_a_build_log_is_explained_by_the_compilers_error_not_by_the_lines_that_report_the_failure(cli):
    """pip's 'Failed building wheel' and torch's 'Error compiling objects for extension' only say that the compile
    stopped; the compiler's own line above them says why."""
    for cause, first in (("BUILD-COMPILER-OUT-OF-MEMORY", "g++: fatal error: Killed signal terminated program cc1plus"),
                         ("NVCC-BUILD-COMPILE-ERROR", "/tmp/x/flash_attn/src/flash_fwd_launch_template.h(68): error: "
                                                      "expression must have a constant value")):
        text = "\n".join(("FAILED: /tmp/x/build/temp.linux-x86_64-cpython-310/csrc/flash_attn/src/flash_bwd.o", first,
                          "ninja: build stopped: subcommand failed.", "RuntimeError: Error compiling objects for extension",
                          "ERROR: Failed building wheel for flash-attn",
                          "ERROR: Could not build wheels for flash-attn, which is required to install "
                          "pyproject.toml-based projects"))
        code, out, _ = cli("why", "--no-here", "--format", "json", "--", text)
        assert json.loads(out)["cause"]["id"] == cause
    code, out, _ = cli("why", "--no-here", "--format", "json", "--", "RuntimeError: Error compiling objects for extension")
    assert json.loads(out)["cause"]["id"] == "BUILD-EXTENSION-COMPILE-FAILED"


def test_a_cuda_runtime_error_with_no_kernel_named_asks_for_the_failing_kernel(cli):
    """The runtime reports an asynchronous fault at a later call: without the text naming an attention kernel, the fix
    is to find which kernel it was, not the runtime's own source."""
    for text in ("RuntimeError: CUDA error: too many resources requested for launch",
                 "torch.AcceleratorError: CUDA error: misaligned address"):
        code, out, _ = cli("why", "--no-here", "--format", "json", "--", text)
        fixes = json.loads(out)["cause"]["fixes"]
        assert fixes[0].startswith("rerun with CUDA_LAUNCH_BLOCKING=1"), (text, fixes)
        assert not any("check behind the message" in f for f in fixes), fixes


def test_a_loader_message_naming_no_file_is_fixed_in_the_package_the_facts_point_at(cli):
    """axolotl-ai-cloud/axolotl#911 pasted only the symbol; the user's flash-attn is the package that ships it."""
    code, out, err = cli("why", "--no-here", "--format", "json", "--flash-attn", "2.3.6", "--",
                         "ImportError: undefined symbol: _ZN3c104cuda9SetDeviceEi")
    cause = json.loads(out)["cause"]
    assert "install-abi" in cause["topics"] and cause["fixes"][0].startswith("reinstall flash-attn built for")
    code, out, err = cli("why", "--no-here", "--format", "json", "--", "ImportError: undefined symbol: _ZN3c104cuda9SetDeviceEi")
    fix = json.loads(out)["cause"]["fixes"][0]  # no file and no facts: the traceback's import says whose it is
    assert fix.startswith("reinstall the package whose compiled extension the program was importing") and "file" not in fix


def test_bfloat16_refused_for_the_gpu_is_fixed_by_float16(cli):
    """vllm/worker/worker.py (vLLM 0.2-0.5) raises it on pre-Ampere GPUs; float16 is what those GPUs run."""
    text = ("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU "
            "has compute capability 7.5.")
    code, out, err = cli("why", "--no-here", "--format", "json", "--gpu", "T4", "--", text)
    cause = json.loads(out)["cause"]
    assert cause["fixes"][0].startswith("use float16 instead of bfloat16") and "--dtype half" in cause["fixes"][0]
    code, out, err = cli("why", "--no-here", "--format", "json", "--gpu", "T4", "--",
                         "RuntimeError: FlashAttention only supports Ampere GPUs or newer.")
    assert not json.loads(out)["cause"]["fixes"][0].startswith("use float16")


def test_a_nan_from_a_backward_node_is_fixed_in_the_package_of_that_nodes_kernel(cli):
    """NVIDIA/TransformerEngine#1101: anomaly mode named FusedAttnFuncBackward; TE's release fixed it."""
    def first_fix(node):
        code, out, err = cli("why", "--no-here", "--format", "json", "--",
                             f"RuntimeError: Function '{node}' returned nan values in its 0th output.")
        return json.loads(out)["cause"]["fixes"][0]
    assert first_fix("FusedAttnFuncBackward").endswith("upgrade transformer-engine")
    assert first_fix("ScaledDotProductEfficientAttentionBackward0").endswith("upgrade torch")
    assert first_fix("MulBackward0").endswith("upgrade the package that provides the kernel")


def test_flash_attn_3_refused_launch_is_its_shared_memory_on_a_smaller_gpu(cli):
    """sgl-project/sglang#10711: FA3's hopper launch template on an L20 (sm89) printed 'invalid argument'."""
    def cause(text):
        code, out, err = cli("why", "--no-here", "--format", "json", "--gpu", "L20", "--", text)
        return json.loads(out)["cause"]
    fa3 = cause("CUDA error (/sgl-kernel/build/_deps/repo-flash-attention-src/hopper/flash_fwd_launch_template.h:190): "
                "invalid argument")
    assert fa3["id"] == "FA3-LAUNCH-SMEM-INVALID-ARGUMENT" and fa3["topics"][0] == "gpu-arch"
    assert fa3["backends"] == ["flash-attn-3"] and "flash-attn 2 or SDPA" in fa3["fixes"][0]
    assert cause("CUDA error (/x/csrc/flash_attn/src/flash_fwd_launch_template.h:89): invalid argument")["id"] != fa3["id"]
    assert cause("CUDA error (/x/hopper/flash_fwd_launch_template.h:194): an illegal memory access was "
                 "encountered")["id"] != fa3["id"]


def test_an_invalid_kernel_image_is_fixed_in_the_package_of_the_kernel_that_failed(cli):
    """OpenMOSS/MOSS-TTSD#22: flash-attn 2.8.1's wheels on an older driver; the fix was flash-attn 2.8.0 or a newer
    driver."""
    code, out, err = cli("why", "--no-here", "--format", "json", "--flash-attn", "2.8.1", "--",
                         "torch.AcceleratorError: CUDA error: device kernel image is invalid")
    assert "(downgrade flash-attn)" in json.loads(out)["cause"]["fixes"][0]


def test_a_refusal_open_only_on_a_package_the_text_never_shows_does_not_outrank_torchs_own_warning(cli):
    """lllyasviel/Fooocus#3862: torch 2.1's build has no sm_120 code; flash-attn 3's Blackwell refusal, open only on
    whether flash-attn 3 is installed, is not the cause. Given flash-attn 3's version, it is weighed as before."""
    text = ("RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
            "UserWarning:\nNVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current "
            "PyTorch installation.\nThe current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_61 sm_70 "
            "sm_75 sm_80 sm_86 sm_90.")
    code, out, err = cli("why", "--no-here", "--format", "json", "--torch", "2.1.0", "--", text)
    doc = json.loads(out)
    assert doc["cause"]["topics"][0] == "install-arch" and doc["cause"]["id"] != "FA3-ARCH-BLACKWELL"
    fa3 = next(c for c in doc["candidates"] if c["id"] == "FA3-ARCH-BLACKWELL")
    assert any("does not show in use" in r for r in fa3["reasons"])
    code, out, err = cli("why", "--no-here", "--format", "json", "--gpu", "RTX 5090", "--flash-attn-3", "3.0.0b1",
                         "--", text.splitlines()[0])
    assert json.loads(out)["cause"]["id"] == "FA3-ARCH-BLACKWELL"


def test_vllms_selector_error_is_read_by_the_reasons_it_lists_not_by_the_config_or_one_reason(cli):
    """vllm-project/vllm#31480: every sparse-capable MLA backend refused the GPU's compute capability. The config it
    prints (head_size, kv_cache_dtype, block_size) is what was asked for, not a reason."""
    text = ("ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(head_size=576, "
            "dtype=torch.bfloat16, kv_cache_dtype=auto, block_size=None, use_mla=True, has_sink=False, use_sparse=True, "
            "use_mm_prefix=False, attn_type=decoder). Reasons: {FLASH_ATTN_MLA: [sparse not supported, compute "
            "capability not supported], FLASHMLA: [sparse not supported, compute capability not supported], "
            "TRITON_MLA: [sparse not supported], FLASHMLA_SPARSE: [compute capability not supported]}.")
    code, out, err = cli("why", "--no-here", "--format", "json", "--", text)
    cause = json.loads(out)["cause"]
    assert cause["topics"] == ["gpu-arch"] and "len(valid_backends_priorities) == 0" in cause["cause"]


def test_a_value_the_backend_refuses_is_also_fixed_in_the_code_that_passed_it(cli):
    """AUTOMATIC1111/stable-diffusion-webui#11066: the webui's own sdp_attnblock_forward mixed dtypes; its release
    fixed it. A broken install is not the caller's to fix."""
    text = ('  File "/ext3/automatic1111/stable-diffusion-webui/modules/sd_hijack_optimizations.py", line 612, in '
            "sdp_attnblock_forward\nRuntimeError: Expected query, key, and value to have the same dtype, but got "
            "query.dtype: float key.dtype: float and value.dtype: c10::Half instead.")
    code, out, err = cli("why", "--no-here", "--format", "json", "--", text)
    fixes = json.loads(out)["cause"]["fixes"]
    assert any(f.startswith("or upgrade stable-diffusion-webui, whose code made the failing call") for f in fixes)
    broken = ('  File "/x/ComfyUI/custom_nodes/ComfyUI-KJNodes/nodes.py", line 3, in attention\n'
              "ImportError: /x/site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: "
              "_ZN3c104cuda9SetDeviceEi")
    code, out, err = cli("why", "--no-here", "--format", "json", "--", broken)
    assert not any("ComfyUI-KJNodes" in f for f in json.loads(out)["cause"]["fixes"])


def test_flex_attention_written_in_words_names_the_backend(cli):
    """VARGPT-family/VARGPT-v1.1#1: a program's own warning says 'flex attention' in plain words."""
    code, out, err = cli("why", "--no-here", "--format", "json", "--torch", "2.1.0+cu121", "--",
                         "[Warning] flex attention need pytorch 2.5.0+ but your version is 2.1.0+cu121")
    cause = json.loads(out)["cause"]
    assert cause["backends"] == ["flex-attention"] and "version-mismatch" in cause["topics"]
    code, out, err = cli("why", "--no-here", "--format", "json", "--", "the flexible attention layer failed")
    assert "flex-attention" not in json.loads(out)["understood"]["backends"]


def test_an_unknown_error_that_says_what_is_unsupported_and_what_to_use_is_taken_at_its_word(cli):
    """kohya-ss/musubi-tuner#539: SageAttention has no backward; the message names the options to use instead."""
    text = ("ValueError: SageAttention doesn't currently support training. Please use `--sdpa` or `--xformers`, etc., "
            "instead.")
    code, out, err = cli("why", "--no-here", "--format", "json", "--", text)
    cause = json.loads(out)["cause"]
    assert cause["id"] == "ERROR-OWN-WORDS" and cause["topics"] == ["other"] and "--sdpa" in cause["fixes"][0]
    code, out, err = cli("why", "--no-here", "--format", "json", "--", "ValueError: the weather is not supported today")
    assert json.loads(out)["cause"] is None


def test_a_message_asking_for_a_minimum_release_is_a_version_mismatch():
    """kijai/ComfyUI-Florence2#48: transformers asks for torch>=2.1.1; a value compared in a config is not a release."""
    from attndoctor.why.topics import text_topics

    assert "version-mismatch" in text_topics("PyTorch SDPA requirements in Transformers are not met. Please install "
                                             "torch>=2.1.1.")
    assert "version-mismatch" not in text_topics("expected seqlen_q >= 1.5 and x >= 2.0")


def test_an_unknown_errors_own_advice_comes_first_and_sequence_parallelism_is_cp(cli):
    """hiyouga/LlamaFactory#10616: the message wraps its advice onto the next line."""
    code, out, err = cli("why", "--no-here", "--format", "json", "--",
                         "ValueError: Sequence parallelism requires flash attention. Please set\nflash_attn: flash_attention_2.")
    cause = json.loads(out)["cause"]
    assert cause["topics"] == ["cp"] and cause["fixes"][0] == "as the message says: Please set flash_attn: flash_attention_2."


def test_mixed_query_key_value_dtypes_are_fixed_by_one_dtype_not_by_another_kernel(cli):
    """SDPA refuses q, k and v of different dtypes in every kernel: the fix is one dtype for the three, made where
    the call is built, and turning a kernel off helps nothing."""
    for text in ("RuntimeError: Expected query, key, and value to have the same dtype, but got query.dtype: float "
                 "key.dtype: float and value.dtype: c10::BFloat16 instead.",
                 "got query.dtype: struct c10::Half key.dtype: float and value.dtype: float"):
        code, out, _ = cli("why", "--no-here", "--format", "json", text)
        cause = json.loads(out)["cause"]
        assert cause["topics"][0] == "dtype"
        assert cause["fixes"][0].startswith("cast query, key and value to one dtype"), cause["fixes"]
        assert not any(fix.startswith("disable") for fix in cause["fixes"])


def test_clips_77_token_mask_against_a_batch_is_open_clips_batch_first_switch(cli):
    """open-clip-torch 2.26 made its text transformer batch-first: code written for 2.24 hands nn.MultiheadAttention
    a sequence-first batch, and CLIP's 77x77 mask meets a 'sequence' of batch length. Any other 2D mask mismatch is
    not this."""
    code, out, _ = cli("why", "--no-here", "--format", "json",
                       "RuntimeError: The shape of the 2D attn_mask is torch.Size([77, 77]), but should be (25, 25).")
    cause = json.loads(out)["cause"]
    assert cause["id"] == "OPEN-CLIP-BATCH-FIRST-TEXT-MASK" and cause["topics"] == ["version-mismatch"]
    assert cause["fixes"][0].startswith("pin open-clip-torch==2.24.0")
    _, out, _ = cli("why", "--no-here", "--format", "json",
                    "RuntimeError: The shape of the 2D attn_mask is torch.Size([64, 64]), but should be (32, 32).")
    assert (json.loads(out)["cause"] or {}).get("id") != "OPEN-CLIP-BATCH-FIRST-TEXT-MASK"


def test_advice_in_a_clause_that_starts_with_make_sure_to_is_the_messages_own(cli):
    """transformers: "..., for a more memory efficient implementation make sure to upgrade flash-attn library.": the
    message says what to do mid-sentence."""
    code, out, _ = cli("why", "--no-here", "--format", "json",
                       "ValueError: The current flash attention version does not support sliding window attention, for "
                       "a more memory efficient implementation make sure to upgrade flash-attn library.")
    assert json.loads(out)["cause"]["fixes"][0] == "as the message says: make sure to upgrade flash-attn library."


def test_s_aux_is_the_attention_sinks_argument(cli):
    """transformers passes attention-sink logits as s_aux; a kernel that does not take it refuses the sinks."""
    _, out, _ = cli("why", "--no-here", "--format", "json",
                    "TypeError: flash_attn_varlen_func() got an unexpected keyword argument 's_aux'")
    assert "sinks" in json.loads(out)["cause"]["topics"]


def cause_of(cli, text: str, *flags: str) -> dict:
    code, out, err = cli("why", "--no-here", "--format", "json", *flags, "--", text)
    assert code in (0, 1), err
    return json.loads(out)["cause"]


def test_flash_attn_28_triton_ops_on_torch_25_are_fixed_by_torch_26_or_flash_attn_274(cli):
    """Dao-AILab/flash-attention#2037: the generic module-attribute entry matches too; the specific one says why."""
    cause = cause_of(cli, "AttributeError: module 'torch.library' has no attribute 'wrap_triton'")
    assert cause["id"] == "FA-TRITON-OPS-NEED-TORCH-26"
    assert "upgrade torch to 2.6" in cause["fixes"][0] and "2.7.4.post1" in cause["fixes"][0]


def test_another_torch_module_attribute_is_a_release_mismatch_of_torch(cli):
    cause = cause_of(cli, "AttributeError: module 'torch' has no attribute 'float8_e4m3fn'")
    assert cause["id"] == "PY-MODULE-NO-ATTRIBUTE-ATTENTION" and "version-mismatch" in cause["topics"]
    assert cause["fixes"][0].startswith("install the torch release the code was written for")


def test_onnx_export_of_sdpa_is_fixed_by_torch_21_and_opset_14(cli):
    """pytorch/pytorch#106612 (torch 2.0, opset 17)."""
    cause = cause_of(cli, "torch.onnx.errors.UnsupportedOperatorError: Exporting the operator "
                          "'aten::scaled_dot_product_attention' to ONNX opset version 17 is not supported.")
    assert cause["id"] == "ONNX-EXPORT-SDPA-OPSET" and "opset_version=14" in cause["fixes"][0]


def test_an_error_in_its_own_words_is_fixed_in_the_package_whose_frame_raised_it(cli):
    text = ('Traceback (most recent call last):\n  File "/home/u/train.py", line 3, in <module>\n    run()\n'
            '  File "/opt/venv/lib/python3.10/site-packages/somekernels/attn.py", line 40, in run\n'
            '    raise RuntimeError(msg)\n'
            'RuntimeError: this build supports only head_dim=128, got 64')
    assert "what somekernels accepts" in cause_of(cli, text)["fixes"][-1]
    bare = cause_of(cli, text.splitlines()[-1])
    assert "the library that printed it" in bare["fixes"][-1]


def test_compute_capabilities_in_the_plural_are_about_the_gpu(cli):
    cause = cause_of(cli, "NotImplementedError: this model is only allowed on devices with the following compute "
                          "capabilities: [90, 100], got 80.")
    assert cause["topics"][0] == "gpu-arch"


def test_transformer_engine_without_pytorch_is_a_broken_install_whose_hidden_error_is_shown(cli):
    """TransformerEngine's __init__ swallows the ImportError of its pytorch part (transformer_engine/__init__.py)."""
    cause = cause_of(cli, "AttributeError: module 'transformer_engine' has no attribute 'pytorch'")
    assert cause["id"] == "TE-PYTORCH-SUBMODULE-NOT-IMPORTED" and cause["topics"] == ["install-abi"]
    assert 'python -c "import transformer_engine.pytorch"' in cause["fixes"][0]
    other = cause_of(cli, "AttributeError: module 'transformer_engine' has no attribute 'jax'")
    assert other["id"] == "PY-MODULE-NO-ATTRIBUTE-ATTENTION"


def test_torch_113s_split_cuda_library_missing_is_an_extension_built_for_another_torch(cli):
    """The loader names torch's library, but the package to reinstall is the extension that asked for it."""
    text = ('  File "/opt/conda/lib/python3.8/site-packages/flash_attn/ops/layer_norm.py", line 7, in <module>\n'
            "    import dropout_layer_norm\n"
            "ImportError: libtorch_cuda_cu.so: cannot open shared object file: No such file or directory")
    cause = cause_of(cli, text)
    assert cause["id"] == "LOADER-TORCH-SPLIT-CUDA-LIBRARY-MISSING" and cause["topics"] == ["install-abi"]
    assert cause["fixes"][0].startswith("reinstall the extension that failed to load")
    assert not cause["fixes"][0].startswith("reinstall torch")


def test_the_advice_of_a_message_cut_before_it_is_offered_from_its_whole_wording(cli):
    code, out, _ = cli("why", "--no-here", "--format", "json", "--",
                       "RuntimeError: Buffer overflow when allocating memory for batch_prefill_tmp_v")
    assert json.loads(out)["cause"]["fixes"][0] == "the whole message goes on: Increase the workspace buffer size."
    code, out, _ = cli("why", "--no-here", "--format", "json", "--",
                       "RuntimeError: Buffer overflow when allocating memory for batch_prefill_tmp_v with size 100 and "
                       "alignment 16, but only 8 bytes available in AlignedAllocator.\nIncrease the workspace buffer size.")
    fixes = json.loads(out)["cause"]["fixes"]
    assert fixes[0] == "as the message says: Increase the workspace buffer size."
    assert not any(f.startswith("the whole message goes on") for f in fixes)


def test_the_advice_of_a_cut_message_keeps_its_literal_braces(cli):
    code, out, _ = cli("why", "--no-here", "--format", "json", "--",
                       "RuntimeError: Rmsnorm without scale: X has more than one non-unit dimension after the first, so "
                       "the normalization axes are ambiguous.")
    fixes = json.loads(out)["cause"]["fixes"]
    assert any("reshape X to {rows, hidden, 1, 1}, or (training) set the INV_VARIANCE dims" in f for f in fixes), fixes


def test_no_kernel_image_raised_in_a_packages_frame_names_that_package_to_rebuild(cli):
    """The kernel without this GPU's code is the package whose frame raised it (here a SageAttention build without
    this GPU's sm), not flash-attn, which the message's entry names for a traceback that shows no package."""
    text = ('  File "C:\\ComfyUI\\python_embeded\\Lib\\site-packages\\sageattention\\core.py", line 722, in '
            "sageattn_qk_int8_pv_fp8_cuda\n    o = torch.empty(q.size(), dtype=dtype, device=q.device)\n"
            "RuntimeError: CUDA error: no kernel image is available for execution on the device")
    code, out, err = cli("why", "--no-here", "--format", "json", "--", text)
    doc = json.loads(out)
    assert doc["cause"]["id"] == "CUDA-NO-KERNEL-IMAGE"
    assert doc["cause"]["fixes"][0].startswith("reinstall sageattention built for this GPU's architecture")


def test_no_kernel_image_in_the_programs_own_frame_names_no_package(cli):
    text = ('  File "/home/me/train.py", line 12, in <module>\n    y = model(x)\n'
            "RuntimeError: CUDA error: no kernel image is available for execution on the device")
    code, out, err = cli("why", "--no-here", "--format", "json", "--", text)
    assert not json.loads(out)["cause"]["fixes"][0].startswith("reinstall ")


def test_an_asserted_switch_of_a_frameworks_config_is_turned_on(cli):
    """megatron/legacy/model/transformer.py@core_v0.15.0 asserts config.attention_softmax_in_fp32 with "TransformerEngine
    only supports softmax compute in FP32.": the fix sets that switch (Megatron's --attention-softmax-in-fp32)."""
    code, out, err = cli("why", "--no-here", "--format", "json", "--",
                         "AssertionError: TransformerEngine only supports softmax compute in FP32.")
    fixes = json.loads(out)["cause"]["fixes"]
    assert fixes[0].startswith("set attention_softmax_in_fp32=True") and "--attention-softmax-in-fp32" in fixes[0]


def test_torch_missing_while_pip_builds_a_package_offers_turning_build_isolation_off(cli):
    """Dao-AILab/flash-attention README.md@v2.8.3:82: flash-attn's setup.py imports torch, which pip's isolated build
    environment lacks even where torch is installed."""
    text = ("Getting requirements to build wheel ... error\nerror: subprocess-exited-with-error\n"
            "ModuleNotFoundError: No module named 'torch'")
    code, out, err = cli("why", "--no-here", "--format", "json", "--", text)
    fixes = json.loads(out)["cause"]["fixes"]
    assert any("--no-build-isolation" in f and "pip install torch --no-build-isolation" not in f for f in fixes)


COMFYUI_15135 = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 45.64 GiB.\n  ...\n"
                 "  comfy/text_encoders/llama.py   self_attn -> optimized_attention(..., mask=attention_mask, "
                 "enable_gqa=True)\n  comfy/ldm/modules/attention.py attention_pytorch\n"
                 "  comfy/ops.py                   scaled_dot_product_attention(..., attn_mask=mask, enable_gqa=True)")
"""Comfy-Org/ComfyUI#15135 (the corpus's tuning half): a masked grouped-query SDPA call that no fused kernel takes."""


def test_an_out_of_memory_in_sdpa_is_not_answered_by_turning_a_fused_kernel_off():
    """Keeping flash or memory-efficient attention out of the call only sends it to the math path, which holds the
    whole score matrix; the way out is a call a fused kernel takes."""
    from test_why import answer

    fixes = answer(COMFYUI_15135).cause.fixes
    assert not any(f.startswith(("disable SDPA's flash", "disable SDPA's memory-efficient")) for f in fixes), fixes
    assert any("repeat_interleave" in f and "enable_gqa" in f for f in fixes), fixes


def test_a_missing_submodule_is_another_release_unless_the_package_imports_it_itself(cli):
    """Python names the whole dotted module only when its package imported: the program's code asking transformers
    for a module its release lacks is a release mismatch; vllm's own file asking for one is an incomplete install."""
    program = ('  File "/home/u/repo/modeling.py", line 5, in <module>\n'
               "    from transformers.modeling_flash_attention_utils import _flash_attention_forward\n"
               "ModuleNotFoundError: No module named 'transformers.modeling_flash_attention_utils'")
    cause = cause_of(cli, program)
    assert cause["id"] == "PY-NO-MODULE-SUBMODULE" and cause["topics"] == ["version-mismatch"]
    assert "upgrade transformers" in cause["fixes"][0]
    itself = ('  File "/usr/local/lib/python3.12/dist-packages/vllm/attention/backends/flash_attn.py", line 30, in <module>\n'
              "    from vllm.vllm_flash_attn.fa_utils import flash_attn_supports_fp8\n"
              "ModuleNotFoundError: No module named 'vllm.vllm_flash_attn.fa_utils'")
    cause = cause_of(cli, itself)
    assert cause["topics"] == ["install-missing"] and cause["fixes"][0].startswith("reinstall vllm cleanly")
    assert "vllm.vllm_flash_attn.fa_utils" in cause["cause"]


def test_a_message_that_calls_a_package_too_old_is_fixed_by_upgrading_that_package(cli):
    """"{package} is not new enough", "{package} version is too old": the installed release of the package the message
    names is below what the code needs. A GPU called too old (xformers' "(too old)" after a capability) is no package."""
    for text, package in (("RuntimeError: xformers is not new enough to apply the memory efficient patch.", "xformers"),
                          ("ImportError: flash_attn version is too old for varlen with paged KV.", "flash_attn")):
        code, out, err = cli("why", "--no-here", "--format", "json", "--", text)
        doc = json.loads(out)
        assert "version-mismatch" in doc["cause"]["topics"], text
        assert doc["cause"]["fixes"][0].startswith(f"upgrade {package}"), doc["cause"]["fixes"]
    from attndoctor.why.fixes import OLD_RELEASE

    assert not OLD_RELEASE.search("requires device with capability > (8, 0) but your GPU has capability (7, 5) (too old)")


def test_a_hub_kernel_without_a_build_for_this_machine_is_fixed_by_a_release_it_has_or_another_attention(cli):
    """huggingface/kernels (kernels/utils.py@wheel:kernels-0.8.2, kernels/variants.py@wheel:kernels-0.17.2): a kernel
    repository's builds are named by torch, C++ ABI, CUDA and platform; none fits this machine."""
    for text in ("FileNotFoundError: Kernel at path `/root/.cache/huggingface/hub/models--kernels-community--flash-attn/"
                 "snapshots/abc` does not have build: torch27-cxx11-cu118-x86_64-linux",
                 "torch211-cxx11-cu126-x86_64-linux: Torch version (2.11) does not match environment Torch version (2.13)"):
        code, out, err = cli("why", "--no-here", "--format", "json", "--", text)
        cause = json.loads(out)["cause"]
        assert cause["id"].startswith("KERNELS-") and cause["topics"][0] in ("install-arch", "version-mismatch"), text
        assert cause["fixes"][0].startswith("the hub kernel the program loads"), cause["fixes"]


def test_a_mask_passed_with_is_causal_is_fixed_by_passing_one_of_the_two(cli):
    """SDPA's math kernel builds the causal mask itself when is_causal=True and refuses one given beside it
    (aten/src/ATen/native/transformers/attention.cpp _scaled_dot_product_attention_math): the fix is the call's
    arguments, not another kernel."""
    code, out, err = cli("why", "--no-here", "--format", "json", "--",
                         "RuntimeError: _scaled_dot_product_attention: Explicit attn_mask should not be set when "
                         "is_causal=True")
    assert code in (0, 1), err
    cause = json.loads(out)["cause"]
    assert cause["topics"] == ["mask"] and cause["backends"] == ["sdpa-math"]
    assert "is_causal=False" in cause["fixes"][0] and "drop attn_mask" in cause["fixes"][0]
    assert not any("enable_flash_sdp" in f for f in cause["fixes"])
