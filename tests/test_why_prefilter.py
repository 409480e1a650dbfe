"""The shortcuts that keep `why --log` fast on a long log give the same answer as the plain scan: the literal
prefilter finds every catalogue match, and the bit-set windows find every symptom's best window."""

from __future__ import annotations

import random
import sys
from pathlib import Path

from attndoctor.why.catalogue import load_catalogue
from attndoctor.why.index import literal_of as index_literal, load_index
from attndoctor.why.literals import required_literals
from attndoctor.why.similarity import Windows
from attndoctor.why.reader import read_text

from test_why import CORPUS, FIXTURES

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))


def plain_hits(text, entries):
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        for entry in entries:
            out.extend((entry.id, number, m.group(0).strip()) for m in entry.pattern.finditer(line))
    return out


def test_the_literal_prefilter_finds_what_every_pattern_on_every_line_finds(tmp_path):
    from why_log import make_log

    entries = load_catalogue()
    log = tmp_path / "train.log"
    make_log(log, 3000)
    texts = [c[1] for c in CORPUS] + [p.read_text() for p in FIXTURES.iterdir()] + [log.read_text()]
    texts.append("\n".join(c[1].upper() for c in CORPUS))  # case: a folded literal still finds (?i) matches
    for text in texts:
        got = [(h.entry.id, h.line, h.text) for h in read_text(text, entries).hits if not h.wrapped]
        assert got == plain_hits(text, entries)
    assert sum(e.literals is not None for e in entries) == len(entries)


def test_a_message_a_wrap_split_is_found_on_the_line_of_its_literal():
    entries = load_catalogue() + load_index()
    text = ("RuntimeError: transformer_engine/common/fused_attn/fused_attn_f16_arbitrary_seqlen.cu:418\n"
            "in function operator(): cuDNN Error: THD (ragged offset) is only supported in Hopper and\n"
            "above : 80.")
    wrapped = [h for h in read_text(text, entries).hits if h.wrapped]
    assert wrapped and all("Hopper and above" in h.text and h.line == 2 for h in wrapped)
    assert not [h for h in read_text(text.replace("and\nabove", "and above"), entries).hits if h.wrapped]


def test_a_wrap_that_indents_its_second_line_still_finds_the_message():
    """A web page's wrap of "undefined symbol" leaves "undefined" and " symbol:" on two lines."""
    entries = load_catalogue() + load_index()
    text = ("flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined\n"
            " symbol: _ZN3c104impl3cow11cow_deleterEPv")
    whole = {h.entry.id for h in read_text(text.replace("undefined\n ", "undefined "), entries).hits}
    assert whole
    assert {h.entry.id for h in read_text(text, entries).hits} >= whole


def test_typographic_quotes_are_read_as_the_quotes_the_library_printed():
    entries = load_catalogue() + load_index()
    text = "Can't import SageAttention: No module named \u2018sageattention\u2019"
    straight = {h.entry.id for h in read_text(text.replace("\u2018", "'").replace("\u2019", "'"), entries).hits}
    assert straight
    assert {h.entry.id for h in read_text(text, entries).hits} == straight


def test_a_paste_that_starts_inside_a_message_still_finds_it():
    """People paste "FA version 3 is not supported due to ..." without the "Cannot use" vLLM's message starts with."""
    entries = load_index()
    vllm = "FA version 3 is not supported due to Cuda compute capability 8.6"
    assert "VLLM" in {h.entry.library.upper() for h in read_text(f"WARNING {vllm}", entries).hits}
    flashinfer = ("Error: Invalid configuration : NUM_MMA_Q=2 NUM_MMA_D_QK=2 NUM_MMA_D_VO=2 NUM_MMA_KV=4 NUM_WARPS_Q=4 "
                  "NUM_WARPS_KV=1 please create an issue (https://github.com/flashinfer-ai/flashinfer/issues) and "
                  "report the issue to the developers.")
    assert "flashinfer" in {h.entry.library for h in read_text(flashinfer, entries).hits}
    # a cut that leaves too few of the message's own words is not looked for: "version 3 is not supported due to"
    # is any library's sentence
    assert "vllm" not in {h.entry.library for h in read_text("version 3 is not supported due to sm86", entries).hits}


