"""`why`'s fixes: the values a message lists are not the user's facts, literal rule fixes are offered, and the way to
keep a failing backend out of the call comes beside the fix."""

from __future__ import annotations

import pytest

from attndoctor.engine.rules import load_rulebase
from attndoctor.environment import Environment
from attndoctor.why.remedies import REMEDIES_FILE, load_remedies, with_alternative
from attndoctor.why.service import explain_text


def answer(text: str, config=None, **flags):
    return explain_text(text, base_env=Environment(source="what-if"), env_flags=flags, config_flags=config)


def test_the_dtypes_a_message_accepts_are_not_the_users_dtype() -> None:
    got = answer("RuntimeError: FlashAttention only support fp16 and bf16 data type")
    assert "dtype" not in got.reading.facts


def test_a_dtype_the_text_gives_beside_the_message_is_kept() -> None:
    got = answer("RuntimeError: FlashAttention only support fp16 and bf16 data type\nq.dtype = torch.float16")
    assert got.reading.facts["dtype"].value == "fp16"


def test_a_rule_fix_with_a_literal_value_is_offered_once() -> None:
    got = answer("RuntimeError: FlashAttention only support fp16 and bf16 data type", config={"dtype": "fp32"},
                 gpu="A100", flash_attn="2.6.3")
    fixes = got.cause.fixes
    assert sum(f.replace("'", "").startswith("set dtype = bf16") for f in fixes) == 1, fixes


def test_an_undefined_symbol_offers_the_pin_and_keeping_flash_attn_out() -> None:
    got = answer("ImportError: /usr/lib/python3/site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: "
                 "undefined symbol: _ZN3c104cuda9SetDeviceEi")
    assert got.cause.id == "FA-UNDEFINED-SYMBOL"
    text = " ".join(got.cause.fixes)
    assert "pin (downgrade to) the flash-attn release" in text
    assert 'attn_implementation="sdpa"' in text


def test_an_undefined_symbol_in_transformer_engine_says_to_rebuild_transformer_engine() -> None:
    """NVIDIA/TransformerEngine#1283: TE's torch extension built against another torch."""
    got = answer("ImportError: /usr/local/lib/python3.10/dist-packages/transformer_engine/transformer_engine_torch"
                 ".cpython-310-x86_64-linux-gnu.so: undefined symbol: _ZN5torch7LibraryC1ENS0_4KindESsSt8optionalIN3c"
                 "1011DispatchKeyEEPKcj")
    assert set(got.cause.backends) == {"te-flash", "te-fused", "te-unfused"}
    text = " ".join(got.cause.fixes)
    assert "transformer_engine[pytorch]" in text and "pip install flash-attn" not in text


def test_every_remedy_names_a_backend_of_the_rule_base() -> None:
    backends = {b.id for b in load_rulebase().backends}
    frameworks = {"transformers", "vllm", "sglang", "sageattention", "llamafactory", "jax", "xformers"}
    keys = [key.partition("@") for key in load_remedies()]
    assert all(lib in frameworks and backend in backends for lib, at, backend in keys if at)
    assert {lib for lib, at, _ in keys if not at} <= backends | frameworks
    assert {"flash-attn-2", "sdpa-cudnn", "te-fused", "flex-attention"} <= set(load_remedies())


def test_a_frameworks_message_about_sdpa_gets_the_frameworks_other_attention() -> None:
    """transformers' message about SDPA itself leaves eager; one about flash-attn names SDPA first and what it turns
    off; one about no backend in particular, another attention."""
    about_sdpa = with_alternative((), ("sdpa-flash",), "transformers")[-1]
    assert 'attn_implementation="eager"' in about_sdpa and '"sdpa"' not in about_sdpa
    about_flash = with_alternative((), ("flash-attn-2",), "transformers")[-1]
    assert about_flash.startswith('disable flash-attn for this model: attn_implementation="sdpa"')
    assert '"flash_attention_2"' in about_flash
    assert with_alternative((), (), "transformers")[-1].startswith('use another attention: attn_implementation="sdpa"')


