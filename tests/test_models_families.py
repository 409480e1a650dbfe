"""Today's model families read per attention kind from their config.json, and the per-layer plan explain prints.

Real config.json copies live in tests/fixtures/models/<model>/ with a SOURCE file naming where each was read.
Families with no citable copy (Qwen3-Next, Llama 4) are exercised with small configs written here, which test the
reading rules and claim to be no model's file; Gemma 4 has both.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from attndoctor.sources.models import read_model

MODELS = Path(__file__).parent / "fixtures" / "models"
H100_TORCH27 = ["--gpu", "H100", "--torch", "2.7", "--cudnn", "9.8"]


def shape(kind):
    c = kind.config
    return (kind.label, c.heads, c.kv_heads, c.hdim, c.hdim_v, c.window, c.mask, c.sinks, len(kind.layers))


def write(tmp_path: Path, doc: dict, name: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(doc, indent=2))
    return folder


@pytest.mark.parametrize("model", ["gpt-oss-20b", "SmolLM3-3B", "Qwen3-4B", "DeepSeek-V3.2-Exp", "gemma-4-31B-it",
                                   "gemma-4-E2B-it", "Qwen3.5-9B", "phi-4", "Devstral-Small-2-24B-Instruct-2512",
                                   "MiniMax-M2"])
def test_every_new_fixture_names_its_source(model):
    source = (MODELS / model / "SOURCE").read_text()
    assert "config" in source and len(source.split("@")[1].split()[0]) >= 40  # a commit, not a branch


def test_gpt_oss_alternates_windows_and_every_layer_has_sinks():
    reading = read_model(MODELS / "gpt-oss-20b")
    assert [shape(k) for k in reading.kinds] == [
        ("local (sliding window)", 64, 8, 64, 64, (128, 0), "causal", True, 12),
        ("global", 64, 8, 64, 64, (-1, -1), "causal", True, 12),
    ]
    local, glob = reading.kinds
    assert local.layers == tuple(range(0, 24, 2)) and glob.layers == tuple(range(1, 24, 2))
    assert "model_type gpt_oss" in local.config.origin["sinks"]
    assert reading.skipped == {}


def test_smollm3_one_kind_with_its_nope_layers():
    (kind,) = read_model(MODELS / "SmolLM3-3B").kinds
    assert shape(kind) == ("all layers", 16, 4, 128, 128, (-1, -1), "causal", False, 36)
    assert kind.config.origin["hdim"] == "hidden_size/num_attention_heads (2048/16)"
    (note,) = kind.notes
    assert note.startswith("9 of these layers (3, 7, 11, 15, 19, 23, 27, 31, 35) are NoPE")


def test_qwen3_dense_has_no_window():
    (kind,) = read_model(MODELS / "Qwen3-4B").kinds
    assert shape(kind) == ("all layers", 32, 8, 128, 128, (-1, -1), "causal", False, 36)
    assert "use_sliding_window=false" in kind.config.origin["window"]


def test_deepseek_v32_mla_with_its_sparse_indexer():
    reading = read_model(MODELS / "DeepSeek-V3.2-Exp")
    (kind,) = reading.kinds
    assert shape(kind) == ("all layers", 128, 128, 192, 128, (-1, -1), "arbitrary", False, 61)
    assert "index_topk=2048 < seqlen 8192" in kind.config.origin["mask"]
    (note,) = reading.notes
    assert "64 heads of 128" in note and "2048 keys per query" in note
    # the file's dtype is the weights' fp8 storage, not the dtype attention runs in
    assert kind.config.dtype is None and "storage format" in kind.config.origin["dtype"]
    (short,) = read_model(MODELS / "DeepSeek-V3.2-Exp", seqlen=2048).kinds
    assert short.config.mask == "causal"


@pytest.mark.parametrize("model, heads", [("DeepSeek-V3", 128), ("Kimi-K2-Instruct", 64)])
def test_deepseek_v3_style_mla(model, heads):
    (kind,) = read_model(MODELS / model).kinds
    assert shape(kind)[1:7] == (heads, heads, 192, 128, (-1, -1), "causal")
    assert "qk_nope_head_dim + " in kind.config.origin["hdim"]


def test_gemma3_kinds_carry_their_layers_and_the_vision_tower():
    reading = read_model(MODELS / "gemma-3-12b-it")
    local, glob, vision = reading.kinds
    assert glob.layers == (5, 11, 17, 23, 29, 35, 41, 47) and len(local.layers) == 40
    assert shape(vision) == ("vision tower", 16, 16, 72, 72, (-1, -1), "none", False, 27)
    assert vision.config.seqlen_q == (896 // 14) ** 2 and vision.tower == "vision"



def test_gemma4_31b_global_layers_read_their_own_head_dim_and_kv_heads():
    reading = read_model(MODELS / "gemma-4-31B-it")
    local, glob, vision = reading.kinds
    assert [shape(k) for k in reading.kinds] == [
        ("local (sliding window)", 32, 16, 256, 256, (1024, 0), "causal", False, 50),
        ("global", 32, 4, 512, 512, (-1, -1), "causal", False, 10),
        ("vision tower", 16, 16, 72, 72, (-1, -1), "none", False, 27),
    ]
    assert glob.layers == tuple(range(5, 60, 6)) and reading.layers == 60 and reading.skipped == {}
    assert glob.config.origin["hdim"] == "text_config.global_head_dim (full-attention layers)"
    assert glob.config.origin["kv_heads"].startswith("text_config.num_global_key_value_heads")
    assert local.config.origin["kv_heads"] == "text_config.num_key_value_heads"
    assert glob.notes == ("text_config.attention_k_eq_v=true: these layers have no value projection, the values are "
                          "the keys (same tensor shapes for the kernel)",)
    assert local.config.dtype == "bf16" and local.config.origin["dtype"] == "text_config.dtype (bfloat16)"
    assert vision.config.seqlen_q is None  # no image_size in Gemma 4's vision_config


def test_gemma4_e2b_keeps_its_one_kv_head_and_names_the_kv_shared_layers():
    reading = read_model(MODELS / "gemma-4-E2B-it")
    local, glob, vision = reading.kinds
    assert [shape(k) for k in reading.kinds] == [
        ("local (sliding window)", 8, 1, 256, 256, (512, 0), "causal", False, 28),
        ("global", 8, 1, 512, 512, (-1, -1), "causal", False, 7),
        ("vision tower", 12, 12, 64, 64, (-1, -1), "none", False, 16),
    ]
    assert glob.layers == tuple(range(4, 35, 5))
    # attention_k_eq_v=false and num_global_key_value_heads=null: the global layers keep num_key_value_heads
    assert glob.config.origin["kv_heads"] == "text_config.num_key_value_heads"
    # num_kv_shared_layers=20 of 35: layers 15-34 reuse an earlier layer's K/V
    assert local.notes == ("16 of these layers (15-18, 20-23, 25-28, 30-33) reuse the K/V of the last earlier layer of "
                           "their kind (text_config.num_kv_shared_layers=20): same attention shape, no K/V of their own",)
    assert glob.notes == ("4 of these layers (19, 24, 29, 34) reuse the K/V of the last earlier layer of their kind "
                          "(text_config.num_kv_shared_layers=20): same attention shape, no K/V of their own",)


def test_qwen35_leaves_its_linear_attention_layers_out():
    reading = read_model(MODELS / "Qwen3.5-9B")
    text, vision = reading.kinds
    assert shape(text) == ("all layers", 16, 4, 256, 256, (-1, -1), "causal", False, 8)
    assert text.layers == tuple(range(3, 32, 4))
    assert reading.skipped == {"linear_attention": tuple(i for i in range(32) if (i + 1) % 4)}
    assert reading.skipped_origin == "text_config.layer_types"
    # the Qwen vision tower counts its blocks in vision_config.depth
    assert shape(vision) == ("vision tower", 16, 16, 72, 72, (-1, -1), "none", False, 27)
    assert vision.config.origin["hdim"] == "vision_config.hidden_size/vision_config.num_heads (1152/16)"


def test_phi4_head_dim_from_hidden_size_and_no_window():
    (kind,) = read_model(MODELS / "phi-4").kinds
    assert shape(kind) == ("all layers", 40, 10, 128, 128, (-1, -1), "causal", False, 40)
    assert kind.config.origin["hdim"] == "hidden_size/num_attention_heads (5120/40)"
    assert kind.config.origin["window"] == "sliding_window is null: no window"
    assert kind.config.seqlen_q == 8192 and kind.config.origin["seqlen_q"].startswith("max_position_embeddings (16384)")


def test_mistral3_nested_text_config_without_a_window_and_its_pixtral_tower():
    reading = read_model(MODELS / "Devstral-Small-2-24B-Instruct-2512")
    text, vision = reading.kinds
    assert reading.model_type == "ministral3"
    assert shape(text) == ("all layers", 32, 8, 128, 128, (-1, -1), "causal", False, 40)
    assert text.config.origin["window"] == "text_config.sliding_window is null: no window"
    assert text.config.origin["dtype"] == "dtype (bfloat16)"
    assert shape(vision) == ("vision tower", 16, 16, 64, 64, (-1, -1), "none", False, 24)
    assert vision.config.seqlen_q == (1540 // 14) ** 2


def test_minimax_m2_every_layer_is_softmax_attention():
    reading = read_model(MODELS / "MiniMax-M2")
    (kind,) = reading.kinds
    assert shape(kind) == ("all layers", 48, 8, 128, 128, (-1, -1), "causal", False, 62)
    assert kind.config.origin["hdim"] == "head_dim" and reading.skipped == {}
    assert kind.config.dtype is None  # the file names no dtype

GEMMA4_TEXT = {
    "model_type": "gemma4_text", "hidden_size": 5376, "num_hidden_layers": 12, "num_attention_heads": 32,
    "num_key_value_heads": 16, "num_global_key_value_heads": 4, "head_dim": 256, "global_head_dim": 512,
    "attention_k_eq_v": True, "sliding_window": 1024, "num_kv_shared_layers": 0,
    "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 2,
}


def test_gemma4_global_layers_take_their_own_head_dim_and_kv_heads(tmp_path):
    doc = {"model_type": "gemma4", "text_config": GEMMA4_TEXT, "dtype": "bfloat16"}
    local, glob = read_model(write(tmp_path, doc, "g4")).kinds
    assert shape(local) == ("local (sliding window)", 32, 16, 256, 256, (1024, 0), "causal", False, 10)
    assert shape(glob) == ("global", 32, 4, 512, 512, (-1, -1), "causal", False, 2)
    assert glob.config.origin["hdim"] == "text_config.global_head_dim (full-attention layers)"
    assert "num_global_key_value_heads" in glob.config.origin["kv_heads"]
    assert any("attention_k_eq_v=true" in n for n in glob.notes)


def test_gemma4_without_k_eq_v_keeps_the_kv_heads_and_marks_kv_shared_layers(tmp_path):
    text = {**GEMMA4_TEXT, "attention_k_eq_v": False, "num_kv_shared_layers": 4}
    local, glob = read_model(write(tmp_path, {"model_type": "gemma4", "text_config": text}, "g4")).kinds
    assert (glob.config.hdim, glob.config.kv_heads) == (512, 16)
    assert any("num_global_key_value_heads=4 is not used" in n for n in glob.notes)
    assert any(n.startswith("1 of these layers (11) reuse the K/V") for n in glob.notes)
    assert any(n.startswith("3 of these layers (8-10) reuse the K/V") for n in local.notes)


def test_qwen3_next_interval_leaves_linear_attention_out(tmp_path):
    doc = {"model_type": "qwen3_next", "num_hidden_layers": 8, "num_attention_heads": 16,
           "num_key_value_heads": 2, "head_dim": 256, "full_attention_interval": 4}
    reading = read_model(write(tmp_path, doc, "q3n"))
    (kind,) = reading.kinds
    assert shape(kind) == ("all layers", 16, 2, 256, 256, (-1, -1), "causal", False, 2)
    assert kind.layers == (3, 7)
    assert reading.skipped == {"linear_attention": (0, 1, 2, 4, 5, 6)}


def test_llama4_chunked_layers_are_an_arbitrary_mask_and_nope_layers_are_named(tmp_path):
    doc = {"model_type": "llama4_text", "num_hidden_layers": 8, "num_attention_heads": 40,
           "num_key_value_heads": 8, "head_dim": 128, "attention_chunk_size": 8192,
           "no_rope_layers": [1, 1, 1, 0] * 2}
    chunked, glob = read_model(write(tmp_path, doc, "l4")).kinds
    assert (chunked.config.mask, glob.config.mask) == ("arbitrary", "causal")
    assert chunked.layers == (0, 1, 2, 4, 5, 6) and glob.layers == (3, 7)
    assert glob.notes == ("2 of these layers (3, 7) are NoPE (no_rope_layers = 0): no rotary embedding, "
                          "the same kernel shape",) and chunked.notes == ()


def report_schema() -> dict:
    """The published schema with every described object closed, so a plan field it does not describe fails."""
    from test_json_schema import closed

    return closed(json.loads((resources.files("attndoctor") / "schema" / "report-v1.json").read_text(encoding="utf-8")))


def test_plan_names_the_math_fallback_and_its_score_buffer(cli):
    code, out, _ = cli("explain", "--model", str(MODELS / "gemma-3-12b-it"), *H100_TORCH27, "--seqlen", "8192",
                       "--batch", "2", "--format", "json")
    doc = json.loads(out)
    jsonschema.validate(doc, report_schema())
    (plan,) = doc["models"]
    assert [k["label"] for k in plan["kinds"]] == ["local (sliding window)", "global", "vision tower"]
    runs = {k["label"]: {r["framework"]: r["backend"] for r in k["runs"]} for k in plan["kinds"]}
    assert runs["local (sliding window)"]["pytorch"] == "sdpa-math" and runs["global"]["pytorch"] == "sdpa-flash"
    (finding,) = [f for f in plan["findings"] if f["framework"] == "pytorch"]
    assert finding["kind"] == "local (sliding window)" and finding["others"] == ["sdpa-flash"]
    assert finding["math_score_bytes"] == 2 * 16 * 8192 * 8192 * 4
    assert "flash-attn-3" in finding["fix"]
    assert finding["fix"].startswith("upgrade PyTorch") and "lets sdpa-efficient run it" in finding["fix"]
    assert "flash-attn-3" in plan["backends_for_every_kind"]
    global_pytorch = next(r for r in plan["kinds"][1]["runs"] if r["framework"] == "pytorch")
    assert global_pytorch["fix"] is None  # sdpa-flash already runs it


def test_plan_of_a_math_kind_names_the_fix_of_a_fused_backend(cli, tmp_path):
    doc = {"model_type": "gemma4", "dtype": "bfloat16", "text_config": GEMMA4_TEXT}
    code, out, _ = cli("explain", "--model", str(write(tmp_path, doc, "g4")), *H100_TORCH27, "--seqlen", "4096",
                       "--train", "--format", "json")
    doc = json.loads(out)
    jsonschema.validate(doc, report_schema())
    (plan,) = doc["models"]
    glob = plan["kinds"][1]
    assert (glob["label"], glob["shape"]) == ("global", "d=512 h=32/4kv s=4096 bf16 train causal")
    (pytorch,) = [r for r in glob["runs"] if r["framework"] == "pytorch"]
    assert pytorch["backend"] == "sdpa-math" and "lets sdpa-" in pytorch["fix"]
    assert glob["math_score_bytes"] == 32 * 4096 * 4096 * 4


def test_plan_in_text_lists_kinds_and_skipped_layers(cli, tmp_path):
    doc = {"model_type": "qwen3_next", "num_hidden_layers": 8, "num_attention_heads": 16,
           "num_key_value_heads": 2, "head_dim": 256, "full_attention_interval": 4, "torch_dtype": "bfloat16"}
    code, out, _ = cli("explain", "--model", str(write(tmp_path, doc, "q3n")), *H100_TORCH27, "--train")
    assert "Per-layer plan: q3n, 8 layers" in out
    assert "all layers: 2 layers (3, 7)" in out
    assert "linear_attention: 6 layers (0-2, 4-6) from full_attention_interval=4 (layer_types absent): " \
           "no softmax attention, left out of the verdicts" in out



def test_plan_of_gemma4_31b_names_both_text_kinds_and_their_score_buffers(cli):
    code, out, _ = cli("explain", "--model", str(MODELS / "gemma-4-31B-it"), *H100_TORCH27, "--seqlen", "4096",
                       "--train", "--format", "json")
    doc = json.loads(out)
    jsonschema.validate(doc, report_schema())
    (plan,) = doc["models"]
    assert (plan["name"], plan["model_type"], plan["layers"]) == ("gemma-4-31B-it", "gemma4_text", 60)
    assert [(k["label"], k["layer_count"], k["shape"]) for k in plan["kinds"]] == [
        ("local (sliding window)", 50, "d=256 h=32/16kv s=4096 bf16 train causal window=1024,0"),
        ("global", 10, "d=512 h=32/4kv s=4096 bf16 train causal"),
        ("vision tower", 27, "d=72 h=16 s=4096 bf16 train"),
    ]
    assert plan["kinds"][1]["layers"] == list(range(5, 60, 6))
    for kind in plan["kinds"][:2]:
        assert kind["math_score_bytes"] == 32 * 4096 * 4096 * 4
    assert plan["skipped_layers"] == []


def test_plan_of_qwen35_in_text_lists_the_linear_layers_and_the_tower(cli):
    code, out, _ = cli("explain", "--model", str(MODELS / "Qwen3.5-9B"), *H100_TORCH27, "--train")
    assert "Per-layer plan: Qwen3.5-9B, 32 layers" in out
    assert "all layers: 8 layers (3, 7, 11, 15, 19, 23, 27, 31)" in out
    assert "linear_attention: 24 layers (0-2, 4-6, 8-10, 12-14, 16-18, 20-22, 24-26, 28-30) from " \
           "text_config.layer_types: no softmax attention" in out
    assert "vision tower: 27 layers (0-26)" in out

def test_plan_for_sinks_reports_each_kind_under_each_framework(cli):
    code, out, _ = cli("explain", "--model", str(MODELS / "gpt-oss-20b"), *H100_TORCH27, "--dtype", "bf16",
                       "--format", "json")
    (plan,) = json.loads(out)["models"]
    assert [(k["label"], k["layer_count"]) for k in plan["kinds"]] == [("local (sliding window)", 12),
                                                                       ("global", 12)]
    for kind in plan["kinds"]:
        assert "sinks" in kind["shape"]
        assert {r["framework"] for r in kind["runs"]} >= {"pytorch"}
    # SDPA has no sink input: PyTorch selects no backend for either kind
    assert all(r["backend"] is None for k in plan["kinds"] for r in k["runs"] if r["framework"] == "pytorch")


def test_configs_without_model_give_no_plan(cli):
    code, out, _ = cli("explain", "--hdim", "128", "--heads", "8", "--seqlen", "1024", "--dtype", "bf16",
                       *H100_TORCH27, "--format", "json")
    assert "models" not in json.loads(out)
