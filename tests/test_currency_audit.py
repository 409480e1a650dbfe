"""The audited rules, each pinned by the case its source line decides and one where it does not."""

from __future__ import annotations

import pytest

from attndoctor.config import make_config
from attndoctor.engine.evaluate import Evaluator
from attndoctor.engine.rules import load_rulebase
from attndoctor.environment import environment_from_flags

RULEBASE = load_rulebase()
EV = Evaluator(RULEBASE)


def applied(config: dict, env: dict, backend: str) -> set[str]:
    v = EV.evaluate(make_config(config), environment_from_flags(env)).verdict(backend)
    return {f.id for f in v.findings if f.applies is True}


def rule(rule_id: str):
    return next(r for r in RULEBASE.rules if r.id == rule_id)


# ---------------------------------------------------------------- cudnn-frontend FP8 head dims and backward

FP8 = dict(heads=16, seqlen=4096, dtype="fp8")


def fe(gpu: str, cudnn: str, frontend: str) -> dict:
    return {"gpu": gpu, "cudnn": cudnn, "cudnn_frontend": frontend}


@pytest.mark.parametrize(("config", "env", "refused"), [
    # sdpa_support_surface.h@1.22.0:160-166: d192_v128_supported = backend >= 91900, for the forward of training too
    (dict(FP8, hdim=192, hdim_v=128, train=True), fe("B200", "9.18.1", "1.21.0"), True),
    (dict(FP8, hdim=192, hdim_v=128, train=True), fe("B200", "9.19.0", "1.21.0"), False),
    (dict(FP8, hdim=192, hdim_v=128, train=False), fe("B200", "9.18.1", "1.32.0"), True),
    # sdpa_support_surface.h@1.29.0:195-197: 256/256 from cuDNN 9.26 and the (256, 512] band, forward
    (dict(FP8, hdim=256, train=False), fe("B200", "9.26.0", "1.32.0"), False),
    (dict(FP8, hdim=256, train=False), fe("B200", "9.25.1", "1.32.0"), True),
    (dict(FP8, hdim=256, train=False), fe("B200", "9.26.0", "1.28.0"), True),
    (dict(FP8, hdim=512, train=False), fe("B200", "9.26.0", "1.32.0"), False),
    (dict(FP8, hdim=512, hdim_v=128, train=False), fe("B200", "9.26.0", "1.32.0"), True),
    # sdpa_fp8_bwd.h@1.32.0:224-230: no backward in the (256, 512] band; per-tensor 256/256 only on SM 10.7-11.9
    (dict(FP8, hdim=512, train=True), fe("B200", "9.26.0", "1.32.0"), True),
    (dict(FP8, hdim=256, train=True), fe("B200", "9.26.0", "1.32.0"), True),
    (dict(FP8, hdim=256, train=True, fp8_recipe="mxfp8"), fe("B200", "9.26.0", "1.29.0"), False),
    # Hopper: forward <= 256, backward exactly 128/128 (unchanged)
    (dict(FP8, hdim=256, train=False), fe("H100", "9.19.0", "1.32.0"), False),
    (dict(FP8, hdim=256, train=True), fe("H100", "9.26.0", "1.32.0"), True),
])
def test_cudnn_fe_fp8_head_dims(config, env, refused):
    assert ("CUDNN-FE-FP8-HDIM" in applied(config, env, "cudnn-fe")) is refused


@pytest.mark.parametrize(("config", "env", "refused"), [
    # sdpa_fp8_bwd.h@1.22.0:233-260: every FP8 backward with d_qk <= 192, d_v <= 128 on prop_major 10 is routed to
    # the deterministic algorithm, which needs cuDNN 9.19 and no dropout
    (dict(FP8, hdim=128, train=True), fe("B200", "9.18.1", "1.22.0"), True),
    (dict(FP8, hdim=128, train=True, dropout=0.125), fe("B200", "9.19.0", "1.32.0"), True),
    (dict(FP8, hdim=128, train=True), fe("B200", "9.19.0", "1.32.0"), False),
    (dict(FP8, hdim=128, train=False), fe("B200", "9.18.1", "1.32.0"), False),
    # 1.21 routes nothing: the check is reached only when the caller asks for determinism
    (dict(FP8, hdim=128, train=True), fe("B200", "9.18.1", "1.21.0"), False),
    (dict(FP8, hdim=128, train=True, deterministic=True), fe("B200", "9.18.1", "1.21.0"), True),
    # prop_major == 10 only: Hopper and sm120 are not routed
    (dict(FP8, hdim=128, train=True), fe("H100", "9.18.1", "1.32.0"), False),
    (dict(FP8, hdim=128, train=True), fe("RTX5090", "9.18.1", "1.32.0"), False),
])
def test_cudnn_fe_fp8_backward_is_deterministic_on_sm10x(config, env, refused):
    assert ("CUDNN-FE-FP8-BWD-DETERMINISTIC-SM10X" in applied(config, env, "cudnn-fe")) is refused


