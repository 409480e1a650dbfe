"""Config validation names the field and what is accepted; config files of every kind load or fail cleanly."""

from __future__ import annotations

import json

import pytest

from attndoctor.config import make_config, parse_window
from attndoctor.sources.config_files import load_config_file
from attndoctor.errors import UsageError


@pytest.mark.parametrize("values, fragment", [
    ({"hdim": -3}, "hdim: expected a whole number"),
    ({"hdim": 0}, "hdim: expected a whole number"),
    ({"hdim": 12.5}, "hdim: expected a whole number"),
    ({"hdim": "abc"}, "hdim: expected a whole number"),
    ({"seqlen": 10**12}, "seqlen_q: expected a whole number"),
    ({"heads": 10**9}, "heads: expected a whole number"),
    ({"dtype": "int8"}, "dtype: expected one of bf16|fp16|fp32|fp8"),
    ({"mask": "diagonal"}, "mask: expected one of"),
    ({"bias": "relative"}, "bias: expected one of"),
    ({"layout": "xyz"}, "layout: expected one of"),
    ({"heads": 16, "kv_heads": 3}, "heads (16) must be a multiple of kv_heads (3)"),
    ({"kv_heads": 2}, "give heads too"),
    ({"dropout": 1.0}, "dropout: expected a number in [0, 1)"),
    ({"dropout": -0.1}, "dropout"),
    ({"dropout": "x"}, "dropout: expected a number"),
    ({"softcap": -1}, "softcap"),
    ({"window": "a,b"}, "window: expected L,R"),
    ({"window": "1,2,3"}, "window: expected L,R"),
    ({"window": "-2,0"}, "window: expected L,R"),
    ({"train": "maybe"}, "train: expected true or false"),
    ({"cp_comm": "ring"}, "cp_comm: expected one of"),
    ({"hdm": 64}, "unknown config field 'hdm'"),
])
def test_bad_values_are_named(values, fragment):
    with pytest.raises(UsageError) as info:
        make_config(values)
    assert fragment in str(info.value)


def test_defaults_follow_and_switches_are_off():
    c = make_config({"heads": 32, "hdim": 128, "seqlen": 4096})
    assert (c.kv_heads, c.hdim_v, c.seqlen_kv) == (32, 128, 4096)
    assert (c.dropout, c.window, c.softcap, c.bias, c.cp, c.deterministic, c.qkv_fused) == \
        (0.0, (-1, -1), 0.0, "none", 1, False, False)
    assert c.dtype is None and c.train is None and c.batch is None


def test_aliases_and_layouts():
    c = make_config({"dtype": "bfloat16", "mask": "padding_causal", "layout": "sb3hd", "causal": False})
    assert (c.dtype, c.mask, c.qkv_format) == ("bf16", "padding-causal", "sbhd")
    assert make_config({"layout": "paged_kv_thd_bshd_bshd"}).qkv_format == "thd"
    assert make_config({"causal": True}).mask == "causal"


def test_window_forms():
    assert parse_window("4096,0") == (4096, 0)
    assert parse_window(4096) == (4096, 0)
    assert parse_window([-1, -1]) == (-1, -1)
    assert parse_window("none") == (-1, -1)


def test_config_files(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps({"hdim": 64, "heads": 8}))
    (tmp_path / "b.json").write_text(json.dumps([{"hdim": 64}, {"hdim": 128, "train": True}]))
    (tmp_path / "c.jsonl").write_text('{"hdim": 64}\n\n{"hdim": 96}\n')
    (tmp_path / "d.toml").write_text('[[config]]\nhdim = 64\n[[config]]\nhdim = 256\nwindow = [4096, 0]\n')
    assert [c.hdim for c in load_config_file(tmp_path / "a.json")] == [64]
    assert [c.hdim for c in load_config_file(tmp_path / "b.json")] == [64, 128]
    assert [c.hdim for c in load_config_file(tmp_path / "c.jsonl")] == [64, 96]
    assert [c.window for c in load_config_file(tmp_path / "d.toml")] == [(-1, -1), (4096, 0)]


