"""The message index generator (tools/messages) writes patterns that find messages as people paste them."""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.messages.model import LIT, pattern_of  # noqa: E402


def test_quotes_around_a_placeholder_are_optional():
    pattern, _ = pattern_of([(LIT, "Sliding Window Attention is enabled but not implemented for `"),
                             ("ph", "attn_implementation", ""), (LIT, "`; unexpected results may be encountered.")])
    for text in ("Sliding Window Attention is enabled but not implemented for `sdpa`; unexpected results may be "
                 "encountered.", "Sliding Window Attention is enabled but not implemented for sdpa; unexpected results "
                 "may be encountered"):
        match = re.search(pattern, text)
        assert match and match.group("attn_implementation") == "sdpa"


def test_a_dtype_printed_by_msvc_is_read_without_its_struct_word():
    pattern, _ = pattern_of([(LIT, "Expected query, key, and value to have the same dtype, but got query.dtype: "),
                             ("ph", "query_dtype", ""), (LIT, " key.dtype: "), ("ph", "key_dtype", ""),
                             (LIT, " instead.")])
    match = re.search(pattern, "Expected query, key, and value to have the same dtype, but got query.dtype: struct "
                               "c10::Half key.dtype: float instead.")
    assert match and match.group("query_dtype") == "c10::Half" and match.group("key_dtype") == "float"


def _read_cpp(source: str) -> dict:
    from tools.messages import extract_cpp
    from tools.messages.model import template_of
    raws, _ = extract_cpp.extract(source)
    return {template_of(r.parts): r for r in raws}


def test_a_named_stream_is_the_message_of_the_check_that_prints_it():
    found = _read_cpp("""
      default: {                                         \\
        std::ostringstream err_msg;                      \\
        err_msg << "Unsupported head_dim: " << head_dim; \\
        FLASHINFER_ERROR(err_msg.str());                 \\
      }""")
    assert list(found) == ["Unsupported head_dim: {head_dim}"]


def test_a_message_streamed_after_a_tvm_check_is_read_with_its_condition():
    found = _read_cpp("""
      TVM_FFI_ICHECK(status == cudaSuccess)
          << "BatchPrefillWithRaggedKVCache failed with error " << cudaGetErrorString(status);
      TVM_FFI_ICHECK_EQ(lse.size(0), q.size(0));
      TVM_FFI_ICHECK_EQ(k_head_dim, nope_dim + rope_dim) << "k head_dim must equal nope_dim + rope_dim";""")
    assert set(found) == {"BatchPrefillWithRaggedKVCache failed with error {cudageterrorstring_status}",
                          "k head_dim must equal nope_dim + rope_dim"}
    assert found["k head_dim must equal nope_dim + rope_dim"].condition == "k_head_dim == nope_dim + rope_dim"


def test_flashinfer_checks_space_their_arguments_and_c10_str_does_not_format():
    found = _read_cpp("""
      FLASHINFER_CHECK(rows <= cap, "batch_prefill partial outputs need", rows, "rows");
      TORCH_CHECK(ok, "Expect (32 <= headDim <= 2048), got headDimQk=%d", headDimQk);
      TLLM_CHECK_WITH_INFO(ok, "Expect a positive count, got count=%d here", count);""")
    assert set(found) == {"batch_prefill partial outputs need {rows} rows",
                          "Expect (32 <= headDim <= 2048), got headDimQk=%d{headdimqk}",
                          "Expect a positive count, got count={count} here"}
