"""`attndoctor why`: real error texts from public issues are diagnosed to the cause their thread found."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attndoctor.environment import Environment
from attndoctor.errors import RuleError
from attndoctor.why.catalogue import load_catalogue
from attndoctor.why.service import explain_text

FIXTURES = Path(__file__).parent / "fixtures" / "why"

# (source, text, what-if flags, expected cause id (prefix), a word of the fix the thread names or None)
CORPUS = [
    ("pytorch/pytorch#196678",
     "[SDPA] cuDNN backward returns NaN grad_q for seq_len % 128 == 64 with attn_mask on H100/H200 (regression since "
     "2.11, default backend)\n`scaled_dot_product_attention` with the cuDNN backend returns NaN in `grad_q` (forward, "
     "`grad_k`, `grad_v` are fine) when all three hold:\n1. an explicit `attn_mask` is passed (boolean or float, an "
     "all-True mask triggers it too),\n2. `seq_len % 128 == 64` (fails at 64, 192, 320, ..., 704, 832, 1088, 2112; "
     "clean at multiples of 128 and at every other remainder tested),\n3. a query row's logsumexp is below about "
     "-88.7 = ln(FLT_MAX).\nL, D = 704, 64  # fails for every L % 128 == 64; 640 and 768 are clean\n",
     {}, "ADV-CUDNN-SM90-BWD-KV64-LSE-NAN", "is_causal=True"),
    ("NVIDIA/TransformerEngine#1591",
     "How to debug `tex.fused_attn_bwd` getting `cuDNN Error: [cudnn_frontend] Error: No execution plans support "
     "the graph`\nTE 2.3, cuDNN 9.1, head_dim_qk 192, head_dim_v 128, training on H100\n",
     {}, "TE-FUSED-HD256-BWD-HOPPER-RUNTIME", "9.5"),
    ("NVIDIA/TransformerEngine#1414 (title and traceback; the last line as the rule records it from the thread)",
     "bug in flash attn backward with context parallel\nwhen I test llama2 with context parallel, I met the following "
     "error:\n  File \"/code/Megatron/Megatron-LM/megatron/core/pipeline_parallel/schedules.py\", line 150, in "
     "custom_backward\n    Variable._execution_engine.run_backward(\nTypeError: _flash_attn_varlen_backward() missing "
     "1 required positional argument: 'softcap'\n",
     {}, ("TE-FLASH-CP-FA26-SOFTCAP", "TE-FLASH-CP-FA-ABOVE-PIN-13-16"), "TransformerEngine"),
    ("feifeibear/long-context-attention#64",
     "The following error occurs when using flash_attn==2.6.1:\n[rank1]:   File \".../lib/python3.10/site-packages/"
     "yunchang/ring/ring_flash_attn.py\", line 33, in ring_flash_attn_forward\n[rank1]:     block_out, _, _, _, _, "
     "block_lse, _, _ = _flash_attn_forward(\n[rank1]: TypeError: _flash_attn_forward() missing 1 required "
     "positional argument: 'softcap'\n",
     {}, "FA-MISSING-POSITIONAL", "2.5.9.post1"),
    ("xdit-project/xDiT#217",
     "TypeError: _flash_attn_forward() missing 1 required positional argument: 'softcap'\n",
     {}, "FA-MISSING-POSITIONAL", "2.5.9.post1"),
    ("Dao-AILab/flash-attention#931",
     "flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi\ntorch: 2.2.0\n"
     "flash-attn: 2.5.8\n",
     {}, "FA-UNDEFINED-SYMBOL", "build it here"),
    ("microsoft/MInference#51",
     "env:\nflash-attn==2.6.0.post1\nGPU：Tesla V100S\n  File \"/opt/huawei/python/3.10.12/lib/python3.10/site-packages/"
     "flash_attn/flash_attn_interface.py\", line 51, in _flash_attn_forward\n    out, q, k, v, out_padded, "
     "softmax_lse, S_dmask, rng_state = flash_attn_cuda.fwd(\nRuntimeError: FlashAttention only supports Ampere GPUs "
     "or newer.\n",
     {}, "FA2-ARCH-PRE-AMPERE", None),
    ("rmihaylov/falcontune#11",
     "In V100, we need enable the mem_efficient mode, it doesn't support native flash attention.\n            with "
     "torch.backends.cuda.sdp_kernel(enable_flash=True, enable_math=False, enable_mem_efficient=False):\n"
     "RuntimeError: No available kernel. Aborting execution.\n",
     {"torch": "2.0.1"}, "SDPA-FLASH-ARCH-PRE27", None),
    ("lucidrains/x-transformers#143",
     "UserWarning: Memory efficient kernel not used because: (Triggered internally at ../aten/src/ATen/native/"
     "transformers/cuda/sdp_utils.h:545.)\nUserWarning: Memory Efficient attention has been runtime disabled. "
     "(Triggered internally at ../aten/src/ATen/native/transformers/cuda/sdp_utils.h:338.)\nUserWarning: Flash "
     "attention kernel not used because: (Triggered internally at ../aten/src/ATen/native/transformers/cuda/"
     "sdp_utils.h:547.)\nUserWarning: Both fused kernels do not support non-null attn_mask. (Triggered internally at "
     "../aten/src/ATen/native/transformers/cuda/sdp_utils.h:191.)\nRuntimeError: No available kernel. Aborting "
     "execution.\n",
     {}, "SDPA-FLASH-ATTN-MASK", None),
    ("ostris/ai-toolkit#475",
     "5090 flash-attn error : no kernel image is available for execution on the device\nflash-attn version: "
     "flash-attn-2.8.3\nerror:\nCUDA error (/build/source/flash-attn/flash_fwd_launch_template.h:184): no kernel "
     "image is available for execution on the device\n",
     {}, "CUDA-NO-KERNEL-IMAGE", "build"),
    ("Dao-AILab/flash-attention#853 (taka-nscc's comment; a cxx11abiFALSE wheel fixed it in the thread)",
     "ImportError: /XXXXX/lib/python3.11/site-packages/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so: undefined "
     "symbol: _ZN3c104cuda9SetDeviceEi\n- PyTorch: 2.3.1+cu121\n- CUDA: 12.2\n- flash-attn: 2.5.9.post1\n",
     {}, "FA-UNDEFINED-SYMBOL", "cxx11abi"),
    ("Dao-AILab/flash-attention#1832",
     "python 3.12.7+gc\ncuda 12.8\ntorch 2.6.0\nflash-attn 2.6.3\nimport flash_attn_2_cuda as flash_attn_cuda\n"
     "ImportError: /opt/lib/python3.12/site-packages/flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so: undefined "
     "symbol: _ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE\n",
     {}, "FA-UNDEFINED-SYMBOL", "build it here"),
    ("lucidrains/MEGABYTE-pytorch#6",
     ".../MEGABYTE_pytorch/attend.py\", line 111, in flash_attn\n    out = F.scaled_dot_product_attention(\n"
     "RuntimeError: No available kernel.  Aborting execution.\n",
     {}, "SDPA-", None),
]


# Texts the ranking was NOT tuned on (CORPUS above is also the tuning set): reported apart, not asserted.
HELD_OUT = [
    ("OpenGVLab/InternVL#467 (the path as the issue's markdown mangled it)",
     "/home/ubuntu/miniconda3/envs/llm/lib/python3.9/site-packages/[flash_attn_2_cuda.cpython-39-x86_64-linux-gnu.so]"
     "(http://flash_attn_2_cuda.cpython-39-x86_64-linux-gnu.so/): undefined symbol: _ZN2at4_ops9_pad_enum4callERKNS_"
     "6TensorEN3c108ArrayRefINS5_6SymIntEEElNS5_8optionalIdEE\n",
     {}, "FA-UNDEFINED-SYMBOL", None),
    ("vllm-project/vllm#8189 (a pre-Ampere GPU under vLLM; the text names no GPU)",
     "ERROR 01-11 13:09:40 engine.py:366] RuntimeError: Error in model execution (input dumped to /tmp/err_execute_"
     "model_input_20250111-130939.pkl): FlashAttention only supports Ampere GPUs or newer.\n",
     {}, "FA2-ARCH-PRE-AMPERE", None),
]


def answer(text: str, **flags):
    return explain_text(text, base_env=Environment(source="what-if"), env_flags=flags)


def diagnosed(source, text, flags, expected, fix_word) -> bool:
    got = answer(text, **flags)
    cause = got.cause
    if cause is None or not cause.id.startswith(expected):
        return False
    if isinstance(expected, tuple) and cause.id in expected:
        # several rules the message can come from fit the facts given: the answer says which fact tells them apart
        return bool(got.settle) and any(a.id in expected for a in got.alternatives)
    return fix_word is None or any(fix_word in f for f in cause.fixes)


def test_the_corpus_score_is_reported_and_holds():
    results = [(c[0], diagnosed(*c)) for c in CORPUS]
    score = sum(ok for _, ok in results) / len(results)
    print(f"\nwhy corpus: {sum(ok for _, ok in results)}/{len(results)} diagnosed ({score:.0%})")
    for source, ok in results:
        print(f"  {'ok  ' if ok else 'MISS'} {source}")
    held = [(c[0], diagnosed(*c)) for c in HELD_OUT]
    print(f"held out (not tuned on): {sum(ok for _, ok in held)}/{len(held)}")
    for source, ok in held:
        print(f"  {'ok  ' if ok else 'MISS'} {source}")
    assert score >= 0.8, [s for s, ok in results if not ok]


@pytest.mark.parametrize("case", CORPUS[:6], ids=[c[0].split()[0] for c in CORPUS[:6]])
def test_the_required_cases_are_diagnosed(case):
    assert diagnosed(*case)


def test_196678_names_the_advisory_its_workaround_and_the_fact_that_settles_it():
    got = answer("NaN in grad_q with the cuDNN backend, seq len 704, a mask, on H100")
    assert got.cause.id == "ADV-CUDNN-SM90-BWD-KV64-LSE-NAN"
    assert any(f.startswith("workaround: pass is_causal=True") for f in got.cause.fixes)
    assert "--cudnn" in got.settle
    settled = answer("NaN in grad_q with the cuDNN backend, seq len 704, a mask", gpu="H100", cudnn="9.19.0",
                     torch="2.11.0")
    assert settled.cause.id == "ADV-CUDNN-SM90-BWD-KV64-LSE-NAN" and settled.cause.applies is True
    assert "--cudnn" not in settled.settle
    clean = answer("NaN in grad_q with the cuDNN backend, seq len 704, a mask", gpu="H100", cudnn="9.26.0",
                   torch="2.11.0")
    assert clean.candidates[0].id != "ADV-CUDNN-SM90-BWD-KV64-LSE-NAN" or clean.candidates[0].applies is False


def test_a_te_debug_log_gives_the_whole_config_and_explains_te_choice():
    got = answer((FIXTURES / "te1591_debug.log").read_text())
    c = got.config
    assert (c.hdim, c.hdim_v, c.heads, c.kv_heads, c.seqlen_q, c.dtype, c.mask, c.train, c.layout, c.batch) == \
        (192, 128, 16, 16, 1024, "fp16", "causal", True, "sbhd_sbhd_sbhd", 2)
    env = got.environment
    assert (env.sm, env.versions["te"], env.versions["cudnn"], env.versions["flash_attn"]) == (90, "2.4.0", "9.5.0",
                                                                                               "2.7.3")
    assert env.env_vars == {"NVTE_FLASH_ATTN": "0"}
    assert got.cause.id == "TE-FLASH-ENV-OFF"
    assert got.te["predicted"] == "te-fused"
    assert "TE-FLASH-ENV-OFF" in got.te["backends"]["te-flash"]["rules"]
    assert got.te["backends"]["te-flash"]["log_disabled"] == ["Disabling FlashAttention 2 due to NVTE_FLASH_ATTN=0"]


def test_a_te_log_with_its_selection_is_compared_with_the_prediction():
    got = answer((FIXTURES / "te_fl61_debug.log").read_text(), gpu="H100")
    assert got.te["log_selected"] == "te-flash"
    assert got.te["backends"]["te-fused"]["log_available"] is False
    assert got.environment.env_vars == {"NVTE_FUSED_ATTN": "0", "NVTE_UNFUSED_ATTN": "0"}
    assert got.te["predicted"] in ("te-flash", None)
    assert got.te["agrees"] in (True, None)


def test_flags_beat_the_text():
    text = "No execution plans support the graph (in tex.fused_attn_bwd) TE 2.3 cuDNN 9.1 head dim 192 train H100"
    assert answer(text).cause.id == "TE-FUSED-HD256-BWD-HOPPER-RUNTIME"
    fixed = answer(text, cudnn="9.5.0")
    assert fixed.environment.versions["cudnn"] == "9.5.0"
    assert fixed.cause is None or fixed.cause.id != "TE-FUSED-HD256-BWD-HOPPER-RUNTIME"


def test_install_findings_join_the_candidates():
    finding = {"id": "INSTALL-NO-SM120", "kind": "arch", "severity": "error",
               "title": "flash-attn 2.7.4 carries no sm120 kernels",
               "message": "flash-attn 2.7.4 carries no sm120 kernels: 'no kernel image' on RTX 5090",
               "fix": "pip install a flash-attn wheel built with sm120"}
    got = explain_text("CUDA error: no kernel image is available for execution on the device",
                       base_env=Environment(source="what-if"), install_findings=[finding])
    assert got.candidates[0].id == "INSTALL-NO-SM120" and got.candidates[0].kind == "install"


def test_cli_text_json_and_exit_codes(cli, tmp_path):
    code, out, err = cli("why", "--no-here", "TypeError: _flash_attn_forward() missing 1 required positional "
                         "argument: 'softcap'")
    assert code == 0 and "likely cause" in out and "FA-MISSING-POSITIONAL" in out
    code, out, _ = cli("why", "--no-here", "the weather is fine")
    assert code == 1 and "no rule or known message explains" in out
    log = tmp_path / "train.log"
    log.write_text((FIXTURES / "te1591_debug.log").read_text())
    code, out, _ = cli("why", "--no-here", "--log", str(log), "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["command"] == "why" and doc["schema_version"] == 1
    assert doc["cause"]["id"] == "TE-FLASH-ENV-OFF" and doc["transformer_engine"]["predicted"] == "te-fused"
    assert doc["understood"]["facts"]["hdim"]["value"] == 192


@pytest.mark.parametrize("args, words", [
    (("why", "--no-here", "--log", "/no/such/file"), ["--log", "no such log file"]),
    (("why", "--no-here", "x", "--log", "f"), ["not both"]),
    (("why", "--no-here", "   "), ["empty"]),
    (("why", "--no-here", "x", "--format", "sarif"), ["--format", "text, json"]),
])
def test_bad_input_is_one_line_and_exit_2(cli, args, words):
    code, out, err = cli(*args)
    assert code == 2 and out == "" and err.count("\n") == 1 and all(w in err for w in words), err


def test_stdin_is_read(cli, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("RuntimeError: FlashAttention only supports Ampere GPUs or newer."))
    code, out, _ = cli("why", "--no-here", "-", "--gpu", "V100")
    assert code == 0 and "FA2-ARCH-PRE-AMPERE" in out


def test_a_bad_catalogue_entry_names_file_id_and_line(tmp_path):
    bad = tmp_path / "errors.toml"
    bad.write_text('[[error]]\nid = "X-BAD"\nlibrary = "pytorch"\npattern = "(unclosed"\nsource = ["x"]\n'
                   'meaning = "m"\n')
    with pytest.raises(RuleError, match=r"errors.toml:line 2: rule X-BAD: 'pattern' does not compile"):
        load_catalogue(str(bad))
    bad.write_text('[[error]]\nid = "X-BAD"\nlibrary = "pytorch"\npattern = "a(?P<v>b)"\nsource = ["x"]\n'
                   'meaning = "m"\nfacts = { w = "hdim" }\n')
    load_catalogue.cache_clear()
    with pytest.raises(RuleError, match=r"no group \(\?P<w>"):
        load_catalogue(str(bad))
    bad.write_text('[[error]]\nid = "X-BAD"\nlibrary = "pytorch"\npattern = "ab"\nsource = ["x"]\n'
                   'meaning = "m"\nsummary = "yes"\n')
    load_catalogue.cache_clear()
    with pytest.raises(RuleError, match=r"'summary' must be true or false"):
        load_catalogue(str(bad))


def test_every_catalogue_entry_matches_its_own_example_of_real_text():
    entries = {e.id: e for e in load_catalogue()}
    for source, text, *_ in CORPUS:
        assert any(e.pattern.search(text) for e in entries.values() if e.kind != "fact"), source


def test_rules_list_greps_title_message_and_symptom(cli):
    code, out, _ = cli("rules", "list", "--grep", "NO EXECUTION PLANS support", "--format", "json")
    ids = {r["id"] for r in json.loads(out)}
    assert code == 0 and "TE-FUSED-HD256-BWD-HOPPER-RUNTIME" in ids
    assert all("no execution plans support" in f"{r['title']} {r['message']} {r['symptom']}".lower()
               for r in json.loads(out))
    code, out, _ = cli("rules", "list", "--grep", "NaN", "--effect", "wrong-results", "--format", "json")
    assert code == 0 and "ADV-CUDNN-SM90-BWD-KV64-LSE-NAN" in {r["id"] for r in json.loads(out)}
    assert all(r["effect"] == "wrong-results" for r in json.loads(out))


def test_the_json_matches_the_published_schema(cli):
    from importlib import resources

    import jsonschema
    from referencing import Registry, Resource

    from test_json_schema import closed

    def load(name):
        return json.loads((resources.files("attndoctor") / "schema" / name).read_text(encoding="utf-8"))

    report, why_schema = closed(load("report-v1.json")), closed(load("why-v1.json"))
    registry = Registry().with_resource(report["$id"], Resource.from_contents(report))
    validator = jsonschema.Draft202012Validator(why_schema, registry=registry)
    jsonschema.Draft202012Validator.check_schema(why_schema)
    for text in ((FIXTURES / "te1591_debug.log").read_text(), "the weather is fine",
                 "RuntimeError: this build supports only head_dim=128, got 64"):  # a cause of kind words
        code, out, _ = cli("why", "--no-here", text, "--format", "json")
        errors = [f"{e.json_path}: {e.message[:200]}" for e in validator.iter_errors(json.loads(out))]
        assert not errors


def test_a_text_about_another_machine_is_not_judged_with_this_machines_facts():
    # This machine: no GPU, a CPU-only torch 2.13, no cuDNN. The text: an H100 with torch 2.11. The cuDNN this machine
    # lacks must not rule out the cuDNN advisory the text describes.
    from attndoctor.environment import environment_from_flags

    here = environment_from_flags({"torch": "2.13.0", "cudnn": "none", "te": "none", "flash_attn": "none"})
    here.source, here.no_gpu = "probe", True
    got = explain_text("NaN in grad_q with the cuDNN backend (sdpa), seq len 704, with an attention mask, H100, "
                       "torch 2.11", base_env=here)
    assert got.cause is not None and got.cause.id == "ADV-CUDNN-SM90-BWD-KV64-LSE-NAN"
    assert got.environment.versions.get("cudnn") in (None, "")
    assert any("another machine" in note for note in got.dropped)
    same = explain_text("NaN in grad_q, seq len 704, with an attention mask", base_env=here)
    assert not any("another machine" in note for note in same.dropped)


def test_a_pasted_text_that_starts_with_a_dash_is_told_how_to_pass(cli):
    code, out, err = cli("why", "- WARNING - llamafactory.model.model_utils.attention - Gemma-2 should use flash attention 2")
    assert code == 2 and "goes after --" in err and len(err.strip().splitlines()) == 1
    code, out, err = cli("why", "--no-here", "--format", "json", "--",
                         "- WARNING - llamafactory.model.model_utils.attention - Gemma-2 should use flash attention 2, "
                         "change `flash_attn` to fa2.")
    assert code in (0, 1) and '"llamafactory"' in out


def test_a_header_that_announces_reasons_yields_to_them_and_stands_alone_without_them():
    header = "NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:"
    alone = answer(header)
    assert alone.cause is not None and alone.cause.id == "XFORMERS-NO-OPERATOR-FOUND"
    assert any("xformers.info" in fix for fix in alone.cause.fixes)
    with_reasons = answer(header + "\n     query       : shape=(1, 4096, 8, 40) (torch.float16)\n"
                          "`cutlassF-pt` is not supported because:\n    xFormers wasn't build with CUDA support\n")
    assert with_reasons.cause is not None and with_reasons.cause.id == "XFORMERS-NOT-BUILT-WITH-CUDA"
    assert "XFORMERS-NO-OPERATOR-FOUND" not in {c.id for c in with_reasons.alternatives}


def test_a_tie_between_the_rules_of_one_message_goes_to_the_check_its_words_describe():
    got = answer("RuntimeError: FlashAttention only supports Ampere GPUs or newer.")
    assert got.cause is not None and got.cause.id == "FA2-ARCH-PRE-AMPERE"
    assert "FA2-ARCH-BLACKWELL-PRE-273" in {c.id for c in got.alternatives}
    assert answer("RuntimeError: FlashAttention only supports Ampere GPUs or newer.", gpu="B200",
                  flash_attn="2.6.3").cause.id == "FA2-ARCH-BLACKWELL-PRE-273"


def test_of_libraries_that_print_a_message_word_for_word_one_still_printing_it_wins_the_tie():
    """flash-attn 2's csrc/flash_attn/flash_api.cpp@v2.8.3:154 still prints it; hopper/flash_api.cpp printed it only
    at v2.6.3 (retired from 2.7.4): with no version given, the current release's check is the likelier source."""
    got = answer("RuntimeError: This flash attention build does not support headdim not being a multiple of 32.")
    assert got.cause is not None and got.cause.id == "FLASH-ATTN-6A94AB9F07FD"


