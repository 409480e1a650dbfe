"""The condition language: parsing, type checks at load, three-valued evaluation, residuals."""

from __future__ import annotations

import itertools

import pytest
from packaging.version import Version

from attndoctor.engine.expr import (
    UNKNOWN, BoolOp, ExprError, compile_node, free_names, in_range, parse, parse_value, render, residual,
)
from attndoctor.environment import ABSENT


def ev(text: str, **facts):
    return compile_node(parse(text))(facts)


@pytest.mark.parametrize("text, column, fragment", [
    ("hdm > 3", 1, "unknown name 'hdm'; did you mean 'hdim'?"),
    ("hdim >", 7, "expected a value"),
    ("hdim > 3 and", 13, "expected a value"),
    ("(hdim > 3", 10, "expected ')'"),
    ("hdim > 3)", 9, "unexpected ')'"),
    ("hdim @ 2", 6, "unexpected character '@'"),
    ("mask == 'causl'", 9, "mask is never 'causl'"),
    ("mask < 'causal'", 6, "does not order"),
    ("cudnn >= 'x.y'", 10, "is not a version"),
    ("cudnn >= 9", 10, "quoted version"),
    ("hdim + 1", 1, "must be true or false"),
    ("hdim in []", 9, "non-empty list"),
    ("hdim in [seqlen_q]", 10, "literal values"),
    ("foo(1)", 1, "unknown function 'foo'"),
    ("max(hdim)", 1, "takes 2 argument"),
    ("env(hdim) == ''", 5, "quoted name"),
    ("installed('numpy')", 11, "installed() takes one of"),
    ("train and hdim", 11, "joins true/false"),
    ("not hdim", 1, "'not' needs"),
    ("dtype == 3", 10, "cannot compare text with int"),
    ("hdim % 1.5 == 0", 6, "whole numbers"),
    ("[1, 2]", 1, "list can only stand"),
    ("", 1, "empty condition"),
])
def test_malformed_conditions_name_the_problem_and_column(text, column, fragment):
    with pytest.raises(ExprError) as info:
        parse(text)
    assert fragment in str(info.value)
    assert info.value.column == column


def test_arithmetic_precedence_and_functions():
    assert ev("(seqlen_q + 63) // 64 * 64 == 128", seqlen_q=100) is True
    assert ev("seqlen_q % 64 != 0", seqlen_q=16534) is True
    assert ev("max(hdim, hdim_v) > 128", hdim=128, hdim_v=192) is True
    assert ev("min(hdim, hdim_v) >= 64", hdim=128, hdim_v=32) is False
    assert ev("-window_left == 1", window_left=-1) is True
    assert ev("dropout > 0.05", dropout=0.1) is True


def test_membership_and_enums():
    assert ev("mask in ['causal', 'padding-causal']", mask="causal") is True
    assert ev("mask not in ['causal', 'padding-causal']", mask="none") is True
    assert ev("hdim in [64, 128]", hdim=96) is False


def test_versions_compare_as_versions_not_strings():
    assert ev("cudnn >= '9.10'", cudnn=Version("9.9.0")) is False
    assert ev("cudnn >= '9.10'", cudnn=Version("9.10.2")) is True
    assert ev("torch < '2.10'", torch=Version("2.9.1")) is True


def test_absent_package_makes_every_comparison_false():
    assert ev("flash_attn >= '2.6'", flash_attn=ABSENT) is False
    assert ev("flash_attn < '2.6'", flash_attn=ABSENT) is False
    assert ev("installed('flash_attn')", flash_attn=ABSENT) is False
    assert ev("installed('flash_attn')", flash_attn=Version("2.6.3")) is True
    assert ev("installed('flash_attn')") is UNKNOWN


