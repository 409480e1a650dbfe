"""The field table is the config vocabulary: every row reaches the config type, its validation, the rule language,
the CLI options and their help, with nothing to add by hand (docs/fields.md: adding a field)."""

from __future__ import annotations

import re

import pytest

from attndoctor import config, fields
from attndoctor.cli import options
from attndoctor.config import AttentionConfig, make_config
from attndoctor.engine import evaluate, expr
from attndoctor.errors import UsageError
from attndoctor.fields import BOOL, INT, NUM, STR, TABLE, WINDOW

SAMPLE = {INT: 3, NUM: 0.25, BOOL: True, WINDOW: (128, 0), STR: "x"}
CONDITION = {INT: "{} > 2", NUM: "{} > 0.5", BOOL: "{}", STR: "{} == '{}'"}


def _alone(name: str, value: object) -> dict[str, object]:
    """A config giving one field (kv_heads needs heads beside it, a multiple of it)."""
    return {name: value, "heads": value} if name == "kv_heads" else {name: value}


def _options() -> dict[str, object]:
    """Every config parameter of the CLI by flag."""
    out = {}
    for param in options.config_params():
        for flag in param.default.param_decls:
            out[flag] = param.default
    return out


@pytest.mark.parametrize("field", TABLE, ids=lambda f: f.name)
def test_a_row_reaches_the_config_type(field):
    assert field.name in AttentionConfig._fields
    assert getattr(AttentionConfig(), field.name) == field.default
    assert field.name in config.FIELDS
    value = field.choices[-1] if field.choices else SAMPLE[field.type]
    assert getattr(make_config(_alone(field.name, value)), field.name) == value
    assert field.name in make_config(_alone(field.name, value)).to_dict()


@pytest.mark.parametrize("field", [f for f in TABLE if f.choices], ids=lambda f: f.name)
def test_a_row_with_choices_validates_them_and_their_aliases(field):
    for choice in field.choices:
        assert getattr(make_config({field.name: choice}), field.name) == choice
    for alias, target in (field.aliases or {}).items():
        if alias == alias.lower():
            assert getattr(make_config({field.name: alias}), field.name) == target
    with pytest.raises(UsageError, match=re.escape(f"{field.name}: expected one of {'|'.join(field.choices)}")):
        make_config({field.name: "nonesuch"})


@pytest.mark.parametrize("field", [f for f in TABLE if f.type == INT], ids=lambda f: f.name)
def test_an_int_row_has_its_limit(field):
    assert config.LIMITS[field.name] == field.limit
    assert getattr(make_config(_alone(field.name, field.limit)), field.name) == field.limit
    assert getattr(make_config(_alone(field.name, field.low)), field.name) == field.low
    for outside in (field.limit + 1, field.low - 1):
        expected = f"{field.name}: expected a whole number from {field.low} to {field.limit}"
        with pytest.raises(UsageError, match=expected):
            make_config({field.name: outside})


@pytest.mark.parametrize("field", [f for f in TABLE if f.type in (INT, NUM, BOOL)], ids=lambda f: f.name)
def test_a_file_writes_numbers_and_switches_without_quotes(field):
    assert field.name in config.NUMBER_FIELDS
    with pytest.raises(UsageError, match="write it without quotes"):
        make_config({field.name: "1"}, typed=True)


@pytest.mark.parametrize("field", TABLE, ids=lambda f: f.name)
def test_a_fact_row_is_a_name_of_the_rule_language(field):
    if not field.fact:
        assert field.name not in expr.VARIABLES and field.name not in evaluate.CONFIG_FACTS
        return
    assert expr.VARIABLES[field.name] == (field.type, field.choices, field.doc)
    assert field.name in expr.CONFIG_VARIABLES and field.name in evaluate.CONFIG_FACTS
    condition = CONDITION[field.type].format(field.name, (field.choices or ("x",))[0])
    assert expr.free_names(expr.parse(condition)) == {field.name}