def test_the_alternative_is_the_first_backend_with_a_remedy_and_comes_once() -> None:
    assert with_alternative(("a",), ("nope", "te-fused"))[-1].endswith("NVTE_FUSED_ATTN=0")
    assert with_alternative(("a",), ("nope",)) == ("a",)
    once = with_alternative(("a",), ("te-fused",))
    assert with_alternative(once, ("te-fused",)) == once


def test_a_broken_remedies_file_is_a_rule_error(tmp_path, monkeypatch) -> None:
    from attndoctor.errors import RuleError
    from attndoctor.why import remedies

    bad = tmp_path / "remedies.toml"
    bad.write_text('[[remedy]]\nbackend = "sdpa-flash"\ntext = "x"\n')
    monkeypatch.setattr(remedies, "REMEDIES_FILE", bad)
    load_remedies.cache_clear()
    try:
        with pytest.raises(RuleError, match="needs a backend or library, a text and a source"):
            load_remedies()
    finally:
        load_remedies.cache_clear()
    assert REMEDIES_FILE.is_file()


def test_an_xformers_message_offers_turning_xformers_off_not_an_sdpa_kernel() -> None:
    """xformers' own kernels are not SDPA's: its message about them is answered by the switch that stops using
    xformers, not by disabling a kernel of PyTorch's SDPA."""
    alternative = with_alternative(("a",), ("flash-attn-2", "sdpa-efficient"), "xformers")[-1]
    assert alternative.startswith("disable xformers") and "enable_mem_efficient_sdp" not in alternative


def test_a_framework_message_offers_the_frameworks_own_switch() -> None:
    assert "attn_implementation" in with_alternative(("a",), ("sdpa-flash",), "transformers")[-1]
    assert "VLLM_ATTENTION_BACKEND" in with_alternative(("a",), ("flash-attn-2",), "vllm")[-1]


@pytest.mark.parametrize("text, cause, package", [
    ("ImportError: cannot import name 'is_flash_attn_available' from 'transformers.utils' (/x/transformers/utils/"
     "__init__.py)", "PY-CANNOT-IMPORT-FLASH-NAME-FROM-FRAMEWORK", "transformers"),
    ("ImportError: cannot import name 'AttentionInterface' from 'transformers' (/x/transformers/__init__.py)",
     "PY-CANNOT-IMPORT-NAME-FROM-FRAMEWORK", "transformers"),
    ("AttributeError: module 'xformers.ops' has no attribute 'memory_efficient_attention'",
     "PY-MODULE-NO-ATTRIBUTE-ATTENTION", "xformers"),
])
def test_a_name_the_installed_release_lacks_names_that_package(text, cause, package) -> None:
    got = answer(text)
    assert got.cause.id == cause
    assert "version-mismatch" in got.cause.topics
    assert f"upgrade or downgrade (pin) {package}" in got.cause.fixes[0]


def test_a_model_class_missing_a_flash_helper_is_a_transformers_mismatch() -> None:
    got = answer("AttributeError: 'InternLM2FlashAttention2' object has no attribute '_flash_attention_forward'")
    assert got.cause.id == "PY-NO-FLASH-ATTRIBUTE"
    assert "flash-attn-2" in got.cause.backends


def test_a_message_wrapped_after_a_trailing_space_is_found_and_names_the_missing_package() -> None:
    got = answer("ModuleNotFoundError: Refer to https://github.com/facebookresearch/xformers for more information on "
                 "how to install \nxformers")
    assert got.cause is not None and got.cause.id.startswith("DIFFUSERS-")
    assert "install-missing" in got.cause.topics
    assert got.cause.fixes[0].startswith("install xformers")


