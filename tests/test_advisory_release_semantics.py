"""A known bug whose config conditions hold makes the verdict depend on the release when the release is not given;
one that waits on a config fact the user left out stays a note."""

import json


def verdict(cli, *args: str) -> dict:
    code, out, err = cli("explain", "--backend", "flash-attn-2", "--format", "json", *args)
    assert code in (0, 1), err
    return json.loads(out)["results"][0]["verdicts"][0]


SEQTAIL = ("--hdim", "128", "--heads", "8", "--batch", "2", "--seqlen", "1000", "--dtype", "bf16", "--train",
           "--gpu", "H100")


def test_a_bug_open_only_on_the_release_makes_the_verdict_depend_on_it(cli):
    open_ = verdict(cli, *SEQTAIL)
    assert open_["status"] == "depends"
    assert any(f["rule"] == "ADV-FLASH-ATTN-2-BWD-SEQTAIL-DQ-NAN" and f["applies"] is None
               for f in open_["findings"])


def test_the_release_given_decides_it(cli):
    assert verdict(cli, *SEQTAIL, "--flash-attn", "2.0.1")["status"] == "wrong-results"
    assert verdict(cli, *SEQTAIL, "--flash-attn", "2.8.3")["status"] == "supported"


def test_a_bug_waiting_on_a_config_fact_left_out_stays_a_note(cli):
    args = ("--hdim", "128", "--heads", "32", "--dtype", "fp16", "--gpu", "H800", "--flash-attn", "2.8.3",
            "--infer")
    assert verdict(cli, *args)["status"] == "supported"


def test_flash_attn_4_is_swept_beta_by_beta(cli):
    """Betas 3 and 4 refuse sm80 for its arch, betas 5 and later refuse learnable sinks there: with no beta given,
    no modelled release runs it, so the verdict is a refusal, not 'depends'."""
    import json

    args = ["explain", "--backend", "flash-attn-4", "--hdim", "64", "--heads", "8", "--seqlen", "1024", "--dtype",
            "bf16", "--sinks", "--format", "json"]
    code, out, err = cli(*args, "--gpu", "A100")
    verdict = json.loads(out)["results"][0]["verdicts"][0]
    assert verdict["status"] == "unsupported" and verdict["findings"][0]["rule"] == "AD-NO-RELEASE-RUNS"
    code, out, err = cli(*args, "--gpu", "H100")
    assert json.loads(out)["results"][0]["verdicts"][0]["status"] != "unsupported"