# ---------------------------------------------------------------- cuDNN versions compared as torch compares them

D256 = dict(hdim=256, heads=8, seqlen=2048, dtype="bf16")


@pytest.mark.parametrize(("cudnn", "refused"), [
    ("9.22.0", True), ("9.22.0.44", True), ("9.22.1", False), ("9.22.1.3", False), ("9.23.0.17", False)])
def test_four_part_cudnn_reads_as_its_integer(cudnn, refused):
    env = {"gpu": "H100", "torch": "2.14.0", "cudnn": cudnn}
    assert ("SDPA-CUDNN-HEAD-DIM-214" in applied(D256, env, "sdpa-cudnn")) is refused


# ---------------------------------------------------------------- cuDNN decode guard: the 2.14.0/2.15.0 text

DECODE = dict(hdim=128, heads=8, seqlen_q=1, seqlen_kv=4096, dtype="bf16")


@pytest.mark.parametrize(("torch", "cudnn", "refused"), [
    ("2.14.0", "9.19.0", True),     # the 2.14.0 wheel already carries the guard
    ("2.15.0", "9.24.0", True),
    ("2.15.0", "9.24.1", False),    # '(except 9.24.1)'
    ("2.15.0", "9.24.1.12", False),
    ("2.15.0", "9.25.0", True),
    ("2.15.0", "9.25.1", False),    # '9.19-9.25.0'
    ("2.15.0", "9.18.1", False),
    ("2.13.0", "9.22.0", False),
])
def test_cudnn_decode_guard_reads_the_wheel_text(torch, cudnn, refused):
    env = {"gpu": "B200", "torch": torch, "cudnn": cudnn}
    assert ("SDPA-CUDNN-DECODE-SM10X-214" in applied(DECODE, env, "sdpa-cudnn")) is refused


# ---------------------------------------------------------------- FlexAttention advisory workaround per release

def test_flex_blockmask_workaround_names_only_what_2_5_has():
    adv = rule("ADV-FLEX-BLOCKMASK-LONGER-LSE-BWD-NAN")
    # torch 2.5.0/2.5.1 torch/nn/attention/flex_attention.py: BlockMask has no _adjust (it arrives in 2.6)
    assert "_adjust" not in adv.workaround
    assert "create_block_mask" in adv.workaround


# ---------------------------------------------------------------- cuDNN head dims above 128 in torch 2.7 and 2.8

@pytest.mark.parametrize(("torch", "gpu", "config", "refused"), [
    # 2.7.0 wheel check_cudnn_tensor_shapes: a constant limit of 128 (no device or version branch)
    ("2.7.0", "H100", dict(D256, hdim=192, hdim_v=128), True),
    ("2.7.0", "H100", dict(D256, hdim=128), False),
    # 2.8.0 wheel: limit 256 when the compile-time cuDNN (9.8.0) > 90500 and the device is exactly 9.0
    ("2.8.0", "H100", dict(D256, hdim=256), False),
    ("2.8.0", "H100", dict(D256, hdim=192, hdim_v=128), False),
    ("2.8.0", "H100", dict(D256, hdim=264), True),
    ("2.8.0", "B200", dict(D256, hdim=192, hdim_v=128), True),
    ("2.8.0", "A100", dict(D256, hdim=256), True),
])
def test_cudnn_head_dim_limit_of_2_7_and_2_8(torch, gpu, config, refused):
    env = {"gpu": gpu, "torch": torch, "cudnn": "9.10.2"}
    found = applied(config, env, "sdpa-cudnn") & {"SDPA-CUDNN-HEAD-DIM-128-25", "SDPA-CUDNN-HEAD-DIM-28"}
    assert bool(found) is refused, found


# ---------------------------------------------------------------- new in the torch 2.15.0 wheel

@pytest.mark.parametrize(("torch", "batch", "refused"), [
    ("2.15.0", 100_000, True), ("2.15.0", 65_535, False), ("2.14.0", 100_000, False)])
def test_flash_grid_limit_of_2_15(torch, batch, refused):
    config = dict(batch=batch, hdim=64, heads=8, seqlen=16, dtype="bf16")
    env = {"gpu": "H100", "torch": torch}
    assert ("SDPA-FLASH-BATCH-HEADS-65535-215" in applied(config, env, "sdpa-flash")) is refused