def test_a_version_mismatch_message_names_the_package_it_asks_for() -> None:
    got = answer("RuntimeError: FlashAttention is only supported on CUDA 11.6 and above.  Note: make sure nvcc has a "
                 "supported version by running nvcc -V.")
    assert any("the CUDA toolkit" in f and "CUDA 11.6" in f for f in got.cause.fixes), got.cause.fixes


def test_the_ck_build_of_flash_attn_is_read() -> None:
    got = answer("RuntimeError: CK only supports head dimension at most 256")
    assert got.reading.hits and any(h.entry.library == "flash-attn" for h in got.reading.hits)


def test_the_first_sentence_of_a_long_message_is_enough() -> None:
    got = answer("ValueError: Flash Attention 2.0 only supports torch.float16 and torch.bfloat16 dtypes, but the current "
                 "dype in LlamaForCausalLM is torch.float32.")
    assert any(h.entry.library == "transformers" for h in got.reading.hits)
    assert got.reading.facts["dtype"].value == "fp32"
    assert "flash_attn" not in got.reading.facts


def test_torch_without_cuda_and_a_failed_flash_attn_build_are_install_problems() -> None:
    assert "install-missing" in answer("AssertionError: Torch not compiled with CUDA enabled").cause.topics
    got = answer("ERROR: Could not build wheels for flash-attn, which is required to install pyproject.toml-based "
                 "projects")
    assert got.cause.id == "PIP-BUILD-FAILED-FLASH-ATTN"


def test_sageattention_is_read_and_its_own_switch_offered() -> None:
    got = answer("AssertionError: Input tensors must be in dtype of torch.float16 or torch.bfloat16")
    assert got.cause.id.startswith("SAGEATTENTION-") and "dtype" in got.cause.topics
    assert any("sageattn" in f for f in got.cause.fixes)


def test_the_backend_a_framework_logs_names_the_backend_of_a_bare_error() -> None:
    got = answer("[olmo_core.nn.attention:471] Using attention backend 'flex'\n"
                 "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert "flex-attention" in got.reading.backends
    assert got.cause is not None and "flex-attention" in got.cause.backends


def test_llama_factorys_own_attention_messages_are_read() -> None:
    got = answer("[WARNING|2025-01-01 00:00:00] llamafactory.model.model_utils.attention:50 >> Gemma 2 should use "
                 "flash attention 2, change `flash_attn` to fa2.")
    assert any(h.entry.library == "llamafactory" for h in got.reading.hits)
    assert "flash_attn: sdpa" in with_alternative((), (), "llamafactory")[-1]


def test_a_jax_message_about_cudnn_offers_jaxs_own_attention_not_torchs() -> None:
    """jax-ml/jax jax/_src/cudnn/fused_attention_stablehlo.py@wheel:jax-0.5.3: JAX's cuDNN attention is left through
    dot_product_attention's implementation argument, not PyTorch's or TransformerEngine's switches."""
    got = answer("NotImplementedError: Packed layout requires cudnn version >= 9.6.", gpu="H100", cudnn="9.4.0")
    assert got.cause.id.startswith("JAX-")
    text = " ".join(got.cause.fixes)
    assert "implementation='xla'" in text and "enable_cudnn_sdp" not in text
    # the release the check's own bound names comes once, not again from the message's words
    assert got.cause.fixes[0].startswith("upgrade cuDNN to 9.6.0") and "install cudnn at the version" not in text



def test_only_a_bound_that_is_offered_takes_the_place_of_the_versions_a_message_names() -> None:
    """The upgrade a cuDNN bound gives is added to an index message's fixes only; an error's own words (whose 'note'
    is the message itself) keep the version they name even where they hold such a bound."""
    from types import SimpleNamespace

    from attndoctor.why.fixes import generic_fix

    words = "requires cuDNN >= 9.6 (cudnn_version < 90600)"
    printer = SimpleNamespace(library="the program", note=words, source=(), retired="", kind="error")
    assert generic_fix(printer, ("version-mismatch",), (), words).startswith("install cuDNN at the version")