def test_a_failed_compiler_command_names_the_build_and_yields_to_the_compilers_own_error():
    """setuptools' 'error: command '.../nvcc' failed with exit code N' only reports that nvcc stopped (a build without
    ninja): alone it is the cause, after the compiler's own error (thu-ml/SageAttention#246) that error is."""
    line = "error: command '/opt/cuda/bin/nvcc' failed with exit code 255"
    alone = answer(line).cause
    assert alone is not None and alone.id == "BUILD-COMPILER-COMMAND-FAILED"
    after = answer('92 errors detected in the compilation of "csrc/qattn/qk_int_sv_f16_cuda_sm80.cu".\n' + line).cause
    assert after is not None and after.id == "NVCC-BUILD-COMPILE-ERROR"


def test_cublas_refusing_a_bfloat16_matmul_is_answered_with_float16():
    """MinerU#1508 (a Tesla M40): SDPA's math path or eager attention in bfloat16 on a GPU whose cuBLAS has no bf16
    matmul."""
    text = ("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmStridedBatchedEx(handle, opa, "
            "opb, (int)m, (int)n, (int)k, (void*)&falpha, a, CUDA_R_16BF, (int)lda, stridea, b, CUDA_R_16BF, (int)ldb, "
            "strideb, (void*)&fbeta, c, CUDA_R_16BF, (int)ldc, stridec, (int)num_batches, compute_type, "
            "CUBLAS_GEMM_DEFAULT_TENSOR_OP)`")
    cause = answer(text).cause
    assert cause is not None and cause.id == "CUBLAS-BF16-NOT-SUPPORTED"
    assert {"dtype", "gpu-arch"} <= set(cause.topics) and "float16" in cause.fixes[0]


