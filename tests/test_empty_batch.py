"""An empty batch (batch 0) is an input explain takes, and each backend's verdict on it follows the releases that
refuse it; a flash-attn wheel built against a torch nightly is refused on the torch it is named for."""

from __future__ import annotations

import json

import pytest

from attndoctor.config import make_config
from attndoctor.errors import UsageError

SHAPE = ["--batch", "0", "--heads", "8", "--seqlen", "128", "--hdim", "64", "--dtype", "fp16", "--infer",
         "--layout", "bhsd"]


def report(cli, *args):
    code, out, err = cli("explain", *args, "--format", "json")
    assert code in (0, 1), err
    return json.loads(out)["results"][0]


def verdict(cli, backend, *args):
    return next(v for v in report(cli, *args)["verdicts"] if v["backend"] == backend)


def finding(v, rule):
    return next((f for f in v["findings"] if f["rule"] == rule and f["applies"] is not False), None)


def test_batch_zero_is_a_config_and_below_zero_is_not():
    assert make_config({"batch": 0}).batch == 0
    assert "batch=0" in make_config({"batch": 0, "heads": 8}).label()
    with pytest.raises(UsageError, match="batch: expected a whole number from 0 to 10000000"):
        make_config({"batch": -1})


def test_explain_takes_batch_zero_from_the_command_line(cli):
    code, out, err = cli("explain", "--backend", "sdpa-flash", *SHAPE, "--gpu", "A40", "--torch", "2.4.0")
    assert code in (0, 1) and err == "" and "batch=0" in out


def test_a_model_plan_of_an_empty_batch_needs_no_score_memory():
    from attndoctor.sources.model_plan import score_bytes

    assert score_bytes(make_config({"batch": 0, "heads": 8, "seqlen": 128, "hdim": 64})) == 0


def test_the_kernel_runners_do_not_build_an_empty_batch():
    from attndoctor_kernels.spec import NotBuilt, case_spec

    config = make_config({"batch": 0, "heads": 8, "seqlen": 128, "hdim": 64, "dtype": "fp16"}).to_dict()
    with pytest.raises(NotBuilt, match="batch 0"):
        case_spec(config)
    assert case_spec({**config, "batch": 1}).batch == 1


FLASH = "ADV-SDPA-FLASH-EMPTY-BATCH"


def test_issue_133780_flash_fails_on_torch_240_and_sdpa_still_picks_it(cli):
    result = report(cli, "--backend", "sdpa-flash", *SHAPE, "--gpu", "A40", "--torch", "2.4.0")
    v = next(v for v in result["verdicts"] if v["backend"] == "sdpa-flash")
    f = finding(v, FLASH)
    assert v["status"] == "unsupported" and f is not None and f["fixed_in"] == {"torch": "2.10.0"}
    assert "batch size must be positive" in f["symptom"]
    pytorch = next(s for s in result["selected"] if s["framework"] == "pytorch")
    assert pytorch["backend"] == "sdpa-flash" and pytorch["status"] == "fails"


@pytest.mark.parametrize("torch", ["2.10.0", "2.11.0"])
def test_flash_returns_an_empty_output_from_torch_210(cli, torch):
    v = verdict(cli, "sdpa-flash", *SHAPE, "--gpu", "A40", "--torch", torch)
    assert finding(v, FLASH) is None and v["status"] == "supported"


def test_flash_on_a_nonempty_batch_is_untouched(cli):
    args = [a if a != "0" else "1" for a in SHAPE]
    v = verdict(cli, "sdpa-flash", *args, "--gpu", "A40", "--torch", "2.4.0")
    assert finding(v, FLASH) is None and v["status"] == "supported"


@pytest.mark.parametrize("backend", ["sdpa-efficient", "sdpa-math"])
@pytest.mark.parametrize("torch", ["2.4.0", "2.11.0"])
def test_efficient_and_math_run_an_empty_batch(cli, backend, torch):
    v = verdict(cli, backend, *SHAPE, "--gpu", "A40", "--torch", torch)
    assert v["status"] == "supported" and not [f for f in v["findings"] if "EMPTY" in f["rule"]]


BAD_PARAM = "ADV-SDPA-CUDNN-EMPTY-BATCH-BAD-PARAM"
NONE_OUTPUT = "ADV-SDPA-CUDNN-EMPTY-BATCH-NONE-OUTPUT"
H100 = ["--gpu", "H100", "--cudnn", "9.1.0"]