def test_a_paste_that_ends_before_a_messages_advice_still_finds_it():
    """Triton's OutOfResources ends with "Reducing block sizes or `num_stages` may help."; logs often stop before it.
    A first sentence whose literal words are each short but say enough together is looked for on its own."""
    entries = load_index()
    cut = "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 65538, Hardware limit: 65536."
    hits = [h for h in read_text(cut, entries).hits if h.entry.library == "triton"]
    assert hits and hits[0].groups.get("required") == "65538"
    # a first sentence with little of the message's own words stays unlooked-for: "Expected {} but got {}."
    assert not [h for h in read_text("Expected 3 but got 4.", entries).hits if h.entry.library == "triton"]


def test_a_message_written_over_lines_is_found_on_the_lines_it_was_printed_on():
    """torch/utils/cpp_extension.py's CUDA_MISMATCH_MESSAGE breaks its sentence over two lines."""
    text = ("RuntimeError:\nThe detected CUDA version (12.1) mismatches the version that was used to compile\n"
            "PyTorch (11.8). Please make sure to use the same CUDA versions.")
    assert "pytorch" in {h.entry.library for h in read_text(text, load_index()).hits}
    literal = index_literal("\nThe detected CUDA version ({v}) mismatches the version that was used to compile\n"
                            "PyTorch ({t}). Please make sure to use the same CUDA versions.\n")
    assert literal in text and "\n" not in literal


def test_a_message_of_several_lines_is_found_by_its_first_line():
    """xformers' validate_inputs prints the bias shape it expected, then the three input shapes on lines of their own
    (facebookresearch/xformers xformers/ops/fmha/common.py@v0.0.23); a paste that reflows or cuts those lines still
    shows the first one. A first line that says little on its own stays unlooked-for."""
    entries = load_index()
    first = "ValueError: Invalid shape for attention bias: torch.Size([14, 10, 10]) (expected (1, 14, 10, 10))"
    for text in (first, first + "\nquery.shape: torch.Size([1, 10, 14, 128])"):
        assert "xformers" in {h.entry.library for h in read_text(text, entries).hits}, text
    hit = next(h for h in read_text(first, entries).hits if h.entry.library == "xformers")
    assert hit.groups["expected_shape"] == "(1, 14, 10, 10)"
    # torch/cuda/__init__.py's capability warning opens with a line break its pattern keeps: one hit, with the values
    warning = ("NVIDIA B200 with CUDA capability sm_100 is not compatible with the current PyTorch installation.\n"
               "The current PyTorch install supports CUDA capabilities sm_80 sm_90.\n")
    hits = [h for h in read_text(warning, entries).hits if h.entry.library == "pytorch"]
    assert [h.groups.get("capability") for h in hits] == ["100"]
    # inductor's "Incorrect result from choice {choice}\n\n{e}" opens with too few words of its own
    assert not read_text("Incorrect result from choice TritonTemplateCaller", entries).hits


def test_required_literals():
    assert required_literals(r"No available kernel\.\s+Aborting") == (("No available kernel.", False),)
    assert required_literals(r"(?i)\bgrad_[qkv]|d[QKV]\b") == tuple(sorted(
        [(f"grad_{c}", True) for c in "qkv"] + [(f"d{c}", True) for c in "qkv"]))
    assert required_literals(r"(?:(?i:transformer)|\bTE)\s*\d") == (("TE", False), ("transformer", True))
    assert required_literals(r"\d+\s*\w") is None
    assert required_literals(r"(?:foo)?bar") == (("bar", False),)


def test_the_bit_set_windows_find_the_best_window():
    rng = random.Random(7)
    vocabulary = [f"w{i}" for i in range(30)]
    for _ in range(200):
        windows = [set(rng.sample(vocabulary, rng.randint(0, 8))) for _ in range(rng.randint(1, 60))]
        weights = {w: rng.choice([0.5, 1.0, 1.7, 2.3]) for w in rng.sample(vocabulary, rng.randint(1, 10))}
        plain = max(sum(weights.get(w, 0.0) for w in window) for window in windows)
        assert abs(Windows.of(windows).best(weights) - plain) < 1e-9