def test_tritons_mma_to_mma_assertion_names_the_gpu_and_the_triton_release():
    """ModelTC/LightLLM#222 (a V100, triton 2.1.0): a Triton attention kernel whose two matrix products need a layout
    conversion that Triton 2.0-2.1 cannot lower; on Volta no release lowers it."""
    text = ("python: /project/lib/Analysis/Allocation.cpp:40: std::pair<llvm::SmallVector<unsigned int>, "
            "llvm::SmallVector<unsigned int> > mlir::triton::getCvtOrder(mlir::Attribute, mlir::Attribute): Assertion "
            "`!(srcMmaLayout && dstMmaLayout) && \"Unexpected mma -> mma layout conversion\"' failed.")
    cause = answer(text).cause
    assert cause is not None and cause.id == "TRITON-MMA-TO-MMA-LAYOUT"
    assert "gpu-arch" in cause.topics and any("triton" in f and "2.2" in f for f in cause.fixes)


def test_cutes_no_gmma_assertion_in_a_flashinfer_build_is_the_fp8_kv_cache_on_hopper():
    """flashinfer-ai/flashinfer#1304: FlashInfer's Hopper prefill kernels pair a 16-bit query with an FP8 KV cache in
    one warpgroup MMA, which Hopper has no instruction for; the JIT compile stops on CuTe's static assertion."""
    text = ("/usr/local/lib/python3.12/dist-packages/flashinfer/data/cutlass/include/cute/arch/mma_sm90.hpp(1150): error: "
            "static assertion failed with \"No eligible GMMA operator for request configuration.\"\n"
            "        static_assert(sizeof(ElementA) == 0, \"No eligible GMMA operator for request configuration.\");")
    cause = answer(text).cause
    assert cause is not None and cause.id == "CUTE-SM90-NO-GMMA-FP8-KV"
    assert "fp8" in cause.topics and any("kv-cache-dtype" in f for f in cause.fixes)


