"""How exceptions map to outcome classes, and what a config asks the runners to build (no torch needed)."""

from __future__ import annotations

import pytest

from attndoctor.config import make_config
from attndoctor.runs.verification import DEFAULTS, agreement, backend_environment, disagrees, fill_defaults
from attndoctor.environment import Environment
from attndoctor_kernels.outcomes import classify, classify_exception, error_text, is_cuda_error
from attndoctor_kernels.spec import NotBuilt, case_spec, padded_lengths, parse_layout


@pytest.mark.parametrize("names,message,expected", [
    ("RuntimeError", "No available kernel. Aborting execution.", ("rejected", False)),
    ("RuntimeError", "FlashAttention only supports Ampere GPUs or newer.", ("rejected", False)),
    ("RuntimeError", "FlashAttention only support fp16 and bf16 data type", ("rejected", False)),
    ("cudnnGraphNotSupportedError", "[cudnn_frontend] Error: No execution plans support the graph.",
     ("rejected", False)),
    (("cudnnGraphNotSupportedError", "RuntimeError"), "No valid engine configs for SDPA_FWD", ("rejected", False)),
    ("AssertionError", "No dot product attention backend is available for the provided inputs.",
     ("rejected", False)),
    ("ValueError", "head_dim must be a multiple of 8", ("rejected", False)),
    ("NotImplementedError", "paged KV not supported on sm80", ("rejected", False)),
    ("TypeError", "flash_attn_func() got an unexpected keyword argument 'softcap'", ("api-mismatch", False)),
    ("TypeError", "_flash_attn_forward() missing 1 required positional argument: 'softcap'", ("api-mismatch", False)),
    ("TypeError", "sdpa(): incompatible function arguments. The following argument types are supported",
     ("api-mismatch", False)),
    ("TypeError", "f() takes 7 positional arguments but 8 were given", ("api-mismatch", False)),
    ("ValueError", "too many values to unpack (expected 4)", ("api-mismatch", False)),
    ("RuntimeError", "CUDA error: an illegal memory access was encountered", ("crashed", True)),
    ("AcceleratorError", "CUDA error: misaligned address", ("crashed", True)),
    ("RuntimeError", "CUDA error: device-side assert triggered", ("crashed", True)),
    ("RuntimeError", "cuDNN error: CUDNN_STATUS_EXECUTION_FAILED", ("crashed", True)),
    (("OutOfMemoryError", "RuntimeError"), "CUDA out of memory. Tried to allocate 16.00 GiB", ("out-of-memory", False)),
    ("RuntimeError", "CUDA error: out of memory", ("out-of-memory", False)),
    ("ModuleNotFoundError", "No module named 'flash_attn_2_cuda'", ("not-installed", False)),
    ("ImportError", "undefined symbol: _ZN3c10", ("not-installed", False)),
    ("KeyError", "'q'", ("crashed", False)),
    ("NameError", "name 'x' is not defined", ("crashed", False)),
])
def test_classify(names, message, expected):
    assert classify(names, message) == expected


def test_attribute_error_in_the_library_is_an_api_mismatch():
    assert classify("AttributeError", "module 'flash_attn_interface' has no attribute 'flash_attn_func'",
                    library_modules=("flash_attn_interface",)) == ("api-mismatch", False)
    assert classify("AttributeError", "'NoneType' object has no attribute 'shape'", library_modules=("cudnn",),
                    traceback_modules=("attndoctor_kernels.runners.cudnn_fe",)) == ("crashed", False)


def test_classify_live_exception_and_error_text_with_warnings():
    try:
        raise RuntimeError("No available kernel. Aborting execution.")
    except RuntimeError as exc:
        assert classify_exception(exc) == ("rejected", False)
        text = error_text(exc, ["Flash attention kernel not used because:", "Flash Attention does not support "
                                "non-null attn_mask.", "Flash attention kernel not used because:"])
    assert text.startswith("RuntimeError: No available kernel.")
    assert text.count("Flash attention kernel not used because:") == 1
    assert "non-null attn_mask" in text


def test_oom_is_not_a_sticky_cuda_error():
    assert not is_cuda_error("RuntimeError", "CUDA error: out of memory")
    assert is_cuda_error("RuntimeError", "CUDA error: unspecified launch failure")


# ---------------------------------------------------------------- layouts and specs


@pytest.mark.parametrize("layout,fused,expected", [
    (None, False, ("bshd", "bshd", "separate")),
    ("sbhd", False, ("sbhd", "sbhd", "separate")),
    ("sbhd", True, ("sbhd", "sbhd", "fused")),
    ("thd", True, ("thd", "thd", "fused")),
    ("sb3hd", False, ("sbhd", "sbhd", "qkv_3hd")),
    ("sbh3d", False, ("sbhd", "sbhd", "qkv_h3d")),
    ("bs3hd", False, ("bshd", "bshd", "qkv_3hd")),
    ("t3hd", False, ("thd", "thd", "qkv_3hd")),
    ("th3d", False, ("thd", "thd", "qkv_h3d")),
    ("sbhd_sb2hd", False, ("sbhd", "sbhd", "kv_2hd")),
    ("bshd_bsh2d", False, ("bshd", "bshd", "kv_h2d")),
    ("thd_t2hd", False, ("thd", "thd", "kv_2hd")),
    ("sbhd_sbhd_sbhd", False, ("sbhd", "sbhd", "separate")),
    ("sbhd_sbhd_sbhd", True, ("sbhd", "sbhd", "fused")),
    ("sbhd_bshd_bshd", False, ("sbhd", "bshd", "separate")),
    ("thd_bshd_bshd", True, ("thd", "bshd", "separate")),
    ("bhsd_bhsd_bhsd", False, ("bhsd", "bhsd", "separate")),
])
def test_parse_layout(layout, fused, expected):
    plan = parse_layout(layout, fused)
    assert (plan.q_format, plan.kv_format, plan.pack) == expected


