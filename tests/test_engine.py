"""Verdicts are complete and three-valued; fixes are verified by re-evaluation; selection follows the framework."""

from __future__ import annotations

from attndoctor.config import make_config
from attndoctor.engine.evaluate import Evaluator
from attndoctor.engine.gate import evaluate_gate
from attndoctor.engine.evaluate import Report
from attndoctor.environment import environment_from_flags


def run(base, config, env, backends=None):
    return Evaluator(base).evaluate(make_config(config), environment_from_flags(env), backends)


def test_every_applying_finding_is_listed_not_only_the_first(toy_base):
    r = run(toy_base, {"hdim": 192, "seqlen": 1000, "train": True, "dtype": "bf16"}, {"torch": "2.6", "cudnn": "9.1"})
    v = r.verdict("alpha")
    assert v.status == "unsupported" and v.supported is False
    assert {f.id for f in v.findings if f.applies} == {"T-ALPHA-HDIM", "T-ALPHA-SEQ"}
    assert "got 192" in next(f.message for f in v.findings if f.id == "T-ALPHA-HDIM")


def test_missing_fact_gives_depends_with_the_range_that_matters(toy_base):
    v = run(toy_base, {"hdim": 192, "seqlen": 1024}, {"torch": "2.6"}).verdict("alpha")
    assert v.status == "depends" and v.supported is None
    assert v.missing == ("cudnn",)
    finding = next(f for f in v.findings if f.id == "T-ALPHA-HDIM")
    assert finding.applies is None and finding.condition == "cudnn < 9.5"


def test_fact_given_decides(toy_base):
    assert run(toy_base, {"hdim": 192, "seqlen": 1024}, {"torch": "2.6", "cudnn": "9.5"}).verdict("alpha").supported
    assert run(toy_base, {"hdim": 128, "seqlen": 1024}, {"torch": "2.6"}).verdict("alpha").supported


def test_smallest_fix_is_verified_and_needs_both_findings_fixed(toy_base):
    v = run(toy_base, {"hdim": 192, "seqlen": 1000}, {"torch": "2.6", "cudnn": "9.1"}).verdict("alpha")
    assert v.fix is not None and len(v.fix.fixes) == 2
    kinds = {(f.kind, f.target) for f in v.fix.fixes}
    assert ("change", "seqlen_q") in kinds
    assert v.fix.result == "supported"
    single = run(toy_base, {"hdim": 192, "seqlen": 1024}, {"torch": "2.6", "cudnn": "9.1"}).verdict("alpha")
    assert [f.describe() for f in single.fix.fixes] == ["set hdim = 128"] or \
        single.fix.fixes[0].target in ("cudnn", "hdim")
    texts = {single.fix.describe()} | {a.describe() for a in single.alternatives}
    assert any("cuDNN to 9.5.0" in t for t in texts) and any("hdim = 128" in t for t in texts)


def test_env_switch_fix_ranks_first(toy_base):
    v = run(toy_base, {"hdim": 64, "seqlen": 64}, {"torch": "2.6", "env_vars": {"BETA_OFF": "1"}}).verdict("beta")
    assert v.status == "unsupported" and v.fix.describe() == "unset BETA_OFF"


def test_not_installed_and_import_failure_and_no_gpu(toy_base):
    env = environment_from_flags({"torch": "none", "te": "2.0"})
    r = Evaluator(toy_base).evaluate(make_config({"hdim": 64}), env)
    assert r.verdict("alpha").status == "not-installed"
    env = environment_from_flags({"torch": "2.6", "te": "2.0"})
    env.import_errors["te"] = "undefined symbol: _ZN3c10"
    r = Evaluator(toy_base).evaluate(make_config({"hdim": 64, "seqlen": 64}), env)
    delta = r.verdict("delta")
    assert delta.status == "unsupported" and "undefined symbol" in delta.findings[0].message
    env = environment_from_flags({"torch": "2.6"})
    env.no_gpu = True
    r = Evaluator(toy_base).evaluate(make_config({"hdim": 64, "seqlen": 64, "dtype": "bf16"}), env)
    assert r.verdict("alpha").status == "unsupported"
    assert r.verdict("gamma").status == "supported"  # cpu = true


