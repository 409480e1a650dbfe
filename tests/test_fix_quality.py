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
