"""The five seed incidents as a user meets them: `attndoctor explain` with the incident's facts, verdict and fix."""

from __future__ import annotations

import json

import pytest

from attndoctor.cli import main


@pytest.fixture()
def explain(capsys):
    def run(*args):
        with pytest.raises(SystemExit) as info:
            main(["explain", *args, "--format", "json"])
        out, err = capsys.readouterr()
        doc = json.loads(out)
        result = doc["results"][0]
        return info.value.code, {v["backend"]: v for v in result["verdicts"]}, \
            {s["framework"]: s for s in result["selected"]}
    return run


def fix_texts(verdict):
    plans = ([verdict["fix"]] if verdict["fix"] else []) + verdict["alternatives"]
    return [p["text"] for p in plans]


MLA = ["--hdim", "192", "--hdim-v", "128", "--heads", "128", "--seqlen", "4096", "--dtype", "bf16", "--causal",
       "--gpu", "H100", "--cudnn", "9.1.0", "--flash-attn", "2.7.3"]


def test_000_mla_training_on_cudnn_91(explain):
    code, v, sel = explain(*MLA, "--train", "--te", "2.5")
    fused = v["te-fused"]
    assert fused["supported"] is False
    assert any("upgrade cuDNN to 9.5.0" in t for t in fix_texts(fused))
    assert any("pad hdim_v to 192" in t for t in fix_texts(v["te-flash"]))  # pad V: TE's flash backend then runs
    code, v, sel = explain(*MLA, "--infer", "--te", "2.5")
    assert v["te-fused"]["supported"] is True
    code, v, sel = explain(*MLA, "--train", "--te", "2.3")
    te = sel["transformer-engine"]
    assert te["status"] == "fails" and te["backend"] == "te-fused"
    assert "No execution plans support the graph" in te["reason"]


def test_001_cp_cudnn_897_seqlen_16534(explain):
    args = ["--batch", "48", "--seqlen", "16534", "--heads", "18", "--hdim", "128", "--dtype", "bf16", "--train",
            "--gpu", "A100", "--cudnn", "8.9.7", "--te", "1.9", "--flash-attn", "2.5.8",
            "--set-env", "NVTE_FLASH_ATTN=0"]
    code, v, sel = explain(*args)
    fused = v["te-fused"]
    assert fused["supported"] is False and any(f["rule"] == "TE-FUSED-SEQ64-CUDNN8" for f in fused["findings"])
    texts = fix_texts(fused)
    assert any("cuDNN to 9.0.0" in t for t in texts) and any("pad seqlen_q to 16576" in t for t in texts)
    code, v, sel = explain(*args[:-6], "--cudnn", "9.0.0", "--te", "1.9", "--flash-attn", "2.5.8")
    assert v["te-fused"]["supported"] is True
    # the tensors are one rank's share under cp = 2: TE 1.8 falls back to unfused and asserts
    cp = ["--batch", "48", "--seqlen", "33068", "--cp", "2", "--heads", "18", "--hdim", "128", "--dtype", "bf16",
          "--train", "--gpu", "A100", "--cudnn", "8.9.7", "--te", "1.8", "--flash-attn", "2.5.8",
          "--set-env", "NVTE_FLASH_ATTN=0"]
    code, v, sel = explain(*cp)
    assert "Context parallelism is only implemented with Flash Attention and Fused Attention" in \
        sel["transformer-engine"]["reason"]


def test_002_fused_qkv_mqa_views_wrong_results_before_te_112(explain):
    args = ["--heads", "16", "--kv-heads", "1", "--hdim", "64", "--seqlen", "2048", "--dtype", "fp16", "--qkv-fused",
            "--layout", "sbhd", "--gpu", "H100", "--cudnn", "9.2.1", "--flash-attn", "2.6.3", "--infer"]
    code, v, sel = explain(*args, "--te", "1.11")
    assert code == 1  # a wrong-results finding fails the gate
    fused = v["te-fused"]
    assert fused["status"] == "wrong-results" and fused["supported"] is False
    texts = fix_texts(fused)
    assert any("TransformerEngine to 1.12" in t for t in texts) and any("qkv_fused = False" in t for t in texts)
    code, v, sel = explain(*args, "--te", "1.12")
    assert v["te-fused"]["status"] != "wrong-results" and code == 0


def test_003_te_111_cp_flash_attn_263_softcap(explain):
    args = ["--heads", "32", "--hdim", "128", "--seqlen", "4096", "--dtype", "bf16", "--train", "--causal",
            "--cp", "2", "--gpu", "A100", "--cudnn", "9.1.0", "--te", "1.11"]
    code, v, sel = explain(*args, "--flash-attn", "2.6.3")
    flash = v["te-flash"]
    assert flash["status"] == "api-mismatch"
    assert any(f["rule"] == "TE-FLASH-CP-FA26-SOFTCAP" and "softcap" in f["symptom"] for f in flash["findings"])
    texts = fix_texts(flash)
    assert any("TransformerEngine" in t for t in texts) and any("flash-attn to 2.5.8" in t for t in texts)
    code, v, sel = explain(*args, "--flash-attn", "2.5.8")
    assert not any(f["rule"] == "TE-FLASH-CP-FA26-SOFTCAP" and f["applies"] for f in v["te-flash"]["findings"])


@pytest.mark.parametrize("seqlen, cp", [("1", "2"), ("4094", "2")])
def test_004_cp_seqlen_not_divisible_by_2cp(explain, seqlen, cp):
    code, v, sel = explain("--heads", "16", "--hdim", "128", "--seqlen", seqlen, "--cp", cp, "--dtype", "bf16",
                           "--infer", "--gpu", "H100", "--cudnn", "9.5.0", "--te", "2.5", "--flash-attn", "2.7.3")
    for backend in ("te-flash", "te-fused", "te-unfused"):
        assert v[backend]["supported"] is False
        messages = " ".join(f["message"] for f in v[backend]["findings"] if f["applies"])
        assert "2" in messages and ("divisible" in messages or "multiple" in messages), messages
    code, v, sel = explain("--heads", "16", "--hdim", "128", "--seqlen", "4096", "--cp", cp, "--dtype", "bf16",
                           "--infer", "--gpu", "H100", "--cudnn", "9.5.0", "--te", "2.5", "--flash-attn", "2.7.3")
    assert v["te-fused"]["supported"] is True
