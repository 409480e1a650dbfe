"""Advisories from the model and serving trackers: each shows on the config its thread names and nowhere else."""

from __future__ import annotations

import json

import pytest

MASKED_ROWS = "ADV-SDPA-CUDNN-BOOL-MASK-FULLY-MASKED-ROW-UNMASKED"
SOFTCAP_BWD = "ADV-FLASH-ATTN-2-SOFTCAP-BWD-IGNORED"


def findings(cli, backend, *args):
    code, out, _ = cli("explain", *args, "--backend", backend, "--format", "json")
    verdict = next(v for v in json.loads(out)["results"][0]["verdicts"] if v["backend"] == backend)
    return {f["rule"]: f for f in verdict["findings"]}


CUDNN = ["--gpu", "H100", "--cudnn", "9.19.0", "--heads", "4", "--hdim", "64", "--seqlen", "16", "--dtype", "bf16",
         "--infer"]


def test_a_left_padded_causal_mask_on_cudnn_is_at_risk_of_unmasked_rows(cli):
    found = findings(cli, "sdpa-cudnn", *CUDNN, "--torch", "2.11.0", "--mask", "padding-causal")
    assert MASKED_ROWS in found and [d["name"] for d in found[MASKED_ROWS]["data"]] == ["masked-rows"]
    assert "float('-inf')" in found[MASKED_ROWS]["workaround"]


@pytest.mark.parametrize("extra", [["--torch", "2.11.0", "--mask", "causal"], ["--torch", "2.4.1", "--mask", "padding"]])
def test_not_for_is_causal_nor_before_cudnn_took_a_mask(cli, extra):
    assert MASKED_ROWS not in findings(cli, "sdpa-cudnn", *CUDNN, *extra)


def test_the_efficient_kernel_is_not_flagged_for_the_same_mask(cli):
    assert MASKED_ROWS not in findings(cli, "sdpa-efficient", *CUDNN, "--torch", "2.11.0", "--mask", "padding-causal")


FA2 = ["--gpu", "A100", "--heads", "16", "--kv-heads", "8", "--hdim", "128", "--seqlen", "4096", "--dtype", "bf16",
       "--mask", "causal", "--softcap", "50"]


def test_softcap_training_on_flash_attn_261_is_a_known_bug_fixed_in_262(cli):
    found = findings(cli, "flash-attn-2", *FA2, "--flash-attn", "2.6.1", "--train")
    assert found[SOFTCAP_BWD]["fixed_in"] == {"flash_attn": "2.6.2"}
    assert "huggingface/transformers#31997" in " ".join(found[SOFTCAP_BWD]["references"])


@pytest.mark.parametrize("extra", [["--flash-attn", "2.6.1", "--infer"], ["--flash-attn", "2.6.2", "--train"],
                                   ["--flash-attn", "2.6.3", "--train"]])
def test_softcap_forward_and_fixed_releases_are_clean(cli, extra):
    assert SOFTCAP_BWD not in findings(cli, "flash-attn-2", *FA2, *extra)
