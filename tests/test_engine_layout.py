"""engine/ stays split by concern: no file over 600 lines, no function over 80 (tests/test_fix_quality.py checks
that its modules import without cycles)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[1] / "attndoctor" / "engine"
MODULES = sorted(ENGINE.glob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_file_over_600_lines_and_no_function_over_80(path):
    source = path.read_text(encoding="utf-8")
    assert len(source.splitlines()) <= 600
    long = [(node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 80]
    assert not long
