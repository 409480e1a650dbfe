"""An error no known message and no rule explains is read by its own words: "only head_dim=128 supported" is about
the head dim whoever printed it; an error whose words name no kind of problem stays unexplained."""

from __future__ import annotations

import json

from attndoctor.why.own_words import error_line, shape_topics


def ask(cli, text, *flags):
    code, out, _ = cli("why", "--no-here", "--format", "json", *flags, text)
    return code, json.loads(out)


def test_an_unknown_error_about_the_head_dim_is_a_head_dim_cause(cli):
    code, doc = ask(cli, "RuntimeError: FLASHATTENTION_DIFFUSION_ONLY build: only head_dim=128 supported, got 64")
    cause = doc["cause"]
    assert code == 0 and cause["id"] == "ERROR-OWN-WORDS" and cause["kind"] == "words"
    assert cause["topics"] == ["head-dim"] and cause["lines"] == [1]
    assert "head dim" in cause["fixes"][0] and "only head_dim=128 supported" in cause["fixes"][0]


def test_the_frames_name_the_backend_of_an_unknown_error(cli):
    text = ('  File "/x/site-packages/flash_attn_v100/flash_attn_interface.py", line 16, in _flash_attn_forward\n'
            "    out, softmax_max, softmax_sum = flash_attn_cuda.fwd(\n"
            "RuntimeError: current repo only supports head dimension 128, we will support more in the future")
    _, doc = ask(cli, text)
    assert doc["cause"]["id"] == "ERROR-OWN-WORDS" and doc["cause"]["lines"] == [3]
    assert "flash-attn-2" in doc["cause"]["backends"] and "head-dim" in doc["cause"]["topics"]


def test_a_known_message_or_a_rule_comes_before_the_errors_words(cli):
    _, doc = ask(cli, "RuntimeError: FlashAttention only supports Ampere GPUs or newer.")
    assert doc["cause"]["kind"] != "words"


def test_an_error_whose_words_name_no_kind_stays_unexplained(cli):
    code, doc = ask(cli, "RuntimeError: something went wrong in the worker process, see above")
    assert code == 1 and doc["cause"] is None and doc["verdict"] == "unexplained"


def test_only_an_error_line_speaks_in_a_longer_text():
    log = ["loading model", "INFO: head dim 128, 32 heads", "step 1 done", "step 2 done"]
    assert error_line(log) is None
    assert error_line([*log, "[rank0]: torch._inductor.exc.InductorError: RuntimeError: head_dim must be 64"]) == (
        5, "head_dim must be 64")
    assert error_line(["[TensorRT-LLM][ERROR] Assertion failed: Size per head is not a multiple of X"]) == (
        1, "Size per head is not a multiple of X")
    assert error_line(["!!! Exception during processing !!! head_dim must be 64", "Prompt executed in 1 s"]) == (
        1, "head_dim must be 64")
    assert error_line(["AssertionError: ", "ValueError: x"]) is None


def test_a_log_line_that_complains_about_attention_speaks_where_no_error_is_raised():
    """A log without an exception still says what went wrong in the line that complains about an attention backend:
    "flashinfer not found, use triton", "flash_attn is not compatible with attn_soft_cap - forcing off"."""
    assert error_line(["flashinfer not found, use triton for linux", "using custom modeling_xxx.py."]) == (
        1, "flashinfer not found, use triton for linux")
    log = ["llama_new_context_with_model: **flash_attn is not compatible with attn_soft_cap - forcing off**",
           "llama_new_context_with_model: n_ctx      = 2048", "llama_new_context_with_model: flash_attn = 0",
           "llama_new_context_with_model: freq_base  = 10000.0"]
    assert error_line(log) == (1, "flash_attn is not compatible with attn_soft_cap - forcing off")
    assert error_line(["loading model", "INFO: attention head dim 128, 32 heads", "flash attention enabled",
                       "step 1 done"]) is None


