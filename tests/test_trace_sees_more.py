"""`attndoctor trace` sees more: torch.compile graphs, varlen_attn, Hub kernels loaded through `kernels`, vLLM's
flash-attn; and what ran told by torch's own SDPA choice, without a dispatch mode on the first calls."""

from __future__ import annotations

import sys
import textwrap
import types
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import attndoctor  # noqa: E402
from attndoctor.trace import recorder as recorder_module  # noqa: E402
from attndoctor.trace.compiled import graph_entry_point, kernel_backend, module_path  # noqa: E402
from attndoctor.trace.fields import hub_library, sdpa_op_by_choice  # noqa: E402

F = torch.nn.functional
PROGRAMS = Path(__file__).parent / "trace_programs"


def line_of(path: Path, marker: str) -> int:
    return next(i for i, text in enumerate(path.read_text().splitlines(), 1) if f"# {marker}" in text)


# ---------------------------------------------------------------- torch.compile


def test_compiled_function_calls_are_read_from_the_graph_with_what_ran_and_counted(tmp_path):
    program = tmp_path / "compiled_fn.py"
    program.write_text(textwrap.dedent("""\
        import torch
        import torch.nn.functional as F


        def attend(q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)  # GRAPH-SITE


        compiled = torch.compile(attend, backend="eager")
    """))
    sys.path.insert(0, str(tmp_path))
    try:
        import compiled_fn
    finally:
        sys.path.remove(str(tmp_path))
    q, k = torch.randn(2, 8, 32, 16), torch.randn(2, 2, 32, 16)
    with attndoctor.trace() as t:
        for _ in range(3):
            compiled_fn.compiled(q, k, k)
    [call] = t.calls
    assert call["site"].endswith(f"compiled_fn.py:{line_of(program, 'GRAPH-SITE')}")
    assert call["details"]["compiled"] is True and call["api"].startswith("torch.compile graph")
    assert call["count"] == 3
    assert call["config"] == {**call["config"], "batch": 2, "heads": 8, "kv_heads": 2, "seqlen_q": 32, "hdim": 16,
                              "mask": "causal", "dtype": "fp32"}
    assert call["ran"] == "sdpa-cpu-flash" and call["op"] == "aten._scaled_dot_product_flash_attention_for_cpu.default"
    notes = t.report().notes
    assert any("the 1 attention call(s) inside them were read from the graphs" in n for n in notes)


def test_compiled_model_names_each_layer_by_its_module_path():
    import runpy

    namespace = runpy.run_path(str(PROGRAMS / "gqa_module.py"))
    model = torch.compile(namespace["model"], backend="aot_eager")
    x = torch.randn(1, 2, 8, 16, requires_grad=True)
    with attndoctor.trace() as t:
        model(x).sum().backward()
        model(x).sum().backward()
    modules = sorted(c["module"] for c in t.calls)
    assert modules == ["layers.0.self_attn", "layers.1.self_attn"]
    assert {c["ran"] for c in t.calls} == {"sdpa-cpu-flash"} and {c["count"] for c in t.calls} == {2}
    assert all(c["config"]["train"] for c in t.calls)


def test_compiled_graph_with_the_math_fallback_says_so():
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def attend(q):
        with sdpa_kernel(SDPBackend.MATH):
            return F.scaled_dot_product_attention(q, q, q)

    compiled = torch.compile(attend, backend="eager")
    with attndoctor.trace() as t:
        compiled(torch.randn(1, 2, 8, 16))
    [call] = t.calls
    assert call["ran"] == "sdpa-math" and "math fallback" in call["note"]


def test_a_graph_compiled_while_no_attention_is_in_it_keeps_the_plain_note():
    compiled = torch.compile(lambda x: x * 2 + 1, backend="eager")
    with attndoctor.trace() as t:
        compiled(torch.randn(4))
    assert not t.calls
    assert any("no attention call the trace recognises inside them" in n for n in t.report().notes)


