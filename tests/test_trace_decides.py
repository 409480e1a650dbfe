"""`trace` decides what its record settles: data conditions, the user's call site, one line per site, model intent."""

from __future__ import annotations

import io
import json
import sys
import threading

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import attndoctor  # noqa: E402
from attndoctor.report.trace_text import render_trace_text, trace_document  # noqa: E402
from attndoctor.trace.reader import compact_modules, data_facts, trace_report  # noqa: E402
from attndoctor.trace.recorder import _sdpa_fields  # noqa: E402
from test_bench import _h100_env  # noqa: E402
from test_json_schema import check  # noqa: E402
from test_trace import PROGRAMS, calls_at, line_of, trace  # noqa: E402

FP32_MASK = "ADV-SDPA-CUDNN-FP32-MASK-REINTERPRETED"
MASKED_ROW = "ADV-SDPA-CUDNN-BOOL-MASK-FULLY-MASKED-ROW-UNMASKED"


def _masked_call(mask_dtype: torch.dtype, fully_masked_row: bool = False) -> None:
    """One bf16 SDPA call with a causal mask as bool or as an additive float mask (line numbers differ per dtype)."""
    q = torch.randn(2, 4, 32, 16, dtype=torch.bfloat16)
    keep = torch.ones(32, 32, dtype=torch.bool).tril()
    if fully_masked_row:
        keep[0] = False
    if mask_dtype is torch.bool:
        F.scaled_dot_product_attention(q, q, q, attn_mask=keep)
    else:
        mask = torch.zeros(32, 32, dtype=mask_dtype).masked_fill(~keep, float("-inf"))
        F.scaled_dot_product_attention(q, q, q, attn_mask=mask)


def _on_h100(*runs: tuple) -> tuple:
    """Record the calls on this CPU, then read them as if cuDNN attention had run them on an H100 (torch 2.11)."""
    with attndoctor.trace() as t:
        for run in runs:
            _masked_call(*run)
    calls = t.calls
    for call in calls:
        call["ran"], call["op"] = "sdpa-cudnn", "aten._scaled_dot_product_cudnn_attention.default"
    return trace_report([({"pid": 1}, calls)], _h100_env()), calls


def _advisory(call: dict, rule: str) -> dict:
    return next(a for a in call["advisories"] if a["rule"] == rule)


def _finding(result, backend: str, rule: str):
    return next(f for f in result.verdict(backend).findings if f.id == rule)


def test_a_bool_mask_settles_the_fp32_mask_advisory_as_not_hit_in_the_call_and_the_diagnosis():
    report, _ = _on_h100((torch.bool,))
    [call] = report.calls
    advisory = _advisory(call, FP32_MASK)
    assert advisory["state"] == "not hit" and "attn_mask bool with bf16" in advisory["where"]
    finding = _finding(report.report.results[0], "sdpa-cudnn", FP32_MASK)
    assert finding.applies is False and not finding.at_risk
    out = io.StringIO()
    render_trace_text(report, out)
    assert f"{FP32_MASK} at risk" not in out.getvalue()
    assert f"{FP32_MASK} not hit by the data seen (attn_mask bool with bf16 q, k, v)" in out.getvalue()
    check(trace_document(report))


def test_an_fp32_mask_with_bf16_is_a_hit_and_the_backend_gives_wrong_results():
    report, _ = _on_h100((torch.float32,))
    [call] = report.calls
    assert _advisory(call, FP32_MASK)["state"] == "hit"
    assert call["verdict"] == "wrong-results"
    result = report.report.results[0]
    finding = _finding(result, "sdpa-cudnn", FP32_MASK)
    assert finding.applies is True and finding.blocking and "float bias (fp32)" in finding.message
    assert result.verdict("sdpa-cudnn").status == "wrong-results"
    picked = next(s for s in result.selected if s.framework == "pytorch")
    if picked.backend == "sdpa-cudnn":
        assert picked.status == "wrong-results"


def test_a_bf16_mask_is_not_hit_either():
    report, _ = _on_h100((torch.bfloat16,))
    assert _advisory(report.calls[0], FP32_MASK)["state"] == "not hit"


def test_one_config_from_two_calls_is_hit_where_one_call_meets_it_and_each_call_keeps_its_own_verdict():
    report, _ = _on_h100((torch.bool,), (torch.float32,))
    assert len(report.report.results) == 1
    by_state = {_advisory(c, FP32_MASK)["state"]: c for c in report.calls}
    assert set(by_state) == {"hit", "not hit"}
    assert by_state["hit"]["verdict"] == "wrong-results" and by_state["not hit"]["verdict"] != "wrong-results"
    finding = _finding(report.report.results[0], "sdpa-cudnn", FP32_MASK)
    assert finding.applies is True and by_state["hit"]["site"] in finding.message


