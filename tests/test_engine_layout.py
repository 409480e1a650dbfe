"""engine/ stays split by concern: no file over 600 lines, no function over 80, and no import cycle among its
modules (module-level imports; a function may import lazily to break one on purpose)."""

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


def _imports(path: Path) -> set[str]:
    """The engine modules a module imports at its top level."""
    out: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                out.add(node.module.split(".")[0])
            else:
                out.update(alias.name for alias in node.names)
    return out & {p.stem for p in MODULES}


def test_engine_modules_import_without_cycles():
    graph = {p.stem: _imports(p) for p in MODULES}
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, " -> ".join((*path, name))
        if name in done:
            return
        for dep in graph[name]:
            visit(dep, (*path, name))
        done.add(name)

    for name in graph:
        visit(name, ())
