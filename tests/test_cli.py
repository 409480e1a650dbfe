"""The command line as a user meets it: answers, JSON, exit codes, and one line for bad input."""

from __future__ import annotations

import json

import pytest

from attndoctor.environment import environment_from_flags

TE_CASE = ["explain", "--hdim", "192", "--hdim-v", "128", "--seqlen", "4096", "--heads", "16", "--dtype", "bf16",
           "--train", "--causal", "--layout", "bshd", "--gpu", "H100", "--te", "2.5", "--backend", "te-fused",
           "--format", "json"]


def te_fused(cli, *extra):
    code, out, err = cli(*TE_CASE, *extra)
    doc = json.loads(out)
    return doc, doc["results"][0]["verdicts"][0]


def test_explain_te_fused_cudnn_91_refused_with_upgrade_fix(cli):
    doc, v = te_fused(cli, "--cudnn", "9.1.0")
    assert v["backend"] == "te-fused" and v["supported"] is False and v["status"] == "unsupported"
    fix = v["fix"]["fixes"][0]
    assert (fix["kind"], fix["target"]) == ("upgrade", "cudnn") and fix["to"].startswith("9.5")
    assert doc["schema_version"] == 1 and "environment" in doc and "selected" in doc["results"][0]
    finding = v["findings"][0]
    assert {"rule", "effect", "message", "fixes", "references"} <= set(finding)


def test_explain_te_fused_cudnn_95_supported(cli):
    _, v = te_fused(cli, "--cudnn", "9.5.0")
    assert v["supported"] is True and v["status"] == "supported"


def test_explain_te_fused_without_cudnn_depends_on_it(cli):
    _, v = te_fused(cli)
    assert v["supported"] is None and v["status"] == "depends"
    assert "cudnn" in v["missing"]


def test_explain_with_almost_nothing_gives_conditions_not_unknowns(cli):
    code, out, err = cli("explain", "--hdim", "192", "--train", "--format", "json")
    assert code == 0
    verdicts = {v["backend"]: v for v in json.loads(out)["results"][0]["verdicts"]}
    fused = verdicts["te-fused"]
    conditions = " ".join(f.get("applies_if", "") for f in fused["findings"])
    assert "cudnn" in conditions and "sm" in conditions
    assert all(v["status"] in ("supported", "depends", "unsupported") for v in verdicts.values())
    code, text, _ = cli("explain", "--hdim", "192", "--train")
    assert "te-fused" in text and "if " in text


def test_text_output_has_verdicts_fix_and_selection(cli):
    code, out, err = cli(*[a for a in TE_CASE if a not in ("--format", "json")], "--cudnn", "9.1.0")
    assert "te-fused" in out and "refused" in out and "cuDNN to 9.5.0" in out
    assert "TransformerEngine" in out and "\x1b[" not in out  # no colour when not a terminal


def test_check_without_gpu_says_so_and_exits_zero(cli, monkeypatch):
    env = environment_from_flags({"torch": "2.6.0", "cudnn": "none", "te": "none", "flash_attn": "none",
                                  "flash_attn_3": "none", "flash_attn_4": "none", "cudnn_frontend": "none"})
    env.source, env.no_gpu = "probe", True
    monkeypatch.setattr("attndoctor.probe.probe", lambda timeout=20.0, use_cache=True: env)
    code, out, err = cli("check")
    assert code == 0, out + err
    assert "no NVIDIA GPU" in out
    assert "Llama-3-8B train" in out and "sdpa-math" in out
    code, out, _ = cli("check", "--format", "json")
    doc = json.loads(out)
    assert len(doc["results"]) == 14
    math = [v for r in doc["results"] for v in r["verdicts"] if v["backend"] == "sdpa-math"]
    assert any(v["supported"] for v in math)
    flash = [v for r in doc["results"] for v in r["verdicts"] if v["backend"] == "sdpa-flash"]
    assert all(v["supported"] is False for v in flash)


def test_check_with_nothing_installed_still_exits_zero(cli, monkeypatch):
    env = environment_from_flags({p: "none" for p in ("torch", "cudnn", "te", "flash_attn", "flash_attn_3",
                                                      "flash_attn_4", "cudnn_frontend")})
    env.source, env.no_gpu = "probe", True
    monkeypatch.setattr("attndoctor.probe.probe", lambda timeout=20.0, use_cache=True: env)
    code, out, err = cli("check")
    assert code == 0 and "no NVIDIA GPU" in out


