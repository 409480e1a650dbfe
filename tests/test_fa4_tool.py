"""tools/fa4/fa4_checks.py reads checks with their branches and tells betas apart, on wheels built here; the rules
cite only wheels it read."""

import importlib.util
import json
import zipfile
from pathlib import Path

from attndoctor.engine.rules import load_rulebase

ROOT = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location("fa4_checks", ROOT / "tools" / "fa4" / "fa4_checks.py")
fa4_checks = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(fa4_checks)

OLD = '''
def _flash_attn_fwd(q, arch, softcap=None):
    assert arch // 10 in [9, 10, 11], "Unsupported compute capability. Supported: 9.x, 10.x, 11.x"
    if arch // 10 == 9:
        assert softcap is None, "softcap not supported on SM 9.0"
'''
NEW = '''
def _flash_attn_fwd(q, arch, softcap=None):
    assert arch // 10 in [8, 9, 10, 11, 12], "Unsupported compute capability. Supported: 8.x, 9.x, 10.x, 11.x, 12.x"
    if arch // 10 == 9:
        pass
    else:
        raise NotImplementedError("only sm90 here")
'''


def _wheel(cache: Path, beta: int, source: str) -> None:
    with zipfile.ZipFile(fa4_checks.wheel_path(cache, beta), "w") as wheel:
        wheel.writestr("flash_attn/cute/interface.py", source)
        wheel.writestr("flash_attn/cute/flash_fwd.py", "class K:\n    def __call__(self):\n        assert False\n")


def test_checks_keep_their_branch_and_kernel_bodies_are_skipped(tmp_path):
    _wheel(tmp_path, 3, OLD)
    checks = fa4_checks.read_wheel(fa4_checks.wheel_path(tmp_path, 3))
    assert [c["module"] for c in checks] == ["flash_attn/cute/interface.py"] * 2
    softcap = checks[1]
    assert softcap["context"] == ["arch // 10 == 9"] and softcap["test"] == "softcap is None"
    assert softcap["line"] == 5 and "softcap" in softcap["topics"] and "arch" in softcap["topics"]


def test_table_and_diff_between_betas(tmp_path):
    _wheel(tmp_path, 3, OLD)
    _wheel(tmp_path, 5, NEW)
    data = fa4_checks.build(tmp_path, [3, 5])
    assert [w["version"] for w in data["wheels"]] == ["4.0.0b3", "4.0.0b5"]
    assert all(len(w["sha256"]) == 64 for w in data["wheels"])
    ranges = {c["message"]: c["betas"] for c in data["checks"]}
    assert ranges["'Unsupported compute capability. Supported: 9.x, 10.x, 11.x'"] == ["3"]
    assert ranges["'only sm90 here'"] == ["5"]
    report = fa4_checks.diff_report(data, [3, 5])
    assert "## 4.0.0b3 -> 4.0.0b5: 2 added, 2 removed" in report
    assert "- + `flash_attn/cute/interface.py:3`" in report
    assert "[if not (arch // 10 == 9)]" in report


def test_rules_cite_the_wheels_the_tool_read():
    """Every wheel a rule cites is one tools/fa4 read, and the read table records its sha256."""
    data = json.loads((ROOT / "tools" / "fa4" / "out" / "checks.json").read_text())
    read = {w["wheel"]: w["sha256"] for w in data["wheels"]}
    assert all(len(sha) == 64 for sha in read.values())
    cited = set()
    for rule in load_rulebase().rules:
        if "flash-attn-4" in rule.backends:
            for ref in rule.references:
                cited.update(word for word in ref.split() if word.startswith("flash_attn_4-") and word.endswith(".whl"))
    assert cited and cited <= set(read)