def test_sizes_that_differ_by_a_whole_factor_on_the_heads_axis_are_grouped_query_attention(cli):
    _, doc = ask(cli, "RuntimeError: The size of tensor a (32) must match the size of tensor b (8) at non-singleton "
                      "dimension 1")
    assert doc["cause"]["topics"] == ["gqa"] and "enable_gqa=True" in doc["cause"]["fixes"][0]
    # 194560 elements viewed as (1, 190, 64, 128) hold 8 heads, not 64: K/V of a GQA model viewed with num_heads
    assert shape_topics("shape '[1, 190, 64, 128]' is invalid for input of size 194560") == ("gqa",)


def test_other_size_errors_say_nothing_of_heads():
    assert shape_topics("The size of tensor a (128) must match the size of tensor b (160) at non-singleton "
                        "dimension 3") == ()
    assert shape_topics("The size of tensor a (30) must match the size of tensor b (8) at non-singleton "
                        "dimension 1") == ()
    assert shape_topics("shape '[3, 3, 3, 64]' is invalid for input of size 1152") == ()
    assert shape_topics("shape '[2, 0, 8, 64]' is invalid for input of size 1024") == ()


def test_a_size_error_on_a_code_line_that_reshapes_the_attention_mask_is_about_the_mask(cli):
    lines = ['  File "/opt/conda/lib/python3.10/site-packages/deep_training/nlp/models/qwen/modeling_qwen.py", line 718, '
             'in forward', "    attention_mask = attention_mask.view(batch_size, -1)",
             "RuntimeError: shape '[2, -1]' is invalid for input of size 3969"]
    _, doc = ask(cli, "\n".join(lines))
    assert doc["cause"]["id"] == "ERROR-OWN-WORDS" and doc["cause"]["topics"] == ["mask"]
    assert "reshapes an attention mask: attention_mask = attention_mask.view(batch_size, -1)" in doc["cause"]["reasons"][0]
    # the same error on a line that reshapes something else names no kind of problem
    _, doc = ask(cli, "\n".join([lines[0], "    x = x.view(batch_size, -1)", lines[2]]))
    assert "mask" not in ((doc["cause"] or {}).get("topics") or ())


def test_the_one_attention_package_given_is_the_backend_of_a_cause_that_names_none(cli):
    text = "RuntimeError: CUDA error: device kernel image is invalid"
    _, doc = ask(cli, text, "--flash-attn", "2.8.1", "--torch", "2.7.1")
    assert doc["cause"]["id"] == "CUDA-KERNEL-IMAGE-INVALID" and doc["cause"]["backends"] == ["flash-attn-2"]
    # CUDA, the driver and cuDNN are no attention package of their own: flash-attn stays the one given
    _, doc = ask(cli, text, "--flash-attn", "2.8.1", "--cuda", "12.4", "--driver", "550.54", "--cudnn", "9.1.0")
    assert doc["cause"]["backends"] == ["flash-attn-2"]
    _, doc = ask(cli, text, "--flash-attn", "2.8.1", "--te", "2.4")
    assert doc["cause"]["backends"] == []
    _, doc = ask(cli, text)
    assert doc["cause"]["backends"] == []


def test_calling_an_attention_function_that_is_none_is_a_failed_import(cli):
    text = ('  File "/x/hunyuan_video_packed.py", line 96, in attn_varlen_func\n'
            "    x = sageattn(q, k, v, tensor_layout='NHD')\n"
            "TypeError: 'NoneType' object is not callable")
    _, doc = ask(cli, text)
    assert doc["cause"]["id"] == "ERROR-OWN-WORDS" and doc["cause"]["topics"] == ["install-missing"]
    assert "sageattn" in doc["cause"]["cause"] and "sageattn" in doc["cause"]["fixes"][0]
    # the function called names its backend, as the error's words would
    _, doc = ask(cli, "ERROR 04-30 09:04:59 [worker.py:920]     out = flash_attn_varlen_func(\n"
                      "ERROR 04-30 09:04:59 [worker.py:920] TypeError: 'NoneType' object is not callable")
    assert doc["cause"]["topics"] == ["install-missing"] and doc["cause"]["backends"] == ["flash-attn-2"]
    # a None that is not an attention function says nothing of one
    _, doc = ask(cli, text.replace("sageattn(q, k, v, tensor_layout='NHD')", "callback(step)"))
    assert doc["cause"] is None