def test_env_defaults_to_empty_and_api_to_unknown():
    assert ev("env('NVTE_FUSED_ATTN') == '0'") is False
    assert ev("env('NVTE_FUSED_ATTN') == '0'", **{"env:NVTE_FUSED_ATTN": "0"}) is True
    assert ev("api('flash_attn.x.softcap')") is UNKNOWN
    assert ev("api('flash_attn.x.softcap')", **{"api:flash_attn.x.softcap": True}) is True


VALUES = {True: "train", False: "not train", UNKNOWN: "train"}


@pytest.mark.parametrize("a, b", list(itertools.product([True, False, None], repeat=2)))
def test_kleene_truth_tables(a, b):
    facts = {}
    if a is not None:
        facts["train"] = a
    if b is not None:
        facts["deterministic"] = b
    av = UNKNOWN if a is None else a
    bv = UNKNOWN if b is None else b
    got_and = ev("train and deterministic", **facts)
    got_or = ev("train or deterministic", **facts)
    got_not = ev("not train", **facts)
    if av is False or bv is False:
        assert got_and is False
    elif av is UNKNOWN or bv is UNKNOWN:
        assert got_and is UNKNOWN
    else:
        assert got_and is True
    if av is True or bv is True:
        assert got_or is True
    elif av is UNKNOWN or bv is UNKNOWN:
        assert got_or is UNKNOWN
    else:
        assert got_or is False
    assert got_not is (UNKNOWN if av is UNKNOWN else (not av))


def test_unknown_propagates_through_arithmetic_and_comparison():
    assert ev("seqlen_q % 64 != 0") is UNKNOWN
    assert ev("seqlen_q % 64 != 0 and hdim > 300", hdim=128) is False


def test_division_by_zero_is_unknown_not_a_crash():
    assert ev("seqlen_q % (cp - 1) == 0", seqlen_q=8, cp=1) is UNKNOWN


def test_unknown_has_no_truth_value():
    with pytest.raises(TypeError):
        bool(UNKNOWN)


def test_residual_keeps_only_what_is_unknown():
    node = BoolOp(1, "and", (in_range("cudnn", ">=9.1,<9.5"),
                             parse("train and max(hdim, hdim_v) > 128 and not (sm == 90 and te >= '2.5')")))
    rest = residual(node, {"train": True, "hdim": 192, "hdim_v": 128, "sm": 90})
    assert render(rest) == "9.1 <= cudnn < 9.5 and not te >= 2.5"
    assert free_names(rest) == {"cudnn", "te"}
    decided = residual(node, {"train": False})
    assert render(decided) == "false"


def test_in_range_uses_version_order_and_sm_as_arch():
    node = in_range("sm", ">=80,<90")
    fn = compile_node(node)
    assert fn({"sm": 86}) is True and fn({"sm": 90}) is False and fn({"sm": 100}) is False
    assert fn({}) is UNKNOWN
    with pytest.raises(ExprError):
        in_range("hdim", ">=64")
    with pytest.raises(ExprError):
        in_range("cudnn", "9.1")


def test_parse_value_types():
    assert parse_value("(seqlen_q + 63) // 64 * 64")[1] == "int"
    assert parse_value("hdim")[1] == "int"
    assert parse_value(0.5)[1] == "number"


def test_parse_errors_draw_the_condition_with_a_caret_under_the_column():
    with pytest.raises(ExprError) as info:
        parse("hdim >> 128")
    first, source, caret = str(info.value).split("\n")
    assert first == "expected a value, found '>' (column 7)"
    assert source == "    hdim >> 128"
    assert caret == "    " + " " * 6 + "^"
    with pytest.raises(ExprError) as info:
        parse_value("seqlen_q +")
    assert str(info.value).split("\n")[1:] == ["    seqlen_q +", "    " + " " * 10 + "^"]


def test_tokens_carry_kind_value_and_column():
    from attndoctor.engine.expr import Token, tokenize

    assert tokenize("not hdim >= 64") == [Token("kw", "not", 1), Token("name", "hdim", 5), Token("op", ">=", 10),
                                          Token("num", 64, 13), Token("end", None, 15)]
