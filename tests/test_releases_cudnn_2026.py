"""The cuDNN / cudnn-frontend / flash-attn releases of 2026 the horizons claim: which answer in the rules and which not."""


import pytest

SHAPE = ["--heads", "16", "--dtype", "bf16"]
TRAIN = ["--hdim", "128", *SHAPE, "--seqlen", "4096", "--train", "--causal"]
NEWEST_READ = ["--cudnn", "9.26.0", "--cudnn-frontend", "1.33.0", "--flash-attn", "2.8.3.post2",
               "--flash-attn-4", "4.0.0b27"]


def _verdicts(doc: dict) -> dict[str, dict]:
    return {v["backend"]: v for v in doc["results"][0]["verdicts"]}


def _rules(verdict: dict) -> set[str]:
    return {f["rule"] for f in verdict["findings"]}


@pytest.mark.parametrize("gpu", ["H100", "B200", "RTX5090"])
def test_newest_read_releases_answer_inside_the_rules(explain, gpu):
    verdicts = _verdicts(explain("--gpu", gpu, *NEWEST_READ, *TRAIN, exit=0))
    for backend in ("cudnn-fe", "flash-attn-2", "flash-attn-4"):
        rules = _rules(verdicts[backend])
        assert "AD-OUTSIDE-RULES" not in rules, (backend, rules)
        assert "FA4-BETA-NEWER-THAN-READ" not in rules
        assert verdicts[backend]["status"] != "outside-rules"


def test_releases_without_stored_notes_stay_outside(explain):
    verdicts = _verdicts(explain("--gpu", "H100", "--cudnn", "9.27.0", "--cudnn-frontend", "1.34.0",
                                 "--flash-attn-4", "4.0.0b37", *TRAIN, exit=0))
    assert "AD-OUTSIDE-RULES" in _rules(verdicts["cudnn-fe"])
    assert "FA4-BETA-NEWER-THAN-READ" in _rules(verdicts["flash-attn-4"])
    assert verdicts["flash-attn-4"]["status"] == "outside-rules"


@pytest.mark.parametrize("case", [
    ["--infer", "--paged-kv", "--hdim", "256", "--seqlen-q", "1", "--seqlen-kv", "8192"],
    ["--train", "--causal", "--hdim", "256", "--seqlen", "4096"],
    ["--train", "--causal", "--hdim", "128", "--seqlen", "4096", "--deterministic"],
    ["--train", "--mask", "causal-bottom-right", "--hdim", "128", "--seqlen-q", "1024", "--seqlen-kv", "4096"],
])
def test_hopper_paths_of_frontend_133_are_accepted(explain, case):
    verdict = _verdicts(explain("--gpu", "H100", *NEWEST_READ, *SHAPE, *case, exit=0))["cudnn-fe"]
    assert verdict["status"] == "supported", _rules(verdict)


def test_fp8_forward_still_takes_no_sink_at_frontend_133(explain):
    args = ["--gpu", "H100", *NEWEST_READ, "--hdim", "128", "--heads", "16", "--seqlen", "4096", "--infer"]
    fp8 = _verdicts(explain(*args, "--dtype", "fp8", "--sinks", exit=1))["cudnn-fe"]
    assert "CUDNN-FE-SINKS-FP8-FWD" in _rules(fp8)
    bf16 = _verdicts(explain(*args, "--dtype", "bf16", "--sinks", exit=0))["cudnn-fe"]
    assert "CUDNN-FE-SINKS-FP8-FWD" not in _rules(bf16)
