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


def _project() -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_version_is_written_once():
    """pyproject.toml reads it from attndoctor/__init__.py; the installed metadata and --version agree with it."""
    import re
    from importlib.metadata import version

    import attndoctor

    project = _project()
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "attndoctor.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", attndoctor.__version__) and version("attndoctor") == attndoctor.__version__


def test_the_metadata_the_index_shows():
    meta = _project()["project"]
    assert meta["readme"] == {"file": "README.md", "content-type": "text/markdown"}
    assert meta["license"] == "Apache-2.0" and (ROOT / "LICENSE").read_text().lstrip().startswith("Apache License")
    assert meta["license-files"] == ["LICENSE"]
    assert not any(c.startswith("License ::") for c in meta["classifiers"])  # an SPDX license replaces them
    lowest = tuple(int(p) for p in meta["requires-python"].lstrip(">=").split("."))
    versions = [c.rsplit(" ", 1)[1] for c in meta["classifiers"] if c.startswith("Programming Language :: Python :: 3.")]
    assert versions and min(tuple(int(p) for p in v.split(".")) for v in versions) == lowest


def test_ci_builds_checks_and_runs_the_wheel_alone():
    run = (ROOT / ".ci" / "run").read_text()
    for step in ("python -m build", "twine check --strict", ".ci-wheel-venv/bin/attndoctor\" rules lint"):
        assert step in run, step
