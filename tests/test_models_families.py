"""Today's model families read per attention kind from their config.json, and the per-layer plan explain prints.

Real config.json copies live in tests/fixtures/models/<model>/ with a SOURCE file naming where each was read.
Small configs written here test the reading rules and claim to be no model's file; Qwen3-Next, Gemma 4 and Llama 4
have both.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from attndoctor.errors import UsageError
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
                                   "MiniMax-M2", "Llama-4-Scout-17B-16E-Instruct", "Llama-4-Maverick-17B-128E-Instruct",
                                   "MiniMax-M1", "Qwen3-Next-80B-A3B-Instruct"])
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
    local, glob, image_local, image_glob, vision = reading.kinds
    assert glob.layers == (5, 11, 17, 23, 29, 35, 41, 47) and len(local.layers) == 40
    assert shape(vision) == ("vision tower", 16, 16, 72, 72, (-1, -1), "none", False, 27)
    assert vision.config.seqlen_q == (896 // 14) ** 2 and vision.tower == "vision"



def test_gemma4_31b_global_layers_read_their_own_head_dim_and_kv_heads():
    reading = read_model(MODELS / "gemma-4-31B-it")
    local, glob, _image_local, vision = reading.kinds
    assert [shape(k) for k in reading.kinds] == [
        ("local (sliding window)", 32, 16, 256, 256, (1024, 0), "causal", False, 50),
        ("global", 32, 4, 512, 512, (-1, -1), "causal", False, 10),
        ("local (sliding window) with image tokens", 32, 16, 256, 256, (1024, 0), "arbitrary", False, 50),
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


def test_qwen3_next_real_config_reads_its_interval_and_leaves_the_deltanet_layers_out():
    reading = read_model(MODELS / "Qwen3-Next-80B-A3B-Instruct")
    (kind,) = reading.kinds
    assert shape(kind) == ("all layers", 16, 2, 256, 256, (-1, -1), "causal", False, 12)
    assert kind.layers == tuple(range(3, 48, 4))
    assert reading.skipped == {"linear_attention": tuple(i for i in range(48) if i % 4 != 3)}
    assert reading.skipped_origin == "full_attention_interval=4 (layer_types absent)"
    # the linear_* keys size the gated deltanet layers, never the softmax ones
    assert (kind.config.origin["heads"], kind.config.origin["kv_heads"], kind.config.origin["hdim"]) == \
        ("num_attention_heads", "num_key_value_heads", "head_dim")
    assert kind.config.origin["window"] == ("full_attention_interval=4 (layer_types absent): 12 of 48 layers are "
                                            "full_attention: no window")


def test_plan_of_qwen3_next_in_text_lists_the_linear_layers(cli):
    code, out, _ = cli("explain", "--model", str(MODELS / "Qwen3-Next-80B-A3B-Instruct"), *H100_TORCH27,
                       "--dtype", "bf16")
    out = " ".join(out.split())
    assert "Per-layer plan: Qwen3-Next-80B-A3B-Instruct, 48 layers" in out
    assert "all layers: 12 layers (3, 7, 11, 15, 19, 23, 27, 31, 35, 39, 43, 47) d=256 h=16/2kv s=8192 bf16" in out
    assert "linear_attention: 36 layers (0-2, 4-6, 8-10, 12-14, 16-18, 20-22, 24-26, 28-30, 32-34, 36-38, 40-42, " \
           "44-46) from full_attention_interval=4 (layer_types absent): no softmax attention, left out of the " \
           "verdicts" in out


def test_llama4_chunked_layers_are_an_arbitrary_mask_and_nope_layers_are_named(tmp_path):
    doc = {"model_type": "llama4_text", "num_hidden_layers": 8, "num_attention_heads": 40,
           "num_key_value_heads": 8, "head_dim": 128, "attention_chunk_size": 8192,
           "no_rope_layers": [1, 1, 1, 0] * 2}
    chunked, glob = read_model(write(tmp_path, doc, "l4")).kinds
    assert (chunked.config.mask, glob.config.mask) == ("arbitrary", "causal")
    assert chunked.layers == (0, 1, 2, 4, 5, 6) and glob.layers == (3, 7)
    assert glob.notes == ("2 of these layers (3, 7) are NoPE (no_rope_layers = 0): no rotary embedding, "
                          "the same kernel shape",) and glob.label == "global (NoPE)"
    (note,) = chunked.notes  # no max_position_embeddings: the length is unknown, the chunks may split it
    assert note.startswith("a kernel without mask tensors runs these layers when each 8192-token chunk")


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
    assert [k["label"] for k in plan["kinds"]] == ["local (sliding window)", "global",
                                                   "local (sliding window) with image tokens",
                                                   "global with image tokens", "vision tower"]
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
        ("local (sliding window) with image tokens", 50, "d=256 h=32/16kv s=4096 bf16 train arbitrary window=1024,0"),
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


LLAMA4 = ["Llama-4-Scout-17B-16E-Instruct", "Llama-4-Maverick-17B-128E-Instruct"]


@pytest.mark.parametrize("model", LLAMA4)
def test_llama4_real_configs_read_chunked_and_nope_layers_as_their_own_kinds(model):
    reading = read_model(MODELS / model, seqlen=16384)
    chunked, nope = reading.kinds
    assert [shape(k) for k in reading.kinds] == [
        ("chunked", 40, 8, 128, 128, (-1, -1), "arbitrary", False, 36),
        ("global (NoPE)", 40, 8, 128, 128, (-1, -1), "causal", False, 12),
    ]
    assert nope.layers == tuple(range(3, 48, 4)) and reading.layers == 48 and reading.skipped == {}
    assert chunked.config.name == f"{model} chunked" and nope.config.name == f"{model} global (NoPE)"
    assert chunked.config.origin["mask"].startswith("text_config.attention_chunk_size=8192: block-diagonal")
    assert "no_rope_layer_interval absent: llama4 default 4" in nope.config.origin["window"]
    (note,) = chunked.notes
    assert "each 8192-token chunk is given as its own sequence" in note
    assert chunked.config.dtype == "bf16" and chunked.config.origin["dtype"] == "text_config.torch_dtype (bfloat16)"


@pytest.mark.parametrize("model", LLAMA4)
def test_llama4_chunked_layers_within_one_chunk_are_causal(model):
    chunked, _ = read_model(MODELS / model).kinds  # max_position_embeddings capped at 8192: one chunk
    assert (chunked.config.seqlen_q, chunked.config.mask) == (8192, "causal")
    assert chunked.config.origin["mask"].startswith("seqlen 8192 <= attention_chunk_size 8192: one chunk")
    assert chunked.notes == ()
    chunked, _ = read_model(MODELS / model, seqlen=8193).kinds
    assert chunked.config.mask == "arbitrary"


def test_llama4_chunked_layers_refuse_the_kernels_without_mask_tensors(cli):
    code, out, _ = cli("explain", "--model", str(MODELS / "Llama-4-Scout-17B-16E-Instruct"), *H100_TORCH27,
                       "--flash-attn", "2.7.4", "--seqlen", "16384", "--format", "json")
    doc = json.loads(out)
    jsonschema.validate(doc, report_schema())
    status = {r["config"]["name"].split()[-1]: {v["backend"]: v["status"] for v in r["verdicts"]}
              for r in doc["results"]}
    assert status["chunked"]["flash-attn-2"] == "unsupported" and status["chunked"]["sdpa-flash"] == "unsupported"
    assert status["(NoPE)"]["flash-attn-2"] == "supported"
    (plan,) = doc["models"]
    assert [(k["label"], k["layer_count"]) for k in plan["kinds"]] == [("chunked", 36), ("global (NoPE)", 12)]


def test_llama4_no_rope_layers_list_decides_which_layers_are_chunked(tmp_path):
    doc = {"model_type": "llama4_text", "num_hidden_layers": 6, "num_attention_heads": 8, "num_key_value_heads": 2,
           "head_dim": 64, "attention_chunk_size": 512, "no_rope_layers": [0, 1, 1, 1, 1, 0]}
    nope, chunked = read_model(write(tmp_path, doc, "l4"), seqlen=1024).kinds  # in the order of their first layer
    assert chunked.layers == (1, 2, 3, 4) and nope.layers == (0, 5)
    assert nope.label == "global (NoPE)" and "no_rope_layers = 0" in nope.config.origin["window"]
    assert chunked.config.origin["window"].startswith("no window: no_rope_layers = 1 attend within chunks of 512")


def test_llama4_chunk_size_null_is_global_and_absent_is_8192(tmp_path):
    base = {"model_type": "llama4_text", "num_hidden_layers": 4, "num_attention_heads": 8,
            "num_key_value_heads": 2, "head_dim": 64}
    (kind,) = read_model(write(tmp_path, {**base, "attention_chunk_size": None}, "null"), seqlen=16384).kinds
    assert (kind.config.mask, len(kind.layers)) == ("causal", 4)
    chunked, nope = read_model(write(tmp_path, base, "absent"), seqlen=16384).kinds
    assert chunked.config.mask == "arbitrary" and nope.layers == (3,)
    assert "attention_chunk_size absent: llama4 default 8192" in chunked.config.origin["window"]


def test_minimax_m1_reads_attn_type_list_and_leaves_lightning_layers_out():
    reading = read_model(MODELS / "MiniMax-M1")
    (kind,) = reading.kinds
    assert shape(kind) == ("all layers", 64, 8, 128, 128, (-1, -1), "causal", False, 10)
    assert kind.layers == tuple(range(7, 80, 8))
    assert reading.skipped == {"linear_attention": tuple(i for i in range(80) if i % 8 != 7)}
    assert reading.skipped_origin == "attn_type_list (0 = lightning linear attention, 1 = softmax attention)"
    assert kind.config.origin["window"].startswith("attn_type_list (0 = lightning linear attention, 1 = softmax "
                                                   "attention): 10 of 80 layers are full_attention")


def test_plan_of_minimax_m1_in_text_lists_the_lightning_layers(cli):
    code, out, _ = cli("explain", "--model", str(MODELS / "MiniMax-M1"), *H100_TORCH27, "--dtype", "bf16")
    out = " ".join(out.split())
    assert "Per-layer plan: MiniMax-M1, 80 layers" in out
    assert "all layers: 10 layers (7, 15, 23, 31, 39, 47, 55, 63, 71, 79)" in out
    assert "linear_attention: 70 layers (0-6, 8-14, 16-22, 24-30, 32-38, 40-46, 48-54, 56-62, 64-70, 72-78) from " \
           "attn_type_list (0 = lightning linear attention, 1 = softmax attention): no softmax attention" in out


@pytest.mark.parametrize("attn_types", [[1, 2, 1, 1], [True, 1, 1, 1], "1111", [1, 1, 1]])
def test_attn_type_list_that_is_not_one_0_or_1_per_layer_is_refused(tmp_path, attn_types):
    doc = {"model_type": "minimax", "num_hidden_layers": 4, "num_attention_heads": 8, "head_dim": 64,
           "attn_type_list": attn_types}
    with pytest.raises(UsageError, match="attn_type_list"):
        read_model(write(tmp_path, doc, "mm"))


def test_gemma4_vision_bidirectional_gives_the_sliding_layers_a_mask_tensor_on_image_inputs():
    reading = read_model(MODELS / "gemma-4-31B-it")
    local, glob, image, _vision = reading.kinds
    assert (image.label, image.layers, image.config.mask, image.config.window) == (
        "local (sliding window) with image tokens", local.layers, "arbitrary", (1024, 0))
    assert image.when.startswith("the input holds image tokens") and local.when == glob.when == ""
    assert image.config.origin["mask"].startswith('text_config.use_bidirectional_attention="vision"')
    assert "the global layers stay causal" in image.config.origin["mask"]
    (note,) = image.notes
    assert "5.24.0 sets _supports_flash_attn = False" in note and "decode steps keep the causal mask" in note
    # E2B's text_config says use_bidirectional_attention: null: no image-token mask
    assert [k.label for k in read_model(MODELS / "gemma-4-E2B-it").kinds] == [
        "local (sliding window)", "global", "vision tower"]


def test_gemma3_image_tokens_give_every_text_kind_a_mask_tensor():
    local, glob, image_local, image_glob, _vision = read_model(MODELS / "gemma-3-12b-it").kinds
    assert [(k.label, k.layers, k.config.mask) for k in (image_local, image_glob)] == [
        ("local (sliding window) with image tokens", local.layers, "arbitrary"),
        ("global with image tokens", glob.layers, "arbitrary")]


def test_plan_keeps_image_token_kinds_apart_and_shows_the_kernels_they_lose(cli):
    code, out, _ = cli("explain", "--model", str(MODELS / "gemma-4-31B-it"), *H100_TORCH27, "--flash-attn", "2.7.4",
                       "--seqlen", "4096", "--format", "json")
    doc = json.loads(out)
    jsonschema.validate(doc, report_schema())
    status = {r["config"]["name"]: {v["backend"]: v["status"] for v in r["verdicts"]} for r in doc["results"]}
    assert status["gemma-4-31B-it local (sliding window)"]["flash-attn-2"] == "supported"
    assert status["gemma-4-31B-it local (sliding window) with image tokens"]["flash-attn-2"] == "unsupported"
    (plan,) = doc["models"]
    whens = {k["label"]: k["when"] for k in plan["kinds"]}
    assert whens["local (sliding window) with image tokens"].startswith("the input holds image tokens")
    assert whens["local (sliding window)"] is None and whens["global"] is None
    assert all(f["kind"] != "local (sliding window) with image tokens" for f in plan["findings"])
    code, text, _ = cli("explain", "--model", str(MODELS / "gemma-4-31B-it"), *H100_TORCH27, "--seqlen", "4096")
    assert "local (sliding window) with image tokens: 50 layers (0-4, 6-10" in text
    assert "when the input holds image tokens" in " ".join(text.split())
