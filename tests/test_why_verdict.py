"""`why` says which of three things it found: one likely cause (exit 0), causes of different kinds it cannot tell
apart (ambiguous, exit 1, naming what would separate them), or nothing (exit 1)."""

from __future__ import annotations

import json


def ask(cli, *args):
    code, out, err = cli("why", *args, "--no-here", "--format", "json")
    return code, json.loads(out) if out.strip() else None, err


def test_a_message_that_names_its_cause_is_a_cause(cli):
    code, doc, _ = ask(cli, "ImportError: /x/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: "
                            "_ZN3c104cuda9SetDeviceEi")
    assert code == 0 and doc["verdict"] == "cause" and doc["cause"]["topics"] == ["install-abi"]


def test_a_text_nothing_explains_is_unexplained(cli):
    code, doc, _ = ask(cli, "the weather is fine today and the loss went down")
    assert code == 1 and doc["verdict"] == "unexplained" and doc["cause"] is None


def test_causes_of_different_kinds_at_one_score_are_ambiguous(cli):
    code, doc, _ = ask(cli, "RuntimeError: No available kernel. Aborting execution.")
    assert doc["verdict"] == "ambiguous" and code == 1
    assert doc["alternatives"] and doc["settle"]


def test_ambiguous_text_output_names_the_candidates_and_the_facts_to_give(cli):
    code, out, _ = cli("why", "RuntimeError: No available kernel. Aborting execution.", "--no-here")
    assert code == 1 and "ambiguous:" in out and "to tell them apart, give:" in out


def test_one_kind_of_problem_on_several_backends_is_one_answer(cli):
    """flash-attn 2 and 3 print the same sm80 check: both say the GPU is too old, so the answer is not ambiguous."""
    code, doc, _ = ask(cli, "RuntimeError: FlashAttention only supports Ampere GPUs or newer.", "--gpu", "V100")
    assert code == 0 and doc["verdict"] == "cause" and doc["cause"]["topics"] == ["gpu-arch"]


def test_pythons_own_import_error_points_at_the_release(cli):
    code, doc, _ = ask(cli, "ModuleNotFoundError: No module named 'torch.nn.attention.flex_attention'")
    assert code == 0 and doc["cause"]["backends"] == ["flex-attention"]
    assert any("2.5.0" in f for f in doc["cause"]["fixes"])
