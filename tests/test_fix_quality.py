"""Fixes a user can trust, conditions a user can read, and an engine without import cycles (issue #12, part 7)."""

from __future__ import annotations

import ast
from pathlib import Path

import attndoctor.engine

ENGINE = Path(attndoctor.engine.__file__).parent


def _engine_imports(path: Path) -> set[str]:
    """The engine modules a file imports, at the top or inside functions (a lazy import still ties a cycle)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                names = [node.module] if node.module else [a.name for a in node.names]
                out.update(n.split(".")[0] for n in names)
            elif node.module and node.module.startswith("attndoctor.engine."):
                out.add(node.module.split(".")[2])
            elif node.level == 2 and node.module and node.module.startswith("engine."):
                out.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            out.update(a.name.split(".")[2] for a in node.names if a.name.startswith("attndoctor.engine."))
    return out


def test_engine_modules_import_no_cycle():
    graph = {p.stem: _engine_imports(p) & {q.stem for q in ENGINE.glob("*.py")} for p in ENGINE.glob("*.py")}
    seen: dict[str, int] = {}

    def visit(name: str, path: list[str]) -> None:
        if seen.get(name) == 1:
            raise AssertionError("import cycle: " + " -> ".join(path[path.index(name):] + [name]))
        if seen.get(name) == 2:
            return
        seen[name] = 1
        for nxt in sorted(graph[name]):
            visit(nxt, path + [name])
        seen[name] = 2

    for module in sorted(graph):
        visit(module, [])


# ---------------------------------------------------------------- the fix search (shipped rules, real configs)

from attndoctor.config import make_config  # noqa: E402
from attndoctor.engine.evaluate import Evaluator, plan_of  # noqa: E402
from attndoctor.engine.rules import Fix, load_rulebase  # noqa: E402
from attndoctor.environment import environment_from_flags  # noqa: E402

OLD_H100 = {"gpu": "H100", "torch": "2.5.1", "cudnn": "9.1", "te": "2.3", "flash_attn": "2.6.3"}
MLA = {"batch": 2, "heads": 16, "hdim": 192, "hdim_v": 128, "seqlen": 4096, "dtype": "bf16", "train": True}


def verdict(backend: str, config: dict, env: dict):
    base = load_rulebase()
    return Evaluator(base).verdict(base.backend(backend), make_config(config), environment_from_flags(env))


def plans(v):
    return ([v.fix] if v.fix else []) + list(v.alternatives)


def test_no_plan_sets_one_field_twice():
    """SDPA flash with a padding mask: 'set mask = none and set mask = causal' contradicts itself."""
    config = {"batch": 2, "heads": 16, "hdim": 64, "seqlen": 4096, "dtype": "bf16", "train": True, "mask": "padding"}
    v = verdict("sdpa-flash", config, OLD_H100)
    assert plans(v)
    for plan in plans(v):
        targets = [f.target for f in plan.fixes]
        assert len(targets) == len(set(targets)), plan.describe()


def test_two_upgrades_of_one_package_become_the_higher_one():
    config = dict(MLA, mask="causal-bottom-right", softcap=30.0)
    v = verdict("te-fused", config, OLD_H100)
    texts = [p.describe() for p in plans(v)]
    assert texts and not any(t.count("upgrade cuDNN") > 1 for t in texts), texts
    assert [f.describe() for f in plan_of((Fix("upgrade", "cudnn", "9.5.0"), Fix("upgrade", "cudnn", "9.7.0")),
                                          make_config(config), environment_from_flags(OLD_H100))] == \
        ["upgrade cuDNN to 9.7.0 or later"]
    assert plan_of((Fix("upgrade", "cudnn", "9.5.0"), Fix("downgrade", "cudnn", "9.0.0")), make_config(config),
                   environment_from_flags(OLD_H100)) is None


def test_no_fix_sets_a_field_to_the_value_it_has():
    """'set seqlen_q = 4096 (pad ...)' for a seqlen_q of 4096 is no step at all."""
    config = dict(MLA, mask="causal-bottom-right", softcap=30.0)
    v = verdict("te-fused", config, OLD_H100)
    cfg = make_config(config)
    for plan in plans(v):
        for f in plan.fixes:
            if f.kind in ("change", "pad"):
                assert getattr(cfg, f.target) != f.to, plan.describe()


def test_padding_never_shrinks_a_dimension():
    """MLA 192/128 on flash-attn 2: 'set hdim = 128 (pad q and k ...)' would cut q and k, not pad them."""
    v = verdict("flash-attn-2", MLA, OLD_H100)
    texts = [p.describe() for p in plans(v)]
    assert texts == ["pad hdim_v to 192 (V with zeros to the q/k head dim and slice the output back)"], texts
    v = verdict("flash-attn-2", dict(MLA, hdim=128, hdim_v=192), OLD_H100)
    assert [p.describe() for p in plans(v)][0].startswith("pad hdim to 192")


def test_a_no_op_pad_is_not_offered():
    """SDPA flash on sm86 with head dim 256: 'pad hdim 256 to 256' is no fix."""
    config = {"batch": 2, "heads": 16, "hdim": 256, "seqlen": 4096, "dtype": "bf16", "train": True, "dropout": 0.1}
    v = verdict("sdpa-flash", config, {"gpu": "RTX3090", "torch": "2.6.0"})
    texts = [p.describe() for p in plans(v)]
    assert texts and not any("hdim" in t for t in texts), texts
    assert "set dropout = 0" in texts[0], texts


def test_a_dominated_alternative_is_not_offered():
    """'upgrade cuDNN to 9.3.0' and 'upgrade cuDNN to 9.7.0' with the same result say the same thing twice."""
    config = {"batch": 2, "heads": 16, "hdim": 64, "seqlen": 4096, "dtype": "bf16", "train": True,
              "mask": "causal-bottom-right"}
    v = verdict("te-fused", config, OLD_H100)
    ups = [p for p in plans(v) if all(f.kind == "upgrade" and f.target == "cudnn" for f in p.fixes)]
    assert len(ups) == 1, [p.describe() for p in plans(v)]


# ---------------------------------------------------------------- `rules lint` catches such fixes in the data

from conftest import BACKENDS, SELECTION, write_rules  # noqa: E402
from attndoctor.engine.lint import lint_rule  # noqa: E402
from attndoctor.engine.rules import build_rulebase  # noqa: E402

LINT_RULES = """
[[rule]]
id = "T-MLA"
title = "alpha needs hdim == hdim_v"
backends = ["alpha"]
effect = "unsupported"
condition = "hdim != hdim_v"
message = "no MLA"
symptom = "refused"
fixes = [
  { pad = "hdim", to = "hdim_v", note = "q and k with zeros" },
  { change = "hdim_v", to = "hdim_v", note = "nothing" },
  { change = "hdim_v", to = "hdim", note = "pad V with zeros" },
]
references = ["test"]
examples = [
  { applies = true, config = { hdim = 192, hdim_v = 128, heads = 8, seqlen = 64 }, env = {} },
  { applies = false, config = { hdim = 128, heads = 8, seqlen = 64 }, env = {} },
]
"""


def test_lint_flags_a_pad_that_shrinks_a_no_op_fix_and_a_pad_written_as_change(tmp_path):
    folder = write_rules(tmp_path / "rules", rules=LINT_RULES, backends=BACKENDS, selection=SELECTION)
    rule = build_rulebase(sorted(folder.glob("*.toml")), root=folder).rule("T-MLA")
    problems = [p.message for p in lint_rule(rule)]
    assert any("pad hdim to hdim_v" in p and "shrinks hdim (192 -> 128)" in p for p in problems), problems
    assert any("set hdim_v = hdim_v" in p and "changes nothing" in p for p in problems), problems
    assert any("set hdim_v = hdim" in p and "write it as pad" in p for p in problems), problems
    assert len(problems) == 3, problems


# ---------------------------------------------------------------- flash-attn 2, head dim 256, dropout, sm86/sm89

HD256_DROPOUT = {"batch": 2, "heads": 16, "hdim": 256, "seqlen": 4096, "dtype": "bf16", "train": True,
                 "dropout": 0.1, "mask": "causal"}


def test_flash_attn_2_from_273_skips_the_backward_on_sm86_89_with_dropout():
    """From 2.7.3 the check is gone but run_mha_bwd_hdim256 launches nothing on 99 KB of shared memory."""
    for gpu in ("RTX3090", "L40S"):
        v = verdict("flash-attn-2", HD256_DROPOUT, {"gpu": gpu, "flash_attn": "2.8.3"})
        assert v.status == "wrong-results", (gpu, v.status)
        assert [[f.describe()[:15] for f in p.fixes] for p in plans(v)] == [["set dropout = 0"]]
    assert verdict("flash-attn-2", dict(HD256_DROPOUT, dropout=0.0), {"gpu": "L40S", "flash_attn": "2.8.3"}).status \
        == "supported"
    assert verdict("flash-attn-2", HD256_DROPOUT, {"gpu": "A100", "flash_attn": "2.8.3"}).status == "supported"


def test_the_one_real_fix_for_flash_attn_2_is_dropout_0_not_an_upgrade():
    v = verdict("flash-attn-2", HD256_DROPOUT, {"gpu": "RTX3090", "flash_attn": "2.6.3"})
    assert [p.describe() for p in plans(v)] == ["set dropout = 0"]


def test_a_fix_that_uncovers_another_refusal_is_completed():
    """flash-attn 2.5.0 refuses head dim 256 training on sm86; 2.7.3 runs it only without dropout: both steps."""
    v = verdict("flash-attn-2", HD256_DROPOUT, {"gpu": "RTX3090", "flash_attn": "2.5.0"})
    texts = [p.describe() for p in plans(v)]
    assert texts and "upgrade flash-attn to 2.7.3" in texts[0] and "set dropout = 0" in texts[0], texts


# ---------------------------------------------------------------- context parallelism is the same answer everywhere

CP2 = {"batch": 2, "heads": 16, "hdim": 128, "seqlen": 8192, "dtype": "bf16", "train": True, "mask": "causal", "cp": 2}
NEW_H100 = {"gpu": "H100", "torch": "2.11.0", "cudnn": "9.19", "te": "2.18", "flash_attn": "2.8.3",
            "flash_attn_3": "3.0.0", "flash_attn_4": "4.0.0", "cudnn_frontend": "1.32.0"}


def test_backends_without_their_own_context_parallelism_are_all_refused_for_cp_2():
    base = load_rulebase()
    result = Evaluator(base).evaluate(make_config(CP2), environment_from_flags(NEW_H100))
    for v in result.all_verdicts:
        if v.backend.framework == "transformer-engine":
            continue  # TE shards the sequence itself (rules/te_cp.toml)
        assert v.status == "unsupported", (v.backend.id, v.status)
        why = " ".join(f.message for f in v.blocking())
        assert "context_parallel" in why and "TransformerEngine" in why and "ring attention" in why, (v.backend.id, why)
    assert result.verdict("te-fused").status == "supported"


# ---------------------------------------------------------------- conditions shown to users are simplified

from attndoctor.engine import expr  # noqa: E402


def shown(condition: str, facts: dict | None = None) -> str:
    return expr.render(expr.residual(expr.parse(condition), facts or {}))


def test_ranges_on_one_version_merge():
    assert shown("cudnn < '9.0' or cudnn < '9.10'") == "cudnn < 9.10"
    assert shown("te >= '1.7' and te < '1.12' and te < '1.11'") == "1.7 <= te < 1.11"
    assert shown("not (cudnn >= '9.1' or cudnn >= '9.6')") == "not cudnn >= 9.1"
    assert shown("cudnn >= '9.3' and cudnn < '9.1'") == "false"
    assert shown("hdim > 128 and (cudnn < '9.5' or cudnn_frontend < '1.8')") == \
        "hdim > 128 and (cudnn < 9.5 or cudnn_frontend < 1.8)"


def test_a_range_that_covers_every_version_says_the_package_is_installed():
    assert shown("te < '1.11' or te >= '1.11'") == "TransformerEngine is installed"
    assert shown("sm < 90 or sm >= 90") == "true"
    assert shown("installed('te') and te >= '2.15'") == "te >= 2.15"


def test_double_negation_is_dropped():
    assert shown("not (hdim > 128 and not (cudnn >= '9.5'))", {"hdim": 192}) == "cudnn >= 9.5"


def test_function_syntax_reads_as_words():
    assert shown("installed('flash_attn_4')") == "flash-attn 4 is installed"
    assert shown("not installed('flash_attn')") == "flash-attn is not installed"
    assert "installed(" not in shown("te >= '2.15' and installed('flash_attn_4')")


def test_the_simplified_condition_decides_as_the_original():
    import itertools

    from packaging.version import Version

    from attndoctor.environment import ABSENT
    conditions = ["cudnn < '9.0' or cudnn < '9.10'", "te < '1.11' or te >= '1.11'",
                  "te >= '1.7' and te < '1.12' and te < '1.11'", "installed('te') and te >= '2.15'",
                  "not (cudnn >= '9.1' or cudnn >= '9.6')", "cudnn != '9.1' and cudnn >= '9.0'"]
    for text in conditions:
        node = expr.parse(text)
        simple = expr.residual(node, {})
        for cudnn, te in itertools.product(["8.9", "9.0", "9.1", "9.5", "9.6", "9.12", ABSENT],
                                           ["1.6", "1.7", "1.11", "1.12", "2.15", ABSENT]):
            facts = {"cudnn": cudnn if cudnn == ABSENT else Version(cudnn), "te": te if te == ABSENT else Version(te)}
            assert expr.compile_node(simple)(facts) == expr.compile_node(node)(facts), (text, facts)


# ---------------------------------------------------------------- where the machine is, and install hints that work

import re  # noqa: E402

from attndoctor.environment import PACKAGES, environment_from_dict  # noqa: E402


def _not_installed_message(env) -> str:
    base = load_rulebase()
    v = Evaluator(base).verdict(base.backend("te-fused"), make_config(CP2), env)
    return next(f.message for f in v.findings if f.id == "AD-NOT-INSTALLED")


def test_not_installed_names_the_machine_the_facts_came_from():
    env = environment_from_dict({"gpu": "H100", "sm": 90, "versions": {"torch": "2.6.0", "te": "absent"}})
    env.source = "env-file:node7.json"
    text = _not_installed_message(env)
    assert "on this machine" not in text and "in the environment described by node7.json" in text, text
    env.source = "probe"
    assert "on this machine" in _not_installed_message(env)
    assert "on that machine" in _not_installed_message(environment_from_flags({"gpu": "H100", "te": "none"}))


def _pip_commands(text: str) -> list[str]:
    return re.findall(r"pip install [^()]*", text)


def test_install_hints_exist_and_survive_zsh():
    from attndoctor.environment import install_hint

    assert "pip install" not in install_hint("flash_attn_3") and "hopper" in install_hint("flash_attn_3")
    assert "pip install 'transformer-engine[pytorch]'" in install_hint("te")
    texts = [install_hint(p) for p in PACKAGES]
    texts += [Fix(kind, p, "3.0.0").describe() for p in PACKAGES for kind in ("upgrade", "downgrade")]
    for text in texts:
        assert "flash-attn-3" not in text, text
        for command in _pip_commands(text):
            unquoted = re.sub(r"'[^']*'", "", command)
            assert not re.search(r"[\[\]<>=]", unquoted), command
    fa3 = Fix("upgrade", "flash_attn_3", "3.0.0").describe()
    assert "hopper" in fa3 and "pip install" not in fa3, fa3


def test_a_change_that_lowers_a_size_says_it_changes_the_model():
    # On an A100 no torch or cuDNN release takes 192/128 through SDPA's cuDNN backend (on an H100, torch 2.8 does).
    v = verdict("sdpa-cudnn", dict(MLA, mask="causal"), dict(OLD_H100, gpu="A100"))
    lowered = [f for p in plans(v) for f in p.fixes if f.kind == "change" and f.target == "hdim"]
    assert lowered and all("a model change" in f.describe() for f in lowered), [p.describe() for p in plans(v)]


def test_a_fix_to_a_later_flash_attn_4_beta_keeps_the_beta():
    """Every beta reads as 4.0.0 to the facts, but 'upgrade to 4.0.0b16' is a step from 4.0.0b4: the fix keeps its
    beta (not 4.0.0, which pip cannot install) and a plan drops it only where the installed beta is as late."""
    from attndoctor.config import make_config
    from attndoctor.engine.fixes import plan_of
    from attndoctor.engine.rules import load_rulebase
    from attndoctor.environment import environment_from_flags

    rule = load_rulebase().rule("ADV-FA4-PRE16-CUTE-CORE-THRMMA-CUTLASS-DSL-460")
    assert [(f.target, f.to) for f in rule.fixes] == [("flash_attn_4", "4.0.0b16")]
    config = make_config({"hdim": 128})
    early = environment_from_flags({"gpu": "H100", "flash_attn_4": "4.0.0b4"})
    late = environment_from_flags({"gpu": "H100", "flash_attn_4": "4.0.0b20"})
    assert [f.to for f in plan_of(rule.fixes, config, early)] == ["4.0.0b16"]
    assert plan_of(rule.fixes, config, late) is None