@pytest.mark.parametrize("name, content, fragment", [
    ("missing.json", None, "no such config file"),
    ("empty.json", "", "empty config file"),
    ("trunc.json", '{"hdim": 6', "not valid JSON"),
    ("bin.json", b"\x00\x01\x02\xff", "not a text file"),
    ("types.json", '{"hdim": "big"}', "config 1: hdim: expected a whole number"),
    ("list.json", '[1, 2]', "a config must be an object"),
    ("bad.toml", "[[config]\nhdim = 1", "not valid TOML"),
    ("none.toml", "title = 'x'", "no [[config]] tables"),
    ("bad.jsonl", '{"hdim": 64}\n{oops}\n', "bad.jsonl:2: not valid JSON"),
    ("conf.yaml", "hdim: 64", "unknown config file type .yaml"),
])
def test_bad_config_files(tmp_path, name, content, fragment):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(UsageError) as info:
        load_config_file(path)
    assert fragment in str(info.value)


def test_config_files_carry_their_lines(tmp_path):
    """Each config read from a file knows the file and the 1-based line it starts on (report locations)."""
    (tmp_path / "c.jsonl").write_text('{"hdim": 64}\n\n{"hdim": 96}\n')
    (tmp_path / "b.json").write_text('[\n  {"hdim": 64},\n\n  {"hdim": 128,\n   "train": true}\n]\n')
    (tmp_path / "a.json").write_text('\n\n{"hdim": 64}')
    (tmp_path / "d.toml").write_text('title = "x"\n\n[[config]]\nhdim = 64\n[[config]]\nhdim = 256\n')
    (tmp_path / "e.toml").write_text('config = [{hdim = 64}]\n')
    assert [c.source for c in load_config_file(tmp_path / "c.jsonl")] == [(str(tmp_path / "c.jsonl"), 1),
                                                                          (str(tmp_path / "c.jsonl"), 3)]
    assert [c.source[1] for c in load_config_file(tmp_path / "b.json")] == [2, 4]
    assert [c.source[1] for c in load_config_file(tmp_path / "a.json")] == [3]
    assert [c.source[1] for c in load_config_file(tmp_path / "d.toml")] == [3, 5]
    assert [c.source[1] for c in load_config_file(tmp_path / "e.toml")] == [0]


def test_jsonl_is_read_lazily_and_errors_name_the_line(tmp_path):
    """A .jsonl file yields config by config: a bad line is reported with file:line only when it is reached."""
    from attndoctor.sources.config_files import iter_config_file

    path = tmp_path / "big.jsonl"
    path.write_text('{"hdim": 64}\n{"hdim": 96}\n{"hdim": "big"}\n{oops}\n')
    configs = iter_config_file(path)
    assert next(configs).hdim == 64
    assert next(configs).hdim == 96
    with pytest.raises(UsageError, match=r"big\.jsonl:3: hdim: expected a whole number"):
        next(configs)
    path.write_text('{"hdim": 64}\n' * 3 + "{oops}\n")
    with pytest.raises(UsageError, match=r"big\.jsonl:4: not valid JSON"):
        load_config_file(path)
    (tmp_path / "deep.jsonl").write_text("[" * 100_000 + "\n")
    with pytest.raises(UsageError, match=r"deep\.jsonl:1: JSON nested too deeply"):
        load_config_file(tmp_path / "deep.jsonl")
    (tmp_path / "t.json").write_text('[{"hdim": 64},\n {"hdim": "big"}]')
    with pytest.raises(UsageError, match=r"t\.json:2: config 2: hdim"):
        load_config_file(tmp_path / "t.json")


def test_a_thd_config_that_names_no_mask_has_a_padding_one():
    """Packed sequences carry their boundaries in cu_seqlens: TE asserts a padding mask type for thd."""
    assert make_config({"hdim": 128, "layout": "thd"}).mask == "padding"
    assert make_config({"hdim": 128, "layout": "thd", "mask": "padding-causal"}).mask == "padding-causal"
    assert make_config({"hdim": 128, "layout": "thd", "causal": True}).mask == "causal"
    assert make_config({"hdim": 128}).mask == "none"