def test_a_bare_assertion_of_a_package_being_available_is_a_failed_import(cli):
    text = ('File "/x/wan/modules/attention.py", line 112, in flash_attention\n'
            "[rank0]:     assert FLASH_ATTN_2_AVAILABLE\n[rank0]:            ^^^^^^^^^^^^^^^^^^^^^^\n"
            "[rank0]: AssertionError")
    code, doc = ask(cli, text)
    cause = doc["cause"]
    assert code == 0 and cause["id"] == "ERROR-OWN-WORDS" and cause["lines"] == [4]
    assert cause["topics"] == ["install-missing"] and cause["backends"] == ["flash-attn-2"]
    assert "install flash-attn" in cause["fixes"][0] and "import flash_attn" in cause["fixes"][0]
    # an assertion of something else says what it says, and a bare AssertionError with no statement shown nothing
    assert error_line(["    assert q.shape[-1] == 128", "AssertionError"]) == (2, "assert q.shape[-1] == 128")
    assert ask(cli, "AssertionError")[1]["cause"] is None


def test_a_broken_install_is_fixed_in_the_package_of_the_backend_it_names(cli):
    _, doc = ask(cli, "Unsloth: Your Flash Attention 2 installation seems to be broken. Using Xformers instead. No "
                      "performance changes will be seen.")
    assert doc["cause"]["topics"] == ["install-abi"]
    assert doc["cause"]["fixes"][0].startswith("reinstall flash-attn built for")
    _, doc = ask(cli, "flashinfer not found, use triton for linux")
    assert doc["cause"]["topics"] == ["install-missing"] and doc["cause"]["fixes"][0].startswith("install flashinfer")
    _, doc = ask(cli, "config.json not found, using the defaults")
    assert doc["cause"] is None


def test_a_missing_compiled_extension_names_the_package_it_belongs_to(cli):
    from attndoctor.why.fixes import module_package

    assert module_package({"module": "flash_attn_2_cuda"}) == "flash_attn"
    assert module_package({"module": "selective_scan_cuda"}) == "selective_scan"
    assert module_package({"module": "transformers.modeling_utils"}) == "transformers"
    assert module_package({"module": "_C"}) == "_C"
    _, doc = ask(cli, "ModuleNotFoundError: No module named 'selective_scan_cuda'")
    assert "ships selective_scan's compiled extension" in doc["cause"]["fixes"][0]


def test_a_release_mismatch_offers_to_upgrade_the_package_that_made_the_call(cli):
    from attndoctor.why.fixes import caller_package

    text = ('Traceback (most recent call last):\n'
            '  File "C:\\ComfyUI\\execution.py", line 3, in run\n'
            '  File "C:\\ComfyUI\\custom_nodes\\ComfyUI-KJNodes\\nodes\\model_optimization_nodes.py", line 12, in f\n'
            '  File "C:\\py\\Lib\\site-packages\\sageattention\\core.py", line 9, in sageattn\n'
            "TypeError: sageattn() got an unexpected keyword argument 'tensor_layout'")
    _, doc = ask(cli, text)
    assert "version-mismatch" in doc["cause"]["topics"]
    assert any(f.startswith("or upgrade ComfyUI-KJNodes, whose code made") for f in doc["cause"]["fixes"])
    # the program's own code, or only the called libraries, name no caller to upgrade
    assert caller_package(['  File "/home/u/train.py", line 3, in main',
                           '  File "/x/site-packages/flash_attn/flash_attn_interface.py", line 9, in f']) == ""
    assert caller_package(['[rank0]:   File "/x/site-packages/transformers/modeling_flash_attention_utils.py", line 9',
                           '[rank0]:   File "/x/site-packages/torch/nn/modules/module.py", line 1, in _call_impl']) \
        == "transformers"
    assert caller_package(["RuntimeError: x"]) == ""


