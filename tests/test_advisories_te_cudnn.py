"""TransformerEngine advisories from the TE and cudnn-frontend trackers reach the verdicts of the TE backends."""

from __future__ import annotations

import json

CP_MLA_GQA = ["explain", "--gpu", "H100", "--cudnn", "9.19.0", "--heads", "16", "--kv-heads", "4", "--hdim", "192",
              "--hdim-v", "128", "--seqlen", "4096", "--dtype", "bf16", "--train", "--causal", "--layout", "bshd",
              "--cp", "2", "--cp-comm", "p2p", "--format", "json"]
ADVISORY = "ADV-TE-CP-MLA-GQA-OUT-VIEW-CRASH"


def findings(cli, *args, backend):
    code, out, err = cli(*args)
    doc = json.loads(out)
    verdict = next(v for v in doc["results"][0]["verdicts"] if v["backend"] == backend)
    return {f["rule"]: f for f in verdict["findings"]}


def test_te_2_14_cp_with_gqa_and_mla_head_dims_carries_the_crash_advisory(cli):
    found = findings(cli, *CP_MLA_GQA, "--te", "2.14.0", backend="te-fused")
    assert ADVISORY in found and found[ADVISORY]["applies"] is True
    assert found[ADVISORY]["fixed_in"] == {"te": "2.15.0"}
    assert "NVIDIA/TransformerEngine#2868" in " ".join(found[ADVISORY]["references"])


def test_te_2_15_has_the_fix(cli):
    assert ADVISORY not in findings(cli, *CP_MLA_GQA, "--te", "2.15.0", backend="te-fused")


def test_equal_head_counts_are_not_affected(cli):
    args = [a if a != "4" else "16" for a in CP_MLA_GQA]
    assert ADVISORY not in findings(cli, *args, "--te", "2.14.0", backend="te-fused")
