"""cuDNN asked about GPUs that are not here (tools/cudnn_devices): the recorded answers cover architectures the GPU
machine does not have, the method's control held (the H100 answered the same natively and as a descriptor), and
the rules agree with every answer (tests/test_observations.py replays the observations)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RAW = ROOT / "tools" / "cudnn_devices" / "out" / "h100_cudnn9.19_fe1.32.jsonl"
OBSERVED = ROOT / "tests" / "observations" / "descriptors_cudnn9.19_fe1.32.jsonl"


def rows():
    lines = [json.loads(line) for line in RAW.read_text(encoding="utf-8").splitlines()]
    return lines[0], lines[1:]


def test_the_answers_cover_architectures_that_are_not_on_the_gpu_machine():
    sms = {json.loads(line)["environment"]["sm"] for line in OBSERVED.read_text(encoding="utf-8").splitlines()}
    assert {80, 86, 89, 100, 103, 120} <= sms and len(sms - {90}) >= 3


def test_the_descriptor_path_answers_as_the_gpu_itself_does():
    run, checks = rows()
    assert run["cudnn_backend"] == 91900 and run["cudnn_frontend"] == "1.32.0"
    key = lambda r: (r["variant"], r["dtype"], r["hdim"], r["hdim_v"], r["phase"])  # noqa: E731
    native = {key(r): r["answer"] for r in checks if r["target"] == "H100 (this GPU)"}
    described = {key(r): r["answer"] for r in checks if r["target"] == "H100 (as a descriptor)"}
    assert native and native == described


def test_the_descriptor_separates_architectures_where_the_rules_say_they_differ():
    _, checks = rows()
    answer = {(r["target"], r["variant"], r["dtype"], r["hdim"], r["hdim_v"], r["phase"]): r["answer"] for r in checks}
    fp8_fwd = ("plain", "fp8", 128, 128, "fwd-infer")
    assert answer[("A100", *fp8_fwd)] == "refused" and answer[("B200", *fp8_fwd)] == "supported"
    mla_bwd = ("plain", "bf16", 192, 128, "bwd")
    assert answer[("L40S", *mla_bwd)] == "refused" and answer[("B200", *mla_bwd)] == "supported"
    assert all(r["answer"] == "refused" for r in checks if r["target"] == "T4")


def test_the_converter_pairs_forward_and_backward_for_training():
    path = ROOT / "tools" / "cudnn_devices" / "observations.py"
    spec = importlib.util.spec_from_file_location("cudnn_observations", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _, checks = rows()
    made = module.configs(checks)
    train = [(c, answers) for c, target, answers in made if c["train"] and target == "B200"]
    assert train and all(len(answers) == 2 and answers[1]["phase"].startswith("bwd") for _, answers in train)