def test_a_graph_compiled_inside_a_hooked_entry_point_is_not_recorded_twice():
    compiled = torch.compile(lambda x: F.scaled_dot_product_attention(x, x, x), backend="eager")
    with attndoctor.trace() as t:
        t._recorder.local.busy = True  # as inside the flex_attention wrapper, whose own compile this stands for
        compiled(torch.randn(1, 2, 8, 16))
        t._recorder.local.busy = False
        compiled(torch.randn(1, 2, 8, 16))
    assert not t.calls


@pytest.mark.parametrize("name, entry, ran", [
    ("aten::_scaled_dot_product_cudnn_attention", None, "sdpa-cudnn"),
    ("aten::_scaled_dot_product_efficient_attention", None, "sdpa-efficient"),
    ("aten::_scaled_dot_product_cudnn_attention_backward", None, None),
    # CUDA kernel names the H100 run recorded (torch 2.11.0+cu130, cuDNN 9.19): benchmarks/results/
    ("void pytorch_flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, "
     "cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, true>", None, "sdpa-flash"),
    ("fmha_cutlassF_bf16_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t, "
     "cutlass::arch::Sm80, true, 64, 128, 128, true, true>::Params)", None, "sdpa-efficient"),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_cga1x1x1_kernel0_0", None,
     "sdpa-cudnn"),
    ("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::half_t>>", None,
     "flash-attn-2"),
    ("Memset (Device)", None, None),
])
def test_profiled_names_map_to_backends(name, entry, ran):
    assert kernel_backend(name) == ran


class _Op:
    """A stand-in for a torch.ops overload: what a graph node's target looks like."""

    def __init__(self, name: str) -> None:
        self._name = name


@pytest.mark.parametrize("name, ran", [
    ("vllm::unified_attention_with_output", "vllm-attention"),
    ("vllm::unified_attention", "vllm-attention"),
    ("_vllm_fa2_C::varlen_fwd", "flash-attn-2"),
    ("_vllm_fa3_C::fwd", "flash-attn-3"),
    ("_flash_attn_9e27194::varlen_fwd", "flash-attn-2"),
    ("_flash_attn3_1a2b3c4::fwd", "flash-attn-3"),
    ("flash_attn::_flash_attn_varlen_forward", "flash-attn-2"),
    ("torch_attn::_varlen_attn", "sdpa-flash"),
])
def test_graph_ops_of_vllm_hub_kernels_and_flash_attn_are_recognised(name, ran):
    assert graph_entry_point(_Op(name))[1] == ran
    assert graph_entry_point(_Op("aten::mm")) is None
    assert graph_entry_point(_Op("_flash_attn_9e27194::mha_bwd")) is None


def test_module_path_from_dynamo_module_stack():
    node = types.SimpleNamespace(meta={"nn_module_stack": {
        "a": ("L['self'].model", None), "b": ("L['self'].model.layers[3].self_attn", None)}})
    assert module_path(node) == "model.layers.3.self_attn"


# ---------------------------------------------------------------- varlen_attn


def test_varlen_attn_is_wrapped_and_its_config_read(monkeypatch):
    varlen = pytest.importorskip("torch.nn.attention.varlen")

    def fake_varlen(query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, **kwargs):
        return query  # the real kernel needs CUDA: this stands for it

    monkeypatch.setattr(varlen, "varlen_attn", fake_varlen)
    cu = torch.tensor([0, 100, 356], dtype=torch.int32)
    q, k = torch.randn(356, 8, 64, dtype=torch.bfloat16), torch.randn(356, 2, 64, dtype=torch.bfloat16)
    with attndoctor.trace() as t:
        assert varlen.varlen_attn is not fake_varlen
        varlen.varlen_attn(q, k, k, cu, cu, 256, 256, window_size=(-1, 0), enable_gqa=True)
    assert varlen.varlen_attn is fake_varlen
    [call] = t.calls
    assert call["ran"] == "sdpa-flash" and call["api"] == "torch.nn.attention.varlen.varlen_attn"
    assert call["config"] == {**call["config"], "batch": 2, "heads": 8, "kv_heads": 2, "seqlen_q": 256,
                              "seqlen_kv": 256, "hdim": 64, "dtype": "bf16", "mask": "causal", "layout": "thd"}
    assert call["details"]["gqa"] is True


