"""The newest releases read answer inside the rules, and the extraction script reads a wheel as documented."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from attndoctor.config import make_config
from attndoctor.engine.evaluate import Evaluator
from attndoctor.engine.rules import load_rulebase
from attndoctor.environment import environment_from_flags

ROOT = Path(__file__).resolve().parents[1]
EV = Evaluator(load_rulebase())
SHAPE = ["--batch", "2", "--hdim", "128", "--heads", "16", "--seqlen", "2048", "--dtype", "bf16", "--train"]


def verdicts(cli, *args: str) -> dict[str, dict]:
    code, out, err = cli("explain", *args, "--format", "json")
    assert code in (0, 1), err
    return {v["backend"]: v for v in json.loads(out)["results"][0]["verdicts"]}


@pytest.mark.parametrize(("torch", "inside"), [("2.14.0", True), ("2.15.0", True), ("2.16.0", False)])
def test_flex_attention_answers_up_to_2_15(cli, torch, inside):
    v = verdicts(cli, "--torch", torch, "--backend", "flex-attention", "--gpu", "H100", *SHAPE)["flex-attention"]
    assert (v["status"] != "outside-rules") is inside, v["status"]


@pytest.mark.parametrize("cudnn", ["9.27.0", "9.28.0", "9.28.1", "9.28.1.4"])
def test_cudnn_9_27_and_9_28_answer_inside_for_cudnn_fe_and_sdpa_cudnn(cli, cudnn):
    v = verdicts(cli, "--torch", "2.15.0", "--gpu", "H100", "--cudnn", cudnn, "--cudnn-frontend", "1.32.0", *SHAPE)
    for backend in ("sdpa-cudnn", "cudnn-fe"):
        assert v[backend]["status"] != "outside-rules", (backend, v[backend]["status"])
    assert v["sdpa-cudnn"]["supported"] is True and v["cudnn-fe"]["supported"] is True


def test_te_fused_stays_at_the_cudnn_it_was_read_at(cli):
    v = verdicts(cli, "--gpu", "H100", "--cudnn", "9.28.1", "--te", "2.20.2", *SHAPE)
    assert v["te-fused"]["status"] == "outside-rules"
    v = verdicts(cli, "--gpu", "H100", "--cudnn", "9.26.0", "--te", "2.20.2", *SHAPE)
    assert v["te-fused"]["status"] != "outside-rules"


@pytest.mark.parametrize(("flash_attn", "at_risk"), [("2.8.3", True), ("2.8.3.post1", True), ("2.8.3.post2", False)])
def test_flash_attn_2_8_3_post2_fixes_the_dq_accum_stride(flash_attn, at_risk):
    config = dict(batch=2, heads=128, seqlen=131072, hdim=128, dtype="bf16", train=True)
    env = environment_from_flags({"gpu": "H200", "flash_attn": flash_attn})
    v = EV.evaluate(make_config(config), env).verdict("flash-attn-2")
    found = {f.id for f in v.findings if f.applies is True}
    assert ("ADV-FLASH-ATTN-2-BWD-DQACCUM-INT32-STRIDE" in found) is at_risk, found


HEADER = """#pragma once
namespace cudnn_frontend::graph {
inline error_t check() {
    RETURN_CUDNN_FRONTEND_ERROR_IF(
        is_block_mask && detail::get_backend_version() < 92600,
        error_code_t::GRAPH_NOT_SUPPORTED,
        "Block mask requires cuDNN 9.26.0");
    bool const d192 = (detail::get_backend_version() >= 91900);
    int unrelated = 92600;
}
}
"""


def _wheel(path: Path, body: str) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("include/cudnn_frontend/node/sdpa_support_surface.h", body)
        archive.writestr("include/cudnn_frontend/node/matmul.h", "detail::get_backend_version() < 90000;\n")
    return path


def test_cudnn_fe_checks_prints_each_gated_statement_with_file_and_line(tmp_path):
    wheel = _wheel(tmp_path / "nvidia_cudnn_frontend-9.9.9-py3-none-any.whl", HEADER)
    out = subprocess.run([sys.executable, str(ROOT / "tools/currency/cudnn_fe_checks.py"), str(wheel)],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(out) == 2, out
    assert "sdpa_support_surface.h:4 [9.26.0] RETURN_CUDNN_FRONTEND_ERROR_IF( is_block_mask &&" in out[0]
    assert '"Block mask requires cuDNN 9.26.0");' in out[0]
    assert "sdpa_support_surface.h:8 [9.19.0] bool const d192" in out[1]
    assert not any("matmul.h" in line for line in out)


def test_cudnn_fe_checks_diff_names_the_added_and_removed_checks(tmp_path):
    old = _wheel(tmp_path / "old.whl", HEADER)
    new = _wheel(tmp_path / "new.whl", HEADER.replace("92600", "92700", 1))
    script = str(ROOT / "tools/currency/cudnn_fe_checks.py")
    out = subprocess.run([sys.executable, script, "--diff", str(old), str(new)],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert [line[:2] for line in out] == ["- ", "+ "], out
    assert "[9.26.0]" in out[0] and "[9.27.0]" in out[1]