def test_cudnn_before_25_fails_in_the_frontend(cli):
    f = finding(verdict(cli, "sdpa-cudnn", *SHAPE, *H100, "--torch", "2.4.0"), BAD_PARAM)
    assert f is not None and "CUDNN_STATUS_BAD_PARAM" in f["symptom"] and f["fixed_in"] == {"torch": "2.5.0"}


@pytest.mark.parametrize("torch", ["2.5.0", "2.8.0"])
def test_cudnn_from_25_to_28_returns_an_empty_output(cli, torch):
    v = verdict(cli, "sdpa-cudnn", *SHAPE, "--gpu", "H100", "--cudnn", "9.10.2", "--torch", torch)
    assert finding(v, BAD_PARAM) is None and finding(v, NONE_OUTPUT) is None


def test_cudnn_from_29_returns_none_and_is_what_sdpa_picks_on_an_h100(cli):
    result = report(cli, *SHAPE, "--gpu", "H100", "--cudnn", "9.19.0", "--torch", "2.11.0")
    v = next(v for v in result["verdicts"] if v["backend"] == "sdpa-cudnn")
    f = finding(v, NONE_OUTPUT)
    assert v["status"] == "unsupported" and f is not None and "returns None" in f["symptom"]
    pytorch = next(s for s in result["selected"] if s["framework"] == "pytorch")
    assert pytorch["backend"] == "sdpa-cudnn" and pytorch["status"] == "fails"
    args = [a if a != "0" else "2" for a in SHAPE]
    assert finding(verdict(cli, "sdpa-cudnn", *args, "--gpu", "H100", "--cudnn", "9.19.0", "--torch", "2.11.0"),
                   NONE_OUTPUT) is None


FA2 = "ADV-FLASH-ATTN-2-EMPTY-BATCH"


@pytest.mark.parametrize("flash_attn", ["2.0.0", "2.6.3", "2.8.3"])
def test_flash_attn_2_refuses_an_empty_batch_at_every_release(cli, flash_attn):
    v = verdict(cli, "flash-attn-2", *SHAPE, "--gpu", "A100", "--torch", "2.7.1", "--flash-attn", flash_attn)
    assert v["status"] == "unsupported" and finding(v, FA2) is not None
    args = [a if a != "0" else "1" for a in SHAPE]
    assert finding(verdict(cli, "flash-attn-2", *args, "--gpu", "A100", "--torch", "2.7.1",
                           "--flash-attn", flash_attn), FA2) is None


WHEEL = "ADV-FLASH-ATTN-2-257-TORCH23-WHEEL-SETDEVICE"


def test_flash_attention_928_the_257_wheel_does_not_import_on_torch_23(cli):
    v = verdict(cli, "flash-attn-2", "--backend", "flash-attn-2", "--torch", "2.3.0", "--flash-attn", "2.5.7")
    f = finding(v, WHEEL)
    assert v["status"] == "unsupported" and f["fixed_in"] == {"flash_attn": "2.5.8"}
    assert "_ZN3c104cuda9SetDeviceEi" in f["symptom"]


@pytest.mark.parametrize("torch, flash_attn", [("2.3.0", "2.5.8"), ("2.2.2", "2.5.7"), ("2.4.0", "2.5.7")])
def test_other_pairs_are_not_that_wheel(cli, torch, flash_attn):
    v = verdict(cli, "flash-attn-2", "--backend", "flash-attn-2", "--torch", torch, "--flash-attn", flash_attn)
    assert finding(v, WHEEL) is None and v["status"] != "unsupported"


def test_why_names_the_257_wheel_for_its_undefined_symbol(cli):
    text = ("ImportError: /env/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: "
            "undefined symbol: _ZN3c104cuda9SetDeviceEi")
    code, out, err = cli("why", text, "--flash-attn", "2.5.7", "--torch", "2.3.0", "--format", "json")
    assert code in (0, 1), err
    assert json.loads(out)["cause"]["id"] == WHEEL
    code, out, err = cli("why", text, "--flash-attn", "2.8.3", "--torch", "2.3.0", "--format", "json")
    doc = json.loads(out)
    assert doc["cause"]["id"] == "FA-UNDEFINED-SYMBOL"
