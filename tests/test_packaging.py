"""What `pip install .` ships: every package of the source tree, and the data files the code reads."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = {"attndoctor": "attndoctor", "attndoctor_rules": "rules", "attndoctor_kernels": "kernels"}


def _setuptools() -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_package_in_the_tree_is_listed():
    found = set()
    for name, folder in SHIPPED.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((name, *parts)))
    assert sorted(found - set(_setuptools()["packages"])) == []


def test_the_wheel_ships_the_data_files_the_code_reads():
    data = _setuptools()["package-data"]
    assert "*.toml" in data["attndoctor_rules"]  # rules, horizons and the error catalogue
    assert {"data/*.toml", "schema/*.json", "trace/boot/sitecustomize.py"} <= set(data["attndoctor"])
    assert (ROOT / "rules" / "errors.toml").is_file() and (ROOT / "attndoctor" / "schema" / "why-v1.json").is_file()