# ---------------------------------------------------------------- Hub kernels and vLLM (fakes)

HUB_KERNEL = '''
import types


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, **kwargs):
    return q


def get_kernel(repo_id, revision=None, version=None, **kwargs):
    module = types.ModuleType(repo_id.replace("/", "_").replace("-", "_"))
    module.flash_attn_func = flash_attn_func
    module.flash_attn_interface = types.ModuleType("flash_attn_interface")
    module.flash_attn_interface.flash_attn_func = flash_attn_func
    return module
'''

VLLM_FA = '''
DEFAULT_FA_VERSION = 2


def flash_attn_varlen_func(q, k, v, max_seqlen_q, cu_seqlens_q, max_seqlen_k, cu_seqlens_k=None, seqused_k=None,
                           softmax_scale=None, causal=False, block_table=None, fa_version=DEFAULT_FA_VERSION, **kw):
    return q
'''


@pytest.fixture
def fake_packages(tmp_path, monkeypatch):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "__init__.py").write_text(HUB_KERNEL)
    (tmp_path / "vllm" / "vllm_flash_attn").mkdir(parents=True)
    (tmp_path / "vllm" / "__init__.py").write_text("")
    (tmp_path / "vllm" / "vllm_flash_attn" / "__init__.py").write_text(VLLM_FA)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("kernels", "vllm", "vllm.vllm_flash_attn"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    yield tmp_path
    for name in ("kernels", "vllm", "vllm.vllm_flash_attn"):
        sys.modules.pop(name, None)


def test_hub_kernel_loaded_through_kernels_is_recorded_with_its_generation(fake_packages):
    q = torch.randn(2, 128, 8, 64, dtype=torch.bfloat16)
    with attndoctor.trace() as t:
        from kernels import get_kernel  # imported while tracing: the loader is wrapped first

        fa3 = get_kernel("kernels-community/flash-attn3")
        fa3.flash_attn_func(q, q, q, causal=True)
        fa3.flash_attn_interface.flash_attn_func(q, q, q, causal=True)
        get_kernel("kernels-community/flash-attn2").flash_attn_func(q, q, q)
    by_api = {c["api"]: c for c in t.calls}
    assert by_api["kernels-community/flash-attn3.flash_attn_func"]["ran"] == "flash-attn-3"
    assert by_api["kernels-community/flash-attn3.flash_attn_interface.flash_attn_func"]["ran"] == "flash-attn-3"
    two = by_api["kernels-community/flash-attn2.flash_attn_func"]
    assert two["ran"] == "flash-attn-2" and two["config"]["mask"] == "none"
    assert by_api["kernels-community/flash-attn3.flash_attn_func"]["config"] == {
        **by_api["kernels-community/flash-attn3.flash_attn_func"]["config"], "batch": 2, "seqlen_q": 128, "heads": 8,
        "hdim": 64, "mask": "causal", "layout": "bshd"}


def test_hub_kernel_loaded_before_the_trace_started_is_wrapped_too(fake_packages, monkeypatch):
    import kernels

    fa2 = kernels.get_kernel("kernels-community/flash-attn2")
    importer = types.ModuleType("kernels.importer")
    importer._loaded_kernels = {"variant": types.SimpleNamespace(
        module=fa2, repo_info=types.SimpleNamespace(repo_id="kernels-community/flash-attn2"))}
    monkeypatch.setitem(sys.modules, "kernels.importer", importer)
    q = torch.randn(1, 16, 4, 32, dtype=torch.float16)
    with attndoctor.trace() as t:
        fa2.flash_attn_func(q, q, q, causal=True)
    [call] = t.calls
    assert call["ran"] == "flash-attn-2" and call["api"] == "kernels-community/flash-attn2.flash_attn_func"


@pytest.mark.parametrize("repo, generation", [
    ("kernels-community/flash-attn2", "flash-attn-2"), ("kernels-community/flash-attn3", "flash-attn-3"),
    ("kernels-community/vllm-flash-attn3", "flash-attn-3"), ("kernels-community/flash-attn", "flash-attn-2"),
    ("kernels-community/activation", ""), ("_flash_attn_9e27194", "flash-attn-2"),
])
def test_hub_repository_names_give_the_generation(repo, generation):
    assert hub_library(repo) == generation


def test_vllm_flash_attn_in_process_is_recorded_by_its_fa_version(fake_packages):
    cu = torch.tensor([0, 100, 356], dtype=torch.int32)
    q, k = torch.randn(356, 16, 128, dtype=torch.bfloat16), torch.randn(356, 4, 128, dtype=torch.bfloat16)
    with attndoctor.trace() as t:
        from vllm.vllm_flash_attn import flash_attn_varlen_func

        flash_attn_varlen_func(q=q, k=k, v=k, max_seqlen_q=256, cu_seqlens_q=cu, max_seqlen_k=256, cu_seqlens_k=cu,
                               causal=True, fa_version=3)
        flash_attn_varlen_func(q=q, k=k, v=k, max_seqlen_q=256, cu_seqlens_q=cu, max_seqlen_k=256, cu_seqlens_k=cu,
                               causal=True)
    assert sorted(c["ran"] for c in t.calls) == ["flash-attn-2", "flash-attn-3"]
    call = t.calls[0]
    assert call["details"]["fork"] == "vllm_flash_attn"
    assert call["config"] == {**call["config"], "batch": 2, "heads": 16, "kv_heads": 4, "seqlen_q": 256,
                              "layout": "thd", "mask": "causal"}


# ---------------------------------------------------------------- first calls as cheap as the rest


@pytest.mark.parametrize("case", ["plain", "gqa", "bool-mask", "float-mask", "fp16", "dropout", "strided", "math"])
def test_torch_choice_names_the_op_the_dispatch_mode_sees(case):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q = torch.randn(2, 8, 64, 32)
    k = v = torch.randn(2, 2 if case == "gqa" else 8, 64, 32)
    mask = {"bool-mask": torch.rand(64, 64) > 0.3, "float-mask": torch.randn(64, 64)}.get(case)
    if case == "fp16":
        q, k, v = q.half(), k.half(), v.half()
    if case == "strided":
        q = torch.randn(2, 64, 8, 32).transpose(1, 2)
    drop = 0.1 if case == "dropout" else 0.0
    context = sdpa_kernel(SDPBackend.MATH) if case == "math" else sdpa_kernel(
        [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.MATH])
    with context:
        chosen = sdpa_op_by_choice(q, k, v, mask, drop, case == "plain", None, case == "gqa")
        mode = recorder_module._Observe.make()
        with mode:
            F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=drop, is_causal=case == "plain",
                                           enable_gqa=case == "gqa")
    seen = mode.seen[0][0] if mode.seen else ""
    assert chosen == seen
    if case == "math":
        assert chosen == ""


def test_first_calls_use_no_dispatch_mode_unless_numerics_needs_it(monkeypatch):
    made = []
    real = recorder_module._Observe.make

    def counted():
        made.append(1)
        return real()

    monkeypatch.setattr(recorder_module._Observe, "make", staticmethod(counted))
    q = torch.randn(1, 4, 16, 8, requires_grad=True)
    mask = torch.ones(16, 16, dtype=torch.bool)
    mask[3] = False
    with attndoctor.trace() as t:
        F.scaled_dot_product_attention(q, q, q, attn_mask=mask).sum().backward()
    assert not made
    forward = next(c for c in t.calls if c["phase"] == "forward")
    assert forward["details"]["fully_masked_rows"] is True  # read when the record is written, not during the call
    assert forward["op"] == "aten._scaled_dot_product_flash_attention_for_cpu.default"
    assert any(c["phase"] == "backward" and c["op"].endswith("_for_cpu_backward") for c in t.calls)
    with attndoctor.trace(numerics=True):
        F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    assert made