def test_the_derived_facts_are_names_of_the_rule_language():
    config_facts = evaluate.config_facts(make_config({"window": "64,0", "layout": "thd"}))
    for name, kind, choices, _doc in fields.DERIVED_FACTS:
        assert expr.VARIABLES[name][:2] == (kind, choices)
        assert name in config_facts and name in evaluate.CONFIG_FACTS_ALL
    assert set(evaluate.CONFIG_FACTS_ALL) == set(fields.FACTS) | {d[0] for d in fields.DERIVED_FACTS}


@pytest.mark.parametrize("field", [f for f in TABLE if f.flag], ids=lambda f: f.name)
def test_a_row_with_a_flag_is_a_cli_option_with_its_help(field, cli):
    option = _options()[field.flag]
    assert option.help == field.help_text
    for choice in field.choices if "{choices}" in field.help else ():
        assert choice in option.help
    if field.type != BOOL:
        assert option.metavar == field.metavar == options.METAVARS[field.name]
    code, out, _ = cli("explain", "--help")
    assert code == 0 and field.flag in out
    if field.off_flag:
        assert _options()[field.off_flag].help == field.off_help and field.off_flag in out


def test_mask_help_names_every_mask():
    """The help once drifted from the masks config accepts (padding-causal-bottom-right was missing)."""
    assert _options()["--mask"].help.startswith(" | ".join(fields.MASKS) + ".")


@pytest.mark.parametrize("shorthand", fields.SHORTHANDS, ids=lambda s: s.name)
def test_a_shorthand_is_a_cli_option_and_a_config_key(shorthand):
    assert _options()[shorthand.flag].help == shorthand.help
    assert shorthand.name in config.NUMBER_FIELDS
    value = 256 if shorthand.type == INT else True
    made = make_config({shorthand.name: value})
    if shorthand.type == INT:
        assert (made.seqlen_q, made.seqlen_kv) == (256, 256)
    else:
        assert made.mask == "causal"


def test_the_report_schema_lists_the_table():
    """The JSON schema is a file, not code: it must name every row, in the order the JSON writes them."""
    import json
    from pathlib import Path

    schema = json.loads((Path(config.__file__).parent / "schema" / "report-v1.json").read_text(encoding="utf-8"))
    described = schema["$defs"]["config"]
    assert described["required"] == list(fields.FIELDS)
    assert [k for k in described["properties"] if k != "origin"] == list(fields.FIELDS)
    for field in (f for f in TABLE if f.choices and f.name != "layout"):
        enum = described["properties"][field.name]["enum"]
        assert [v for v in enum if v is not None] == list(field.choices), field.name


def test_new_config_facts_round_trip_and_bad_values(cli, explain):
    doc = explain("--hdim", "128", "--heads", "16", "--seqlen", "4096", "--train", "--gpu", "H100", "--dtype", "fp8",
                  "--fp8-recipe", "current", "--sdpa-flash-impl", "fa3", exit=0)
    result = doc["results"][0]
    assert result["config"]["fp8_recipe"] == "current" and result["config"]["sdpa_flash_impl"] == "fa3"
    code, _, err = cli("explain", "--hdim", "64", "--fp8-recipe", "mx")
    assert code == 2 and "fp8_recipe" in err and "mxfp8" in err
    code, _, err = cli("explain", "--hdim", "64", "--sdpa-flash-impl", "fa5")
    assert code == 2 and "sdpa_flash_impl" in err


@pytest.mark.parametrize(("given", "length"), [("128k", 131072), ("32K", 32768), ("8192", 8192), (" 4k ", 4096)])
def test_a_length_takes_k_for_1024(given, length):
    assert make_config({"hdim": 128, "seqlen": given}).seqlen_kv == length


@pytest.mark.parametrize(("field", "given"), [("seqlen", "1.5k"), ("seqlen", "k"), ("hdim", "12k"), ("batch", "2k")])
def test_k_is_refused_where_it_is_no_length_or_not_whole(field, given):
    with pytest.raises(UsageError):
        make_config({"hdim": 128, field: given})
