"""Hugging Face config.json → one AttentionConfig per attention kind, each field with the key it came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attndoctor.errors import UsageError
from attndoctor.sources.models import configs_from_model

MODELS = Path(__file__).parent / "fixtures" / "models"


def load(name: str, **kwargs):
    return configs_from_model(MODELS / name, **kwargs)


def write(tmp_path: Path, doc, name: str = "m") -> Path:
    folder = tmp_path / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return folder


# name, [(config name, heads, kv_heads, hdim, hdim_v, window, softcap, bias, mask, dtype, seqlen)]
EXPECTED = {
    "DeepSeek-V3": [("DeepSeek-V3", 128, 128, 192, 128, (-1, -1), 0.0, "none", "causal", "bf16", 8192)],
    "Kimi-K2-Instruct": [("Kimi-K2-Instruct", 64, 64, 192, 128, (-1, -1), 0.0, "none", "causal", "bf16", 8192)],
    "gemma-2-9b": [
        ("gemma-2-9b local (sliding window)", 16, 8, 256, 256, (4096, 0), 50.0, "none", "causal", "fp32", 8192),
        ("gemma-2-9b global", 16, 8, 256, 256, (-1, -1), 50.0, "none", "causal", "fp32", 8192),
    ],
    "gemma-3-12b-it": [
        ("gemma-3-12b-it local (sliding window)", 16, 8, 256, 256, (1024, 0), 0.0, "none", "causal", "bf16", 8192),
        ("gemma-3-12b-it global", 16, 8, 256, 256, (-1, -1), 0.0, "none", "causal", "bf16", 8192),
        ("gemma-3-12b-it local (sliding window) with image tokens", 16, 8, 256, 256, (1024, 0), 0.0, "none",
         "arbitrary", "bf16", 8192),
        ("gemma-3-12b-it global with image tokens", 16, 8, 256, 256, (-1, -1), 0.0, "none", "arbitrary", "bf16",
         8192),
        ("gemma-3-12b-it vision tower", 16, 16, 72, 72, (-1, -1), 0.0, "none", "none", "bf16", 4096),
    ],
    "Qwen2.5-7B": [("Qwen2.5-7B", 28, 4, 128, 128, (-1, -1), 0.0, "none", "causal", "bf16", 8192)],
    "falcon-7b": [("falcon-7b", 71, 1, 64, 64, (-1, -1), 0.0, "none", "causal", "bf16", None)],
    "Phi-3-mini-4k-instruct": [
        ("Phi-3-mini-4k-instruct", 32, 32, 96, 96, (2047, 0), 0.0, "none", "causal", "bf16", 4096)],
    "Meta-Llama-3-8B": [("Meta-Llama-3-8B", 32, 8, 128, 128, (-1, -1), 0.0, "none", "causal", "bf16", 8192)],
    "Mistral-7B-v0.1": [("Mistral-7B-v0.1", 32, 8, 128, 128, (4096, 0), 0.0, "none", "causal", "bf16", 8192)],
    "Mixtral-8x7B-v0.1": [("Mixtral-8x7B-v0.1", 32, 8, 128, 128, (-1, -1), 0.0, "none", "causal", "bf16", 8192)],
    "bert-base-uncased": [("bert-base-uncased", 12, 12, 64, 64, (-1, -1), 0.0, "none", "padding", None, 512)],
    "bloom-560m": [("bloom-560m", 16, 16, 64, 64, (-1, -1), 0.0, "alibi", "causal", None, None)],
    # the families of tests/test_models_families.py
    "gpt-oss-20b": [
        ("gpt-oss-20b local (sliding window)", 64, 8, 64, 64, (128, 0), 0.0, "none", "causal", None, 8192),
        ("gpt-oss-20b global", 64, 8, 64, 64, (-1, -1), 0.0, "none", "causal", None, 8192),
    ],
    "SmolLM3-3B": [("SmolLM3-3B", 16, 4, 128, 128, (-1, -1), 0.0, "none", "causal", "bf16", 8192)],
    "Qwen3-4B": [("Qwen3-4B", 32, 8, 128, 128, (-1, -1), 0.0, "none", "causal", "bf16", 8192)],
    "DeepSeek-V3.2-Exp": [("DeepSeek-V3.2-Exp", 128, 128, 192, 128, (-1, -1), 0.0, "none", "arbitrary", None, 8192)],
    "gemma-4-31B-it": [
        ("gemma-4-31B-it local (sliding window)", 32, 16, 256, 256, (1024, 0), 0.0, "none", "causal", "bf16", 8192),
        ("gemma-4-31B-it global", 32, 4, 512, 512, (-1, -1), 0.0, "none", "causal", "bf16", 8192),
        ("gemma-4-31B-it local (sliding window) with image tokens", 32, 16, 256, 256, (1024, 0), 0.0, "none",
         "arbitrary", "bf16", 8192),
        ("gemma-4-31B-it vision tower", 16, 16, 72, 72, (-1, -1), 0.0, "none", "none", "bf16", None),
    ],
    "gemma-4-E2B-it": [
        ("gemma-4-E2B-it local (sliding window)", 8, 1, 256, 256, (512, 0), 0.0, "none", "causal", "bf16", 8192),
        ("gemma-4-E2B-it global", 8, 1, 512, 512, (-1, -1), 0.0, "none", "causal", "bf16", 8192),
        ("gemma-4-E2B-it vision tower", 12, 12, 64, 64, (-1, -1), 0.0, "none", "none", "bf16", None),
    ],
    "Qwen3.5-9B": [
        ("Qwen3.5-9B", 16, 4, 256, 256, (-1, -1), 0.0, "none", "causal", "bf16", 8192),
        ("Qwen3.5-9B vision tower", 16, 16, 72, 72, (-1, -1), 0.0, "none", "none", "bf16", None),
    ],
    "phi-4": [("phi-4", 40, 10, 128, 128, (-1, -1), 0.0, "none", "causal", "bf16", 8192)],
    "Devstral-Small-2-24B-Instruct-2512": [
        ("Devstral-Small-2-24B-Instruct-2512", 32, 8, 128, 128, (-1, -1), 0.0, "none", "causal", "bf16", 8192),
        ("Devstral-Small-2-24B-Instruct-2512 vision tower", 16, 16, 64, 64, (-1, -1), 0.0, "none", "none", "bf16",
         (1540 // 14) ** 2),
    ],
    "MiniMax-M2": [("MiniMax-M2", 48, 8, 128, 128, (-1, -1), 0.0, "none", "causal", None, 8192)],
    # at the 8192 default the chunked layers hold one chunk of 8192: their mask is causal
    "Llama-4-Scout-17B-16E-Instruct": [
        ("Llama-4-Scout-17B-16E-Instruct chunked", 40, 8, 128, 128, (-1, -1), 0.0, "none", "causal", "bf16", 8192),
        ("Llama-4-Scout-17B-16E-Instruct global (NoPE)", 40, 8, 128, 128, (-1, -1), 0.0, "none", "causal", "bf16",
         8192),
    ],
    "Llama-4-Maverick-17B-128E-Instruct": [
        ("Llama-4-Maverick-17B-128E-Instruct chunked", 40, 8, 128, 128, (-1, -1), 0.0, "none", "causal", "bf16",
         8192),
        ("Llama-4-Maverick-17B-128E-Instruct global (NoPE)", 40, 8, 128, 128, (-1, -1), 0.0, "none", "causal",
         "bf16", 8192),
    ],
    "MiniMax-M1": [("MiniMax-M1", 64, 8, 128, 128, (-1, -1), 0.0, "none", "causal", None, 8192)],
    "Qwen3-Next-80B-A3B-Instruct": [
        ("Qwen3-Next-80B-A3B-Instruct", 16, 2, 256, 256, (-1, -1), 0.0, "none", "causal", "bf16", 8192),
    ],
}


def test_every_fixture_is_covered():
    assert sorted(p.name for p in MODELS.iterdir() if (p / "config.json").is_file()) == sorted(EXPECTED)


@pytest.mark.parametrize("model", sorted(EXPECTED))
def test_fixture_numbers(model):
    got = [(c.name, c.heads, c.kv_heads, c.hdim, c.hdim_v, c.window, c.softcap, c.bias, c.mask, c.dtype, c.seqlen_q)
           for c in load(model)]
    assert got == EXPECTED[model]
    for config in load(model):
        assert config.seqlen_kv == config.seqlen_q
        assert config.train is None and config.batch is None and config.layout is None


def test_acceptance():
    (ds,) = load("DeepSeek-V3")
    assert (ds.hdim, ds.hdim_v, ds.heads) == (192, 128, 128)
    local, glob = load("gemma-2-9b")
    assert (local.hdim, local.softcap, local.window) == (256, 50.0, (4096, 0))
    assert (glob.hdim, glob.softcap, glob.window) == (256, 50.0, (-1, -1))
    (qwen,) = load("Qwen2.5-7B")
    assert qwen.window == (-1, -1)
    (falcon,) = load("falcon-7b")
    assert falcon.kv_heads == 1
    (phi,) = load("Phi-3-mini-4k-instruct")
    assert (phi.hdim, phi.window) == (96, (2047, 0))


def test_origin_records_the_keys():
    (ds,) = load("DeepSeek-V3")
    assert ds.origin["hdim"].startswith("qk_nope_head_dim + qk_rope_head_dim (128 + 64")
    assert ds.origin["hdim_v"] == "v_head_dim"
    assert ds.origin["heads"] == "num_attention_heads"
    assert "MLA" in ds.origin["kv_heads"]
    assert ds.origin["dtype"] == "torch_dtype (bfloat16)"
    assert ds.origin["seqlen_q"].startswith("max_position_embeddings (163840), capped at 8192")

    local, glob = load("gemma-2-9b")
    assert local.origin["hdim"] == "head_dim"
    assert local.origin["softcap"] == "attn_logit_softcapping"
    assert local.origin["window"].startswith("sliding_window (4096, 0)")
    assert "21 of 42 layers" in local.origin["window"]
    assert "no window" in glob.origin["window"]
    assert local.origin["seqlen_q"] == "max_position_embeddings"

    (qwen,) = load("Qwen2.5-7B")
    assert qwen.origin["window"].startswith("use_sliding_window=false: no window")
    assert qwen.origin["hdim"] == "hidden_size/num_attention_heads (3584/28)"
    assert qwen.origin["kv_heads"] == "num_key_value_heads"

    (falcon,) = load("falcon-7b")
    assert falcon.origin["kv_heads"] == "multi_query=true (one KV head)"
    assert falcon.origin["bias"] == "alibi=false: no bias"
    assert "seqlen_q" not in falcon.origin

    (bloom,) = load("bloom-560m")
    assert bloom.origin["hdim"] == "hidden_size/n_head (1024/16)"
    assert "bloom" in bloom.origin["bias"]

    (bert,) = load("bert-base-uncased")
    assert "encoder" in bert.origin["mask"] and "dtype" not in bert.origin

    local3, glob3, _image_local3, _image_glob3, _vision3 = load("gemma-3-12b-it")
    assert local3.origin["heads"] == "text_config.num_attention_heads"
    assert local3.origin["hdim"] == "text_config.head_dim absent: gemma3_text default 256"
    assert local3.origin["window"].startswith("text_config.sliding_window (1024, 0)")
    assert "40 of 48 layers" in local3.origin["window"] and "8 of 48 layers" in glob3.origin["window"]
    assert local3.origin["dtype"] == "torch_dtype (bfloat16)"

    for model in EXPECTED:
        for config in load(model):
            assert {"heads", "kv_heads", "hdim", "mask", "window"} <= set(config.origin)
            assert config.to_dict()["origin"] == dict(config.origin)


def test_seqlen_argument_wins():
    (llama,) = load("Meta-Llama-3-8B", seqlen=2048)
    assert (llama.seqlen_q, llama.seqlen_kv) == (2048, 2048)
    assert llama.origin["seqlen_q"] == "the seqlen given"
    (falcon,) = load("falcon-7b", seqlen=1024)
    assert falcon.seqlen_q == 1024


def test_a_config_json_path_and_a_folder_agree():
    assert load("Mistral-7B-v0.1") == configs_from_model(str(MODELS / "Mistral-7B-v0.1" / "config.json"))


def test_name_from_name_or_path_and_the_hf_cache(tmp_path):
    base = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32}
    (c,) = configs_from_model(write(tmp_path, {**base, "_name_or_path": "meta-llama/Llama-2-7b-hf"}))
    assert c.name == "Llama-2-7b-hf"
    snap = tmp_path / "models--org--My-Model" / "snapshots" / ("a" * 40)
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(base))
    assert configs_from_model(snap)[0].name == "My-Model"
    (tmp_path / "other.json").write_text(json.dumps(base))
    assert configs_from_model(tmp_path / "other.json")[0].name == "other"


QWEN_SW = {"model_type": "qwen2", "hidden_size": 1024, "num_attention_heads": 16, "num_key_value_heads": 2,
           "num_hidden_layers": 24, "sliding_window": 4096, "use_sliding_window": True, "max_window_layers": 12}


def test_qwen_sliding_window_above_max_window_layers(tmp_path):
    glob, local = configs_from_model(write(tmp_path, QWEN_SW, "qwen-sw"))
    assert (glob.name, glob.window) == ("qwen-sw global", (-1, -1))
    assert (local.name, local.window) == ("qwen-sw local (sliding window)", (4096, 0))
    assert "max_window_layers=12" in local.origin["window"]


def test_qwen_max_window_layers_covering_every_layer_means_no_window(tmp_path):
    (only,) = configs_from_model(write(tmp_path, {**QWEN_SW, "max_window_layers": 24}))
    assert only.window == (-1, -1) and "covers all 24 layers" in only.origin["window"]
    (every,) = configs_from_model(write(tmp_path, {**QWEN_SW, "max_window_layers": 0}))
    assert every.window == (4096, 0)


def test_qwen_without_use_sliding_window_has_no_window(tmp_path):
    doc = {k: v for k, v in QWEN_SW.items() if k != "use_sliding_window"}
    (only,) = configs_from_model(write(tmp_path, doc))
    assert only.window == (-1, -1) and "Qwen default false" in only.origin["window"]


def test_layer_types_list(tmp_path):
    doc = {"model_type": "gpt_oss", "head_dim": 64, "num_attention_heads": 64, "num_key_value_heads": 8,
           "num_hidden_layers": 4, "sliding_window": 128, "torch_dtype": "bfloat16",
           "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"]}
    local, glob = configs_from_model(write(tmp_path, doc, "gpt-oss"))
    assert (local.name, local.window, local.hdim) == ("gpt-oss local (sliding window)", (128, 0), 64)
    assert (glob.name, glob.window) == ("gpt-oss global", (-1, -1))
    assert local.origin["window"].startswith("sliding_window (128, 0): layer_types: 2 of 4 layers")


def test_layer_types_skip_linear_attention_and_one_kind_keeps_the_plain_name(tmp_path):
    doc = {"model_type": "qwen3_next", "head_dim": 256, "num_attention_heads": 16, "num_key_value_heads": 2,
           "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"]}
    (only,) = configs_from_model(write(tmp_path, doc, "next"))
    assert (only.name, only.window, only.hdim) == ("next", (-1, -1), 256)


def test_layer_types_chunked_attention(tmp_path):
    doc = {"model_type": "llama4_text", "head_dim": 128, "num_attention_heads": 40, "num_key_value_heads": 8,
           "attention_chunk_size": 8192, "layer_types": ["chunked_attention", "full_attention"]}
    chunked, glob = configs_from_model(write(tmp_path, doc, "l4"))
    assert (chunked.mask, glob.mask) == ("arbitrary", "causal")
    assert "attention_chunk_size=8192" in chunked.origin["mask"]


def test_gemma3_layer_types_and_use_sliding_window_false(tmp_path):
    doc = {"model_type": "gemma3_text", "head_dim": 256, "num_attention_heads": 4, "num_key_value_heads": 1,
           "sliding_window": 512, "layer_types": ["sliding_attention"] * 5 + ["full_attention"]}
    local, glob = configs_from_model(write(tmp_path, doc, "g3"))
    assert (local.window, glob.window) == ((512, 0), (-1, -1))
    off = {**doc, "use_sliding_window": False}
    (only,) = configs_from_model(write(tmp_path, off, "g3off"))
    assert only.window == (-1, -1) and "use_sliding_window=false" in only.origin["window"]


def test_nested_llm_config_and_naming_variants(tmp_path):
    internvl = {"model_type": "internvl_chat", "torch_dtype": "bfloat16",
                "llm_config": {"model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28,
                               "num_key_value_heads": 4, "max_position_embeddings": 32768}}
    (c,) = configs_from_model(write(tmp_path, internvl, "ivl"))
    assert (c.heads, c.kv_heads, c.hdim, c.dtype) == (28, 4, 128, "bf16")
    assert c.origin["hdim"] == "llm_config.hidden_size/llm_config.num_attention_heads (3584/28)"

    gpt2 = {"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_positions": 1024}
    (c,) = configs_from_model(write(tmp_path, gpt2, "gpt2"))
    assert (c.heads, c.hdim, c.seqlen_q, c.origin["hdim"]) == (12, 64, 1024, "n_embd/n_head (768/12)")

    t5 = {"model_type": "t5", "d_model": 512, "num_heads": 8, "d_kv": 64}
    (c,) = configs_from_model(write(tmp_path, t5, "t5"))
    assert (c.heads, c.hdim, c.origin["hdim"]) == (8, 64, "d_kv")

    mpt = {"model_type": "mpt", "d_model": 4096, "n_heads": 32, "max_seq_len": 2048,
           "attn_config": {"alibi": True, "attn_type": "multihead_attention"}}
    (c,) = configs_from_model(write(tmp_path, mpt, "mpt"))
    assert (c.heads, c.hdim, c.bias, c.origin["bias"]) == (32, 128, "alibi", "attn_config.alibi=true")

    falcon40 = {"model_type": "falcon", "hidden_size": 8192, "num_attention_heads": 128, "num_kv_heads": 8,
                "new_decoder_architecture": True, "alibi": False}
    (c,) = configs_from_model(write(tmp_path, falcon40, "f40"))
    assert c.kv_heads == 8 and "new_decoder_architecture" in c.origin["kv_heads"]

    starcoder = {"model_type": "gpt_bigcode", "n_embd": 6144, "n_head": 48, "multi_query": True}
    (c,) = configs_from_model(write(tmp_path, starcoder, "sc"))
    assert (c.kv_heads, c.hdim) == (1, 128)

    alibi = {"model_type": "falcon", "hidden_size": 2048, "num_attention_heads": 32, "alibi": True,
             "multi_query": False, "dtype": "float16"}
    (c,) = configs_from_model(write(tmp_path, alibi, "rw"))
    assert (c.bias, c.kv_heads, c.dtype, c.origin["dtype"]) == ("alibi", 32, "fp16", "dtype (float16)")


def test_explicit_null_head_dim_falls_back_to_the_division(tmp_path):
    doc = {"model_type": "mistral", "hidden_size": 5120, "num_attention_heads": 32, "num_key_value_heads": 8,
           "head_dim": None, "sliding_window": None}
    (c,) = configs_from_model(write(tmp_path, doc))
    assert (c.hdim, c.window) == (160, (-1, -1))
    (c,) = configs_from_model(write(tmp_path, {**doc, "head_dim": 128}))
    assert c.hdim == 128


def test_unknown_dtype_stays_unknown(tmp_path):
    doc = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 1, "torch_dtype": "int8"}
    (c,) = configs_from_model(write(tmp_path, doc))
    assert c.dtype is None and "unknown" in c.origin["dtype"]


HEADS = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32}


@pytest.mark.parametrize("doc, fragments", [
    (None, ["no such file or folder", "config.json"]),
    ("folder", ["folder has no config.json"]),
    ("{not json", ["not valid JSON"]),
    ("", ["empty file"]),
    ("[1, 2]", ["expected a JSON object", "got a JSON list"]),
    ('"text"', ["expected a JSON object", "got a JSON string"]),
    ({"model_type": "llama", "hidden_size": 4096}, ["no attention head count", "num_attention_heads", "n_head"]),
    ({"model_type": "llama", "num_attention_heads": 32}, ["no head dim", "head_dim", "hidden_size"]),
    ({"hidden_size": 100, "num_attention_heads": 3}, ["hidden_size (100) is not a multiple of num_attention_heads"]),
    ({**HEADS, "head_dim": "abc"}, ["head_dim: expected a whole number >= 1, got 'abc'"]),
    ({**HEADS, "num_attention_heads": True}, ["num_attention_heads: expected a whole number"]),
    ({**HEADS, "num_attention_heads": -4}, ["num_attention_heads: expected a whole number"]),
    ({**HEADS, "num_key_value_heads": 5}, ["heads (32) must be a multiple of kv_heads (5)"]),
    ({**HEADS, "sliding_window": "big"}, ["sliding_window: expected a whole number"]),
    ({**HEADS, "use_sliding_window": "yes", "sliding_window": 4}, ["use_sliding_window: expected true or false"]),
    ({**HEADS, "attn_logit_softcapping": "x"}, ["attn_logit_softcapping: expected a number"]),
    ({**HEADS, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64}, ["v_head_dim"]),
    ({**HEADS, "layer_types": ["mystery"]}, ["layer_types: unknown layer kind 'mystery'", "full_attention"]),
    ({**HEADS, "layer_types": "full"}, ["layer_types: expected a list"]),
    ({**HEADS, "layer_types": ["linear_attention"]}, ["no softmax attention layers"]),
    ({"model_type": "gemma3", "text_config": {"model_type": "siglip"}}, ["no attention head count"]),
])
def test_bad_input_is_one_usage_line(tmp_path, doc, fragments):
    if doc is None:
        target = tmp_path / "missing"
    elif doc == "folder":
        target = tmp_path / "empty"
        target.mkdir()
    else:
        target = write(tmp_path, doc)
    with pytest.raises(UsageError) as info:
        configs_from_model(target)
    message = str(info.value)
    assert "\n" not in message and len(message) < 300
    assert str(target) in message
    for fragment in fragments:
        assert fragment in message


def test_bad_seqlen_argument_is_a_usage_error():
    with pytest.raises(UsageError, match="seqlen_q: expected a whole number"):
        load("Meta-Llama-3-8B", seqlen=0)


def test_not_utf8_is_a_usage_error(tmp_path):
    (tmp_path / "config.json").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(UsageError, match="not a text file"):
        configs_from_model(tmp_path)


def test_a_nested_config_saved_as_a_diff_takes_the_class_defaults(tmp_path):
    llava = {"model_type": "llava", "torch_dtype": "float16",
             "text_config": {"model_type": "llama", "vocab_size": 32064, "rms_norm_eps": 1e-05}}
    (c,) = configs_from_model(write(tmp_path, llava, "llava-1.5-7b-hf"))
    assert (c.heads, c.kv_heads, c.hdim, c.dtype, c.seqlen_q) == (32, 32, 128, "fp16", 2048)
    assert c.origin["heads"] == "text_config.num_attention_heads absent: llama default 32"
    # a top-level config is always written out in full: no defaults fill its gaps
    with pytest.raises(UsageError, match="no attention head count"):
        configs_from_model(write(tmp_path, {"model_type": "gemma3_text", "hidden_size": 2560}, "g3"))
