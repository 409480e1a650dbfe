"""A rule file that does not load fails loudly with the file, the rule id and the position."""

from __future__ import annotations

from pathlib import Path

import pytest

from attndoctor.engine.rules import load_rulebase
from attndoctor.errors import RuleError

from conftest import RULES, write_rules

GOOD = '''
[[rule]]
id = "T-GOOD"
title = "ok"
backends = ["alpha"]
effect = "unsupported"
condition = "hdim > 128"
message = "m"
symptom = "s"
references = ["test"]
'''


def load(tmp_path, rules):
    load_rulebase.cache_clear()
    return load_rulebase(str(write_rules(tmp_path / "r", rules=rules)))


@pytest.mark.parametrize("patch, fragments", [
    (('condition = "hdim > 128"', 'condition = "hdim >> 128"'), ["T-GOOD", "line 3", "condition:", "column 7",
                                                                       "\n    hdim >> 128\n          ^"]),
    (('condition = "hdim > 128"', 'condition = "hdm > 128"'), ["T-GOOD", "did you mean 'hdim'"]),
    (('backends = ["alpha"]', 'backends = ["omega"]'), ["T-GOOD", "unknown backend 'omega'"]),
    (('effect = "unsupported"', 'effect = "broken"'), ["T-GOOD", "effect: expected one of"]),
    (('symptom = "s"\n', ''), ["T-GOOD", "symptom: required"]),
    (('references = ["test"]', 'references = []'), ["T-GOOD", "references: at least one source"]),
    (('id = "T-GOOD"', 'id = "t good"'), ["id: expected upper-case"]),
    (('condition = "hdim > 128"', 'condition = "hdim > 128"\nwhen = { cudnn = "9.5" }'), ["when.cudnn"]),
    (('condition = "hdim > 128"', 'condition = "hdim > 128"\nwhen = { cudnn = ">=9.5,<9.1" }'),
     ["contains no version"]),
    (('condition = "hdim > 128"', 'condition = "hdim > 128"\nwhen = { hdim = ">=9" }'), ["not a version or arch"]),
    (('condition = "hdim > 128"', 'condition = "hdim > 128"\nfixes = [{ upgrade = "numpy", to = "1" }]'),
     ["upgrade takes a package"]),
    (('condition = "hdim > 128"', 'condition = "hdim > 128"\nfixes = [{ change = "hdim", to = "\'x\'" }]'),
     ["change hdim needs an int"]),
    (('condition = "hdim > 128"', 'condition = "hdim > 128"\nfixes = [{ change = "hdim", to = "cudnn" }]'),
     ["change hdim"]),
    (('condition = "hdim > 128"', 'condition = "hdim > 128"\nbogus = 1'), ["unknown key 'bogus'"]),
    (('message = "m"', 'message = "m {hdm}"'), ["unknown placeholder {hdm}"]),
    (('condition = "hdim > 128"', 'condition = "hdim > 128"\nexamples = [{ applies = "yes" }]'),
     ["examples: each example"]),
])
def test_bad_rule_is_named_precisely(tmp_path, patch, fragments):
    old, new = patch
    with pytest.raises(RuleError) as info:
        load(tmp_path, GOOD.replace(old, new))
    text = str(info.value)
    assert "rules.toml" in text
    for fragment in fragments:
        assert fragment in text, text


def test_bad_toml_names_file_and_position(tmp_path):
    with pytest.raises(RuleError) as info:
        load(tmp_path, '[[rule]]\nid = "T-X"\ntitle = "unterminated\n')
    assert "rules.toml" in str(info.value) and "line 3" in str(info.value)


def test_duplicate_ids_are_refused(tmp_path):
    with pytest.raises(RuleError) as info:
        load(tmp_path, GOOD + GOOD)
    assert "duplicate rule id" in str(info.value)


def test_good_file_loads(tmp_path):
    base = load(tmp_path, RULES)
    assert {r.id for r in base.rules} >= {"T-ALPHA-HDIM", "T-GAMMA-WRONG"}


def test_missing_folder_and_empty_folder(tmp_path):
    load_rulebase.cache_clear()
    with pytest.raises(RuleError):
        load_rulebase(str(tmp_path / "nope"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(RuleError):
        load_rulebase(str(tmp_path / "empty"))


def test_old_cache_files_are_pruned(tmp_path: Path) -> None:
    import os

    from attndoctor._toml import prune_cache

    for i in range(12):
        path = tmp_path / f"rulebase-{i:02d}.pickle"
        path.write_bytes(b"x")
        os.utime(path, (1_000_000 + i, 1_000_000 + i))
    (tmp_path / "other.json").write_text("{}")
    prune_cache(tmp_path, "rulebase-*.pickle", keep=8)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["other.json"] + [f"rulebase-{i:02d}.pickle" for i in range(4, 12)]
