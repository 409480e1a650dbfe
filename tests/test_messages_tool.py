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