def test_tgi_without_its_flash_attention_path_says_the_gpu_or_the_install():
    """huggingface/text-generation-inference#686 (a V100): TGI shards a model only on its flash-attention path, which
    it turned off at start; the warning before it says why."""
    text = ("WARN text_generation_launcher: Could not import Flash Attention enabled models: GPU with CUDA capability 7 0 "
            "is not supported\nNotImplementedError: Sharded Llama requires Flash Attention enabled models.")
    cause = answer(text).cause
    assert cause is not None and cause.id == "TGI-FLASH-ATTENTION-OFF"
    assert {"gpu-arch", "install-missing"} <= set(cause.topics) and "flash-attn-2" in cause.backends


def test_mpsgraphs_matmul_refusing_sdpas_shapes_names_grouped_heads_and_the_layout():
    """pytorch/pytorch#149132: SDPA with enable_gqa=True on Apple's GPU before torch 2.7 hands MPSGraph a matmul of
    unequal head counts."""
    text = ('loc("mps_matmul"("(mpsFileLoc): /AppleInternal/Library/BuildRoots/d187755d-b9a3-11ef-83e5-aabfac210453/'
            'Library/Caches/com.apple.xbs/Sources/MetalPerformanceShadersGraph/mpsgraph/MetalPerformanceShadersGraph/Core/'
            'Files/MPSGraphUtilities.mm":43:0)): error: incompatible dimensions\nLLVM ERROR: Failed to infer result type(s).')
    cause = answer(text).cause
    assert cause is not None and cause.id == "MPS-SDPA-MATMUL-SHAPES"
    assert cause.topics[0] == "gqa" and any("2.7" in f for f in cause.fixes)