@pytest.mark.parametrize("args, fragment", [
    (["explain", "--hdim", "-3"], "hdim: expected a whole number"),
    (["explain", "--hdim", "0"], "hdim"),
    (["explain", "--hdim", "1.5"], "hdim"),
    (["explain", "--hdim", "99999999999"], "hdim"),
    (["explain", "--dtype", "int4"], "dtype: expected one of"),
    (["explain", "--mask", "weird"], "mask: expected one of"),
    (["explain", "--backend", "nope"], "unknown backend 'nope'"),
    (["explain", "--hdim", "64", "--format", "yaml"], "unknown format 'yaml'"),
    (["explain", "--gpu", "Z9000"], "unknown GPU"),
    (["explain", "--cudnn", "nine"], "--cudnn"),
    (["explain", "--torch", "2.x"], "--torch: '2.x' is not a version"),
    (["explain", "--seqlen", "0"], "seqlen_q"),
    (["explain", "--cp", "0"], "cp"),
    (["explain", "--heads", "1e9"], "heads"),
    (["explain", "--softcap", "-1"], "softcap"),
    (["explain", "--dropout", "nan"], "dropout"),
    (["explain", "--layout", "bxhd"], "layout"),
    (["explain", "--heads", "16", "--kv-heads", "3"], "multiple of kv_heads"),
    (["explain", "--dropout", "1.5"], "dropout"),
    (["explain", "--window", "x"], "window"),
    (["explain", "--config-file", "/nonexistent.json"], "no such config file"),
    (["explain", "--env-file", "/nonexistent.json"], "no such env file"),
    (["explain", "--set-env", "NOEQUALS"], "NAME=VALUE"),
    (["explain", "--hdim", "64", "--fail-on", "bad"], "--fail-on"),
    (["explain", "--hdim", "64", "--require", "nope"], "unknown backend 'nope'"),
    (["explain", "--no-such-flag"], "No such option"),
    (["explain", "--rules-dir", "/nonexistent"], "no such rules folder"),
    (["rules", "show", "NOPE-NOPE"], "no rule"),
    (["bogus"], "No such command"),
])
def test_bad_input_is_one_line_and_exit_2(cli, args, fragment):
    code, out, err = cli(*args)
    assert code == 2, (out, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("attndoctor: error:") and fragment in lines[0], lines[0]
    assert "Traceback" not in err


def test_broken_rule_file_is_exit_2_naming_file_and_rule(cli, tmp_path):
    from conftest import write_rules

    folder = write_rules(tmp_path / "r", rules='[[rule]]\nid = "T-BAD"\ntitle = "x"\nbackends = ["alpha"]\n'
                         'effect = "unsupported"\ncondition = "hdim >"\nmessage = "m"\nsymptom = "s"\n'
                         'references = ["x"]\n')
    code, out, err = cli("explain", "--rules-dir", str(folder))
    assert code == 2 and "rules.toml" in err and "T-BAD" in err and "column" in err


def test_env_file_round_trip(cli, tmp_path):
    code, out, _ = cli("explain", "--hdim", "64", "--gpu", "A100", "--cudnn", "8.9.7", "--te", "1.9",
                       "--format", "json")
    env_file = tmp_path / "env.json"
    env_file.write_text(out)
    code, out2, _ = cli("explain", "--hdim", "64", "--env-file", str(env_file), "--format", "json")
    env = json.loads(out2)["environment"]
    assert env["sm"] == 80 and env["versions"]["cudnn"] == "8.9.7"
    bad = tmp_path / "bad.json"
    bad.write_text('{"environment": {"versions": {"cudnn": "x.y"}}}')
    code, _, err = cli("explain", "--env-file", str(bad))
    assert code == 2 and "cudnn" in err


def test_rules_commands(cli):
    code, out, _ = cli("rules", "list")
    assert code == 0 and "TE-FUSED-SEQ64-CUDNN8" in out
    code, out, _ = cli("rules", "show", "TE-FUSED-SEQ64-CUDNN8")
    assert code == 0 and "source:" in out and "fix:" in out and "example:" in out
    code, out, _ = cli("rules", "show", "TE-FUSED-SEQ64-CUDNN8", "--format", "json")
    assert json.loads(out)["id"] == "TE-FUSED-SEQ64-CUDNN8"
    code, out, _ = cli("rules", "lint")
    assert code == 0 and "no problems" in out


def test_version_and_help(cli):
    code, out, _ = cli("--version")
    assert code == 0 and out.startswith("attndoctor ")
    code, out, _ = cli("explain", "--help")
    assert code == 0 and "--hdim" in out and "--cudnn" in out


def test_output_file(cli, tmp_path):
    target = tmp_path / "report.json"
    code, out, _ = cli("explain", "--hdim", "64", "--format", "json", "--output", str(target))
    assert code == 0 and out == "" and json.loads(target.read_text())["schema_version"] == 1


def test_rules_matrix_is_generated_from_the_rules(cli):
    code, out, _ = cli("rules", "matrix", "--gpu", "H100", "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["sm"] == 90
    rows = {r["feature"]: {(c["backend"], c["swept"]): c for c in r["cells"]} for r in doc["rows"]}
    mla = rows["head dim 192/128 (MLA), backward"][("te-fused", "cudnn")]
    assert "9.1.0" not in mla["versions"] and "9.5.0" in mla["versions"]
    code, md, _ = cli("rules", "matrix", "--gpu", "H100", "--format", "markdown")
    assert code == 0 and md.count("\n|") > 20
    code, _, err = cli("rules", "matrix", "--gpu", "nope")
    assert code == 2 and "unknown GPU" in err


def test_depends_verdicts_say_where_they_run(cli):
    code, out, _ = cli("explain", "--hdim", "192", "--hdim-v", "128", "--train", "--backend", "te-fused",
                       "--format", "json")
    where = {w["gpu"]: w for w in json.loads(out)["results"][0]["verdicts"][0]["runs_where"]}
    hopper = next(w for g, w in where.items() if g.startswith("H100"))
    blackwell = next(w for g, w in where.items() if g.startswith("B200"))
    ampere = next(w for g, w in where.items() if g.startswith("A100"))
    assert hopper["swept"] == "cudnn" and hopper["text"] == "≥9.5"
    assert blackwell["text"] == "≥9.11" and ampere["text"] == "✗"
    code, text, _ = cli("explain", "--hdim", "192", "--hdim-v", "128", "--train", "--backend", "te-fused")
    assert "runs on" in text and "cudnn ≥9.5" in text and "not on A100" in text


def test_a_config_no_modelled_release_runs_is_refused_not_depends(cli):
    """Every modelled release refuses whatever the facts left out are: a refusal naming the modelled range."""
    code, text, _ = cli("explain", "--hdim", "192", "--hdim-v", "128", "--train", "--gpu", "H100",
                        "--backend", "flash-attn-2", "--format", "json")
    verdict = json.loads(text)["results"][0]["verdicts"][0]
    assert verdict["status"] == "unsupported"
    assert "no flash-attn release the rules model (2.0.0 to 2.8.3) runs it on H100 SXM (sm90)" in text
    assert "releases after 2.8.3 are not modelled" in text
    code, text, _ = cli("explain", "--hdim", "192", "--hdim-v", "128", "--train", "--backend", "flash-attn-2")
    assert "✗ refused" in text and "runs it on any GPU" in text
    code, text, _ = cli("explain", "--hdim", "128", "--gpu", "T4", "--backend", "flash-attn-2")
    assert "✗ refused" in text and "? depends" not in text


def test_a_config_every_modelled_release_runs_is_runs(cli):
    """Every modelled release on every GPU runs it whatever is left out: a definite runs, with the range it rests on."""
    code, text, _ = cli("explain", "--hdim", "64", "--heads", "8", "--seqlen", "4", "--batch", "2", "--dtype", "fp16",
                        "--infer", "--backend", "sdpa-math", "--format", "json")
    verdict = json.loads(text)["results"][0]["verdicts"][0]
    assert verdict["status"] == "supported"
    assert any(f["rule"] == "AD-EVERY-RELEASE-RUNS" for f in verdict["findings"])
    code, text, _ = cli("explain", "--hdim", "64", "--heads", "8", "--seqlen", "4", "--batch", "2", "--dtype", "fp16",
                        "--infer", "--backend", "sdpa-efficient", "--format", "json")
    assert json.loads(text)["results"][0]["verdicts"][0]["status"] == "depends"  # Blackwell only from torch 2.7


def test_a_config_some_release_runs_stays_depends(cli):
    """One modelled release that may run it keeps the verdict open: a fact left out never becomes a refusal."""
    code, text, _ = cli("explain", "--hdim", "128", "--gpu", "H100", "--backend", "flash-attn-2", "--format", "json")
    assert json.loads(text)["results"][0]["verdicts"][0]["status"] == "depends"