def test_selection_skips_dispatch_refusals_but_runs_into_runtime_failures(toy_base):
    r = run(toy_base, {"hdim": 64, "seqlen": 64, "train": True, "dtype": "fp16"}, {"torch": "2.6"})
    sel = next(s for s in r.selected if s.framework == "fw")
    assert sel.entry == "SEL-FW-NEW" and sel.status == "fails" and sel.backend == "beta"
    assert "CUDA error" in sel.reason
    r = run(toy_base, {"hdim": 64, "seqlen": 64, "train": True, "dtype": "bf16"},
            {"torch": "2.6", "env_vars": {"BETA_OFF": "1"}})
    assert next(s for s in r.selected if s.framework == "fw").backend == "alpha"
    r = run(toy_base, {"hdim": 64, "seqlen": 64, "train": False}, {"torch": "2.4"})
    assert next(s for s in r.selected if s.framework == "fw").backend == "alpha"


def test_selection_depends_when_the_order_depends(toy_base):
    r = run(toy_base, {"hdim": 192, "seqlen": 64, "train": False, "dtype": "bf16"}, {})
    sel = next(s for s in r.selected if s.framework == "fw")
    assert sel.status == "depends" and "torch" in sel.note


def test_wrong_results_status_and_gate(toy_base):
    r = run(toy_base, {"hdim": 64, "seqlen": 64, "heads": 8, "kv_heads": 1, "qkv_fused": True}, {"torch": "2.6"})
    assert r.verdict("gamma").status == "wrong-results"
    gate = evaluate_gate(Report("explain", environment_from_flags({}), [r], 0))
    assert not gate.passed and "wrong results" in gate.reasons[0]


def test_gate_require_and_fail_on(toy_base):
    r = run(toy_base, {"hdim": 192, "seqlen": 64, "train": False, "dtype": "bf16"}, {"torch": "2.6", "cudnn": "9.1"})
    report = Report("explain", environment_from_flags({}), [r], 0)
    assert evaluate_gate(report).passed
    assert not evaluate_gate(report, require=["alpha"]).passed
    assert evaluate_gate(report, require=["beta"]).passed
    assert evaluate_gate(report, require_any=[["alpha", "beta"]]).passed
    assert not evaluate_gate(report, require_any=[["alpha"]]).passed
    assert evaluate_gate(report, fail_on="unsupported").passed  # selected beta has no finding
    assert not evaluate_gate(report, require=["gamma"], fail_on="slow").passed
    assert evaluate_gate(report, require=["gamma"], fail_on="unsupported").passed


def test_gate_fails_when_no_backend_can_run(toy_base):
    r = run(toy_base, {"hdim": 64, "seqlen": 100, "dtype": "fp32"},
            {"torch": "2.6", "te": "none", "env_vars": {"BETA_OFF": "1"}})
    assert [v.supported for v in r.all_verdicts] == [False, False, False, False]
    gate = evaluate_gate(Report("explain", environment_from_flags({}), [r], 0))
    assert not gate.passed and gate.reasons == [f"{r.config.label()}: no backend can run it"]
    r = run(toy_base, {"hdim": 64, "seqlen": 100, "dtype": "fp32"}, {"torch": "none", "te": "none"})
    assert evaluate_gate(Report("check", environment_from_flags({}), [r], 0)).passed  # nothing installed


def test_ignored_rules_do_not_count(toy_base):
    r = Evaluator(toy_base, ignore={"T-ALPHA-HDIM"}).evaluate(make_config({"hdim": 192, "seqlen": 64}),
                                                                environment_from_flags({"torch": "2.6",
                                                                                        "cudnn": "9.1"}))
    assert r.verdict("alpha").supported is True