def test_ggmls_missing_device_code_names_the_architecture_and_flash_attention_off():
    """mozilla-ai/llamafile#434 and llama.cpp's flash-attention kernels: a ggml kernel with no code for this GPU's
    architecture, in the build or at all."""
    text = ("ggml-cuda/fattn.cu:571: ERROR: CUDA kernel flash_attn_ext_f16 has no device code compatible with CUDA arch "
            "610. ggml-cuda.cu was compiled for: 610\nCUDA error: unspecified launch failure")
    cause = answer(text).cause
    assert cause is not None and cause.id == "GGML-NO-DEVICE-CODE"
    assert {"install-arch", "gpu-arch"} <= set(cause.topics) and any("flash" in f for f in cause.fixes)


def test_llama_cpps_flash_attention_messages_are_read_from_its_source():
    """ollama/ollama#8418 and #15043: what llama.cpp's context logs when flash attention cannot run or is needed;
    the fix turns it off, or on for a quantized V cache."""
    cause = answer("llama_lora_adapter_set: flash_attn is not compatible with LoRA\n"
                   "panic: error applying lora from file").cause
    assert cause is not None and cause.id.startswith("LLAMA-CPP-")
    assert "OLLAMA_FLASH_ATTENTION=0" in cause.fixes[0] and "-fa off" in cause.fixes[0]
    assert any("llama-cpp-python 0.3.8" in f for f in cause.fixes)  # the release whose copy no longer prints it
    cause = answer("llama_init_from_model: V cache quantization requires flash_attn\n"
                   "panic: unable to create llama context").cause
    assert cause is not None and cause.id.startswith("LLAMA-CPP-") and "-fa on" in cause.fixes[0]
    cause = answer("llama_init_from_model: flash_attn is not compatible with Grok - forcing off").cause
    assert cause is not None and cause.fixes[0].startswith("nothing fails here: llama.cpp went on (forcing off)")