def test_paged_layouts_are_not_built():
    with pytest.raises(NotBuilt):
        parse_layout("paged_kv_bshd_bshd_bshd")


def _spec(**fields):
    base = dict(batch=2, heads=8, seqlen=128, hdim=64, dtype="bf16", train=True)
    base.update(fields)
    return case_spec(make_config(base).to_dict())


def test_case_spec_masks_and_lengths():
    s = _spec(mask="causal")
    assert s.causal == "top-left" and not s.padded and s.lens_q == (128, 128)
    s = _spec(mask="padding-causal-bottom-right", seqlen_kv=256)
    assert s.causal == "bottom-right" and s.padded
    assert s.lens_q == padded_lengths(2, 128) and s.lens_kv == padded_lengths(2, 256)
    assert s.lens_kv[0] == 256 and s.lens_kv[1] % 64 != 0
    s = _spec(layout="thd")
    assert s.padded and s.total_q == sum(padded_lengths(2, 128))
    s = _spec(mask="causal", window="64,0")
    assert s.window == (64, 0) and s.window_align == "top-left"
    s = _spec(window="64,64")
    assert s.window_align == "bottom-right"
    assert _spec(dropout=0.1).compares is False
    assert _spec().data_key() == _spec(train=False).data_key(), "train and infer share data and reference"


def test_case_spec_refuses_what_it_cannot_build():
    with pytest.raises(NotBuilt, match="context parallelism"):
        _spec(cp=2)
    with pytest.raises(NotBuilt, match="paged"):
        _spec(paged_kv=True)
    with pytest.raises(NotBuilt, match="equal head counts"):
        _spec(kv_heads=2, layout="sb3hd")
    with pytest.raises(NotBuilt, match="hdim == hdim_v"):
        _spec(hdim_v=32, layout="sbhd_sb2hd")
    with pytest.raises(ValueError):
        case_spec(make_config({"heads": 8}).to_dict())


def test_fill_defaults_says_what_it_filled():
    config, filled = fill_defaults(make_config({"heads": 16, "kv_heads": 4, "mask": "causal"}))
    assert set(filled) == {"batch", "seqlen_q", "hdim", "dtype", "train", "layout"}
    assert (config.batch, config.seqlen_q, config.seqlen_kv, config.hdim, config.hdim_v) == (2, 256, 256, 64, 64)
    assert config.heads == 16 and config.kv_heads == 4 and config.dtype == "bf16" and config.train is False
    full = make_config({"batch": 1, "heads": 8, "seqlen": 64, "hdim": 64, "dtype": "fp16", "train": True,
                        "layout": "sbhd"})
    assert fill_defaults(full) == (full, ())
    assert DEFAULTS["seqlen_q"] == 256


@pytest.mark.parametrize("outcome,predicted,expected", [
    ("ok", "supported", "confirmed"),
    ("rejected", "supported", "contradicted"),
    ("wrong-results", "supported", "contradicted"),
    ("crashed", "supported", "contradicted"),
    ("ok", "unsupported", "contradicted"),
    ("rejected", "unsupported", "confirmed"),
    ("crashed", "unsupported", "confirmed"),
    ("api-mismatch", "api-mismatch", "confirmed"),
    ("ok", "api-mismatch", "contradicted"),
    ("wrong-results", "wrong-results", "confirmed"),
    ("ok", "wrong-results", "contradicted"),
    ("not-installed", "not-installed", "confirmed"),
    ("ok", "depends", "undecided"),
    ("rejected", "depends", "undecided"),
    ("out-of-memory", "supported", "inconclusive"),
    ("skipped", "unsupported", "inconclusive"),
])
def test_agreement(outcome, predicted, expected):
    assert agreement(outcome, predicted) == expected
    assert disagrees(outcome, predicted) == (expected in ("contradicted", "undecided"))


def test_te_backends_are_judged_with_the_switches_their_runner_sets():
    env = Environment(source="probe", env_vars={"NVTE_FLASH_ATTN": "0"})
    forced = backend_environment(env, "te-flash")
    assert forced.env_vars["NVTE_FLASH_ATTN"] == "1" and forced.env_vars["NVTE_FUSED_ATTN"] == "0"
    assert backend_environment(env, "sdpa-flash").env_vars == {"NVTE_FLASH_ATTN": "0"}
    from attndoctor_kernels.runners.te import SWITCHES
    from attndoctor.environment import TE_SWITCHES

    assert SWITCHES is TE_SWITCHES  # one table, so a runner and its prediction cannot drift apart
    for backend, switches in TE_SWITCHES.items():
        on = {"te-flash": "NVTE_FLASH_ATTN", "te-fused": "NVTE_FUSED_ATTN", "te-unfused": "NVTE_UNFUSED_ATTN"}[backend]
        assert {k for k, v in switches.items() if v == "1"} == {on}