def test_this_rounds_catalogue_entries_where_they_apply_and_where_they_do_not():
    entries = load_catalogue()

    def ids(text):
        return {h.entry.id for h in read_text(text, entries).hits}

    assert "PY-NO-MODULE-ATTENTION-LIBRARY" in ids("ModuleNotFoundError: No module named 'flashinfer'")
    assert "PY-NO-MODULE-ATTENTION-LIBRARY" not in ids("ModuleNotFoundError: No module named 'flash_attn'")
    te = "transformer_engine_torch.cpython-310-x86_64-linux-gnu.so: undefined symbol: _ZN5torch7LibraryC1E"
    fa = "flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi"
    assert "TE-UNDEFINED-SYMBOL" in ids(te) and "FA-UNDEFINED-SYMBOL" not in ids(te)
    assert "FA-UNDEFINED-SYMBOL" in ids(fa) and "TE-UNDEFINED-SYMBOL" not in ids(fa)
    assert "FA-UNDEFINED-SYMBOL" in ids("flash_attn_cuda.cpython-38-x86_64-linux-gnu.so: undefined symbol: _ZN3c104impl8GPU")
    fa_entry = next(e for e in entries if e.id == "FA-UNDEFINED-SYMBOL")
    assert set(fa_entry.backends) == {"flash-attn-2", "flash-attn-3"}
    assert "FACT-TORCH-YOU-HAVE" in ids("    PyTorch 2.6.0+cu124 with CUDA 1204 (you have 2.8.0+cu128)")
    assert "FACT-TORCH-YOU-HAVE" not in ids("PyTorch 2.6.0+cu124 with CUDA 12.4")
    ptx = "RuntimeError: CUDA error: the provided PTX was compiled with an unsupported toolchain."
    assert "CUDA-PTX-UNSUPPORTED-TOOLCHAIN" in ids(ptx)
    assert "CUDA-PTX-UNSUPPORTED-TOOLCHAIN" not in ids("RuntimeError: CUDA error: PTX JIT compiler library not found")
    assert "XFORMERS-NOT-BUILT-WITH-CUDA" in ids("`cutlassF-pt` is not supported because:\n    xFormers wasn't build with CUDA support")
    ptxas = "ptxas /tmp/compile-ptx-src-ac38de, line 521; error   : Feature '.bf16' requires .target sm_80 or higher"
    assert "PTXAS-REQUIRES-NEWER-TARGET" in ids(ptxas)
    assert "PTXAS-REQUIRES-NEWER-TARGET" not in ids("ptxas fatal   : Ptx assembly aborted due to errors")
    dispatch = ("RuntimeError: BatchPrefillWithPagedKVCachePyTorchWrapper::Forward(at::Tensor, bool)::<lambda()>::"
                "<lambda()> failed to dispatch group_size 5")
    assert "FLASHINFER-FAILED-TO-DISPATCH" in ids(dispatch)
    assert "FLASHINFER-FAILED-TO-DISPATCH" not in ids("failed to dispatch the request to worker 3")
    sage = "qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf(at::Tensor, int) failed to dispatch data type Float"
    assert "FLASHINFER-FAILED-TO-DISPATCH" not in ids(sage)
    llvm = "'sm_120' is not a recognized processor for this target (ignoring processor)"
    assert "LLVM-UNKNOWN-GPU-PROCESSOR" in ids(llvm)
    assert "LLVM-UNKNOWN-GPU-PROCESSOR" not in ids("'+ptx88' is not a recognized feature for this target (ignoring feature)")
    assert "FA-UNDEFINED-SYMBOL" in ids("flash_attn_2_cuda.cpython-39-x86_64-linux-gnu.so: undefined symbol:")
    assert "PY-NAME-FLASH-ATTN-NOT-DEFINED" in ids("NameError: name 'flash_attn_unpadded_func' is not defined")
    assert "PY-NAME-FLASH-ATTN-NOT-DEFINED" not in ids("NameError: name 'rearrange' is not defined")
    assert "PY-NAME-FLASH-ATTN-NOT-DEFINED" in ids("NameError: name 'FlashMHA' is not defined")
    assert "PY-NAME-XFORMERS-NOT-DEFINED" in ids("NameError: name 'xformers' is not defined")
    assert "PY-NAME-XFORMERS-NOT-DEFINED" not in ids("NameError: name 'xformers_available' is not defined")
    assert "PY-NO-MODULE-COMPILED-EXTENSION" in ids("ModuleNotFoundError: No module named 'flex_head_fa_2_cuda'")
    assert "PY-NO-MODULE-COMPILED-EXTENSION" not in ids("ModuleNotFoundError: No module named 'einops'")
    assert "XFORMERS-TENSORS-ON-CPU" in ids("`cutlassF` is not supported because:\n    device=cpu (supported: {'cuda'})")
    assert "XFORMERS-TENSORS-ON-CPU" not in ids("    device=cuda (supported: {'cpu'})")
    assert "SDPA-EFF-NO-KERNEL" in ids("RuntimeError: cutlassF: no kernel found to launch!")
    assert "SDPA-EFF-NO-KERNEL" not in ids("RuntimeError: no kernel image is available for execution on the device")
    stub = "FATAL: FlashAttention requires building with sm version sm80-sm90, but was built for < 8.0!"
    assert "FA2-KERNEL-BUILT-BELOW-SM80" in ids(stub)
    assert "FA2-KERNEL-BUILT-BELOW-SM80" not in ids("FlashAttention only supports Ampere GPUs or newer.")
    assert "SAGEATTENTION-KERNEL-NOT-AVAILABLE" in ids("SM90 kernel is not available. Make sure you GPUs with compute "
                                                       "capability 9.0.")
    assert "SAGEATTENTION-KERNEL-NOT-AVAILABLE" not in ids("CUDA kernel is not available for this GPU")
    header = "NotImplementedError: No operator found for `memory_efficient_attention_backward` with inputs:"
    assert "XFORMERS-NO-OPERATOR-FOUND" in ids(header)
    assert "XFORMERS-NO-OPERATOR-FOUND" not in ids("No operator found for this attention")
    fa1_bwd = "RuntimeError: Expected is_sm80 to be true, but got false."
    assert "FA1-BWD-HDIM-ABOVE-64-NEEDS-SM80" in ids(fa1_bwd) and "FA1-EXPECTED-IS-SM" not in ids(fa1_bwd)
    arch = "RuntimeError: Expected is_sm8x || is_sm75 to be true, but got false."
    assert "FA1-BWD-HDIM-ABOVE-64-NEEDS-SM80" not in ids(arch) and "FA1-EXPECTED-IS-SM" in ids(arch)
    assert "XFORMERS-KERNEL-NOT-BUILT-FOR-ARCH" in ids("FATAL: this function is for sm80, but was built for sm750")
    assert "XFORMERS-KERNEL-NOT-BUILT-FOR-ARCH" not in ids("this function is for sm80")
    assert "PIP-WHEEL-NOT-SUPPORTED" in ids("flash_attn-2.5.8+cu122torch2.3cxx11abiFALSE-cp311-cp311-linux_x86_64.whl is "
                                            "not a supported wheel on this platform.")
    assert "PIP-WHEEL-NOT-SUPPORTED" not in ids("numpy-1.26.4-cp311-cp311-win_amd64.whl is not a supported wheel on this "
                                                "platform.")
    assert "XFORMERS-NOT-BUILT-WITH-CUDA" not in ids("`cutlassF-pt` is not supported because:\n    dtype=torch.float32 "
                                                     "(supported: {torch.float16, torch.bfloat16})")


def test_a_literal_is_looked_for_only_where_the_text_holds_its_whole_words():
    """The words a literal holds whole (a non-word character on either side) must be words of the text; its first
    and last words may be parts of longer ones, so they are not asked for."""
    from attndoctor.why.reader import _inner_words

    assert _inner_words("FlashAttention only supports Ampere GPUs or newer") == ("only", "supports", "Ampere", "GPUs",
                                                                                 "or")
    assert _inner_words("ead_size") == () and _inner_words("failed to dispatch ") == ("to", "dispatch")
    text = "step 1 loss 2.3\n" * 50 + "RuntimeError: FlashAttention only supports Ampere GPUs or newer."
    assert [h.entry.id for h in read_text(text, load_catalogue()).hits
            if h.entry.kind != "fact"] == ["FA-AMPERE-OR-NEWER"]