def test_ggmls_flash_attention_abort_names_the_head_size_of_its_frame_and_yields_to_the_reason_before_it():
    """ollama/ollama#15403: a bare "fatal error" in fattn-tile.cuh with the kernel's head sizes in the backtrace;
    ggml-org/llama.cpp#14747: the same abort after the message that says why."""
    text = ("/ml/backend/ggml/ggml/src/ggml-cuda/template-instances/../fattn-tile.cuh:1247: fatal error\n"
            "/lib/ollama/libggml-base.so.0(ggml_abort+0x11d)[0x7f7dfc02d03d]\n"
            "/lib/ollama/cuda_v12/libggml-cuda.so(_Z34ggml_cuda_flash_attn_ext_tile_caseILi512ELi512EEvR25ggml_backend_"
            "cuda_contextP11ggml_tensor+0x31a)[0x7f7d757fd3ca]\nSIGABRT: abort")
    found = answer(text)
    assert found.cause is not None and found.cause.id == "GGML-FA-KERNEL-ABORT"
    assert "head-dim" in found.cause.topics and "OLLAMA_FLASH_ATTENTION=0" in found.cause.fixes[0]
    assert found.config.hdim == 512 and found.config.hdim_v == 512
    text = ("Unsupported KV type combination for head_size 576.\nOnly f16 is supported.\n"
            "/home/seg/llama.cpp/ggml/src/ggml-cuda/fattn-common.cuh:690: fatal error")
    assert answer(text).cause.id == "GGML-FA-UNSUPPORTED-KV-TYPE"


def test_cublas_finding_no_memory_for_its_handle_is_out_of_memory():
    """JDAI-CV/fast-reid#625: the first matmul on a GPU whose memory is already full."""
    cause = answer("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`").cause
    assert cause is not None and cause.id == "CUBLAS-HANDLE-ALLOC-FAILED" and "oom" in cause.topics
    assert "nvidia-smi" in cause.fixes[0]