def test_a_recorded_fully_masked_row_is_a_hit_and_a_clean_first_mask_stays_at_risk_with_what_was_seen():
    report, _ = _on_h100((torch.bool, True))
    assert _advisory(report.calls[0], MASKED_ROW)["state"] == "hit"
    report, _ = _on_h100((torch.bool, False))
    advisory = _advisory(report.calls[0], MASKED_ROW)
    assert advisory["state"] == "at risk" and "--numerics checks every call" in advisory["where"]
    assert _finding(report.report.results[0], "sdpa-cudnn", MASKED_ROW).at_risk


def _call(q, k, v, mask=None, is_causal=False, **details) -> dict:
    fields, recorded = _sdpa_fields(q, k, v, mask, 0.0, is_causal, None, False)
    return {"site": "x.py:1", "api": "torch.nn.functional.scaled_dot_product_attention", "phase": "forward",
            "config": fields, "details": {**recorded, **details}, "count": 1}


def test_what_the_record_settles_and_what_it_leaves_open():
    q = torch.randn(1, 2, 8, 16)
    facts = data_facts(_call(q, q, q, is_causal=True))
    assert facts["strided-inputs"][0] is False and facts["fp32-mask"][0] is False
    assert facts["masked-rows"][0] is False  # no mask tensor and a top-left is_causal: every row sees key 0
    k = torch.randn(1, 8, 2, 16).transpose(1, 2)
    strided = data_facts(_call(q, k, k))["strided-inputs"]
    assert strided[0] is None and strided[1].startswith("k, v not contiguous")
    grad = torch.randn(1, 2, 8, 16, requires_grad=True)
    assert data_facts(_call(grad, grad, grad))["mask-grad"][0] is False
    assert "mask-grad" not in data_facts(_call(q, q, q))  # q, k, v need no grad: the mask's own grad was not read
    longer = _call(q, q, q, block_mask_seq_lengths=[16, 16])
    assert data_facts(longer)["blockmask-length"][0] is True
    assert data_facts(_call(q, q, q, block_mask_seq_lengths=[8, 8]))["blockmask-length"][0] is False
    unknown = _call(q, q, q)
    unknown["details"]["mask_kind"] = "NestedTensor"
    assert "fp32-mask" not in data_facts(unknown)


def test_every_frame_a_library_s_names_the_innermost_library_frame(tmp_path):
    library = tmp_path / "site-packages" / "fakelib" / "run.py"
    source = "import torch.nn.functional as F\n\n\ndef go(x):\n    return F.scaled_dot_product_attention(x, x, x)\n"
    namespace: dict = {}
    exec(compile(source, str(library), "exec"), namespace)
    with attndoctor.trace() as t:
        worker = threading.Thread(target=namespace["go"], args=(torch.randn(1, 2, 8, 16),))
        worker.start()
        worker.join()
    [call] = t.calls
    assert call["site"] == "fakelib/run.py:5"


@pytest.fixture(scope="module")
def intent_run(tmp_path_factory):
    report = tmp_path_factory.mktemp("intent") / "trace.json"
    done = trace("--format", "json", "--output", str(report), "--", sys.executable, "intent_model.py")
    assert done.returncode == 0, done.stderr
    text = trace("--", sys.executable, "intent_model.py")
    assert text.returncode == 0, text.stderr
    return json.loads(report.read_text()), text.stderr


def test_the_call_site_is_the_user_s_frame_not_transformers_nor_site_packages(intent_run):
    doc, _ = intent_run
    check(doc)
    sites = {f"intent_model.py:{line_of('intent_model.py', m)}"
             for m in ("ATTN-SITE", "SINK-ATTN-SITE", "LIB-SITE", "FLASH-APPLIED-SITE", "FLASH-DROPPED-SITE")}
    assert {c["site"] for c in doc["calls"]} == sites


def test_one_line_per_site_and_finding_with_its_modules_and_calls_counted(intent_run):
    _, text = intent_run
    site = f"intent_model.py:{line_of('intent_model.py', 'ATTN-SITE')}"
    softcap = [line for line in text.splitlines() if line.startswith(site) and "softcap 50" in line]
    assert softcap == [f"{site} layers.{{0-3}}.self_attn (4 modules, 8 calls): the model asks for softcap 50 "
                       "(sdpa_attention_forward(kwargs softcap)):"]
    asks = [line for line in text.splitlines() if line.startswith(site) and "the model asks for" in line]
    assert len(asks) == 2 and asks[1].startswith(f"{site} layers.{{0,2}}.self_attn (2 modules, 2 calls): the model "
                                                 "asks for sliding window 4")
    rows = [line for line in text.splitlines() if line.startswith(f"{site}   layers.{{0-3}}.self_attn")]
    assert len(rows) == 2 and all("   4   " in row for row in rows)