def test_transformer_engines_disabling_story_leaves_the_cause_to_its_own_check(cli):
    """The hand-written "Disabling X ..." entry narrates TE's choice; the check behind the words is the cause (here
    the rule that models it, TE-FLASH-HDIM-256, ahead of the index's copy of the check), and the fix is by what the
    message is about first (a head dim, not the architectures it also names)."""
    text = ("DEBUG:DotProductAttention:Disabling FlashAttention 2 due to unsupported head_dim_qk and head_dim_v. "
            "Supported: head_dim_qk = head_dim_v, head_dim_qk %8 = 0, head_dim_qk <= 256 (>192 requires sm80/90/100+). "
            "Found: head_dim_qk = 320, head_dim_v = 320, on sm90.")
    _, doc = ask(cli, text)
    cause = doc["cause"]
    assert cause["id"] == "TE-FLASH-HDIM-256" and cause["topics"][0] == "head-dim"
    assert "te-flash" in cause["backends"] and cause["fixes"][0].startswith("set hdim = 256")


def test_the_folders_of_a_path_in_an_error_are_not_what_it_is_about(cli):
    """'ComfyUI_windows_portable' in a path is not a sliding window."""
    code, doc = ask(cli, "The procedure entry point could not be located in the dynamic link library "
                         "Z:\\AI\\ComfyUI_windows_portable\\python_embeded\\Lib\\site-packages\\xformers\\_C.pyd")
    assert doc["cause"] is None or "window" not in doc["cause"]["topics"]


def test_the_one_attention_an_unknown_errors_words_name_is_its_backend(cli):
    def backends(text):
        return ask(cli, text)[1]["cause"]["backends"]

    assert backends("ValueError: Sequence parallelism requires flash attention. Please set flash_attn: "
                    "flash_attention_2.") == ["flash-attn-2"]
    assert backends("NotImplementedError: Block masks are not implemeted yet, use packed=False.") == ["flex-attention"]
    assert backends("RuntimeError: only head_dim 128 is supported by flash attention 3 here") == ["flash-attn-3"]
    # words that name two attentions name neither
    assert backends("ValueError: this window needs flash attention, sdpa cannot do it") == []


def test_a_compiler_crash_speaks_in_llvm_s_own_forms():
    """Triton's compiler is LLVM: a crash prints "LLVM ERROR: <message>", or the message on the line above
    "UNREACHABLE executed at <file>:<line>!", and aborts; no exception line follows."""
    crash = ["SharedEncodingAttr builder when the MMAEncodingAttr is Hopper has not been implemented yet",
             "UNREACHABLE executed at /project/python/build/include/triton/Dialect/TritonGPU/IR/TritonGPUAttrDefs.cpp.inc:347!",
             "Aborted"]
    assert error_line(["loading", *crash]) == (
        2, "SharedEncodingAttr builder when the MMAEncodingAttr is Hopper has not been implemented yet")
    assert error_line(["loading", "compiling kernel", "LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.shfl.sync.bfly.i32",
                       "Aborted (core dumped)"]) == (3, "Cannot select: intrinsic %llvm.nvvm.shfl.sync.bfly.i32")
    assert error_line(["UNREACHABLE executed at x.cpp:3!", "Aborted (core dumped)", "exit 134"]) is None


def test_a_serving_engine_s_log_prefix_does_not_hide_the_error():
    """vLLM's logger puts "(Worker pid=N) ERROR MM-DD HH:MM:SS [file.py:N]" before each line of a traceback it relays;
    Go programs (Ollama's runner) end in "panic: <message>"."""
    assert error_line(["ERROR 04-30 09:04:59 [diffusion_worker.py:920]     out = attention(q, k, v)",
                       "ERROR 04-30 09:04:59 [diffusion_worker.py:920] TypeError: head_dim 80 is not supported"]) == (
        2, "head_dim 80 is not supported")
    assert error_line(["(VLLM pid=1) (VllmWorkerProcess pid=2) ERROR 07-07 13:43:36 multiproc_worker_utils.py:226] "
                       "RuntimeError: head_dim 80 is not supported", "INFO: shutting down"]) == (
        1, "head_dim 80 is not supported")
    assert error_line(['time=2025-08-29T16:22:00.363+08:00 level=INFO source=server.go:1274 msg="runner started"',
                       "panic: failed to sample token: sample: logits sum to NaN, check model output", "",
                       "goroutine 89 [running]:"]) == (
        2, "failed to sample token: sample: logits sum to NaN, check model output")