def test_softcap_window_and_sinks_the_call_did_not_apply_are_findings_with_the_fix(intent_run):
    doc, _ = intent_run
    site = f"intent_model.py:{line_of('intent_model.py', 'ATTN-SITE')}"
    layers = calls_at(doc, site)
    assert len(layers) == 8
    for call in layers:
        asks = {f["asks"]: f for f in call["intent_findings"]}
        assert call["intent"]["softcap"] == 50.0 and "softcap" in asks
        assert "eager" in asks["softcap"]["fix"] and asks["softcap"]["effect"] == "wrong-results"
        windowed = call["module"] in ("layers.0.self_attn", "layers.2.self_attn")
        assert ("window" in call["intent"]) is windowed
        # the window drops only where there are more keys than the window (16 > 4, not 3)
        assert ("window" in asks) is (windowed and call["config"]["seqlen_kv"] == 16)
    [sink] = calls_at(doc, f"intent_model.py:{line_of('intent_model.py', 'SINK-ATTN-SITE')}")
    assert [f["asks"] for f in sink["intent_findings"]] == ["sinks"]
    assert sink["intent"]["read_from"]["sinks"] == "sdpa_attention_forward(kwargs s_aux)"
    [plain] = calls_at(doc, f"intent_model.py:{line_of('intent_model.py', 'LIB-SITE')}")
    assert "intent" not in plain and "intent_findings" not in plain


def test_flash_attn_called_without_the_softcap_the_module_asks_for_is_a_finding(intent_run):
    doc, _ = intent_run
    [applied] = calls_at(doc, f"intent_model.py:{line_of('intent_model.py', 'FLASH-APPLIED-SITE')}")
    [dropped] = calls_at(doc, f"intent_model.py:{line_of('intent_model.py', 'FLASH-DROPPED-SITE')}")
    assert applied["ran"] == dropped["ran"] == "flash-attn-2"
    assert applied["config"]["softcap"] == 30.0 and "intent_findings" not in applied
    [found] = dropped["intent_findings"]
    assert found["asks"] == "softcap" and "flash-attn-2 ran with softcap 0" in found["text"]
    assert dropped["intent"]["read_from"]["softcap"] == "FlashSoftcapAttention.softcap"


@pytest.mark.parametrize("names, expected", [
    (["model.layers.0.self_attn", "model.layers.1.self_attn", "model.layers.2.self_attn"],
     "model.layers.{0-2}.self_attn"),
    (["layers.0.attn", "layers.2.attn"], "layers.{0,2}.attn"),
    (["encoder.attn", "decoder.attn"], "encoder.attn, decoder.attn"),
    (["a", "b", "c", "d", "e"], "a, b, c and 2 more"),
    (["", "x.attn", "x.attn"], "x.attn"),
])
def test_module_paths_that_differ_in_one_number_read_as_one_pattern(names, expected):
    assert compact_modules(names) == expected


RECORDS = PROGRAMS / "records"
"""Records written on the H100 (torch 2.11.0+cu130, cuDNN 9.19, transformers 5.17.0) by the recorder of commit 72a7a5d,
which named transformers' line as the site, for `benchmarks/trace_decides_gpu.py qwen2` and `... gemma2`."""


def test_real_left_padded_generation_on_the_h100_decides_both_mask_advisories(tmp_path):
    report = trace_report(read_records_of("qwen2_left_padding_h100.jsonl", tmp_path), _h100_env())
    prefill = [c for c in report.calls if c["config"]["seqlen_q"] == 24]
    decode = [c for c in report.calls if c["config"]["seqlen_q"] == 1]
    assert len(prefill) == 4 and len(decode) == 12
    assert all(_advisory(c, FP32_MASK)["state"] == "not hit" for c in report.calls)
    # the left-padded prompt's padding rows hide every key in the prefill's bool mask
    assert all(_advisory(c, MASKED_ROW)["state"] == "hit" and c["verdict"] == "wrong-results" for c in prefill)
    assert all(_advisory(c, MASKED_ROW)["state"] == "at risk" for c in decode)
    out = io.StringIO()
    render_trace_text(report, out)
    text = " ".join(out.getvalue().split())
    assert text.count(FP32_MASK) == 1
    assert f"model.layers.{{0-3}}.self_attn (4 modules, 16 calls): {FP32_MASK} not hit by the data seen" in text


def test_real_gemma2_under_sdpa_on_the_h100_rules_out_the_fp32_mask_on_its_sliding_layers(tmp_path):
    report = trace_report(read_records_of("gemma2_sdpa_h100.jsonl", tmp_path), _h100_env())
    masked = [c for c in report.calls if c["details"]["mask_kind"] == "bool"]
    assert sorted(c["module"] for c in masked) == ["model.layers.0.self_attn", "model.layers.2.self_attn"]
    assert all(_advisory(c, FP32_MASK)["state"] == "not hit" for c in masked)
    result = report.report.results[masked[0]["result"]]
    assert _finding(result, "sdpa-cudnn", FP32_MASK).applies is False


def read_records_of(name: str, folder) -> list:
    from attndoctor.trace.reader import read_records

    (folder / name).write_text((RECORDS / name).read_text())
    return read_records(folder)
