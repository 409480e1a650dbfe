"""The project's own settings: `attndoctor.toml`, or `[tool.attndoctor]` in pyproject.toml; flags override them.

    [tool.attndoctor]
    models = ["configs/llama/config.json"]          # HF config.json files or folders
    require = ["sdpa-cudnn"]                          # every config must run on these
    require_any = ["sdpa-flash,sdpa-cudnn"]
    fail_on = "api-mismatch"
    environment = { gpu = "H100", torch = "2.11.0", cudnn = "9.19.0" }   # for `explain` on a CPU runner
    ignore = [{ rule = "SDPA-FLASH-ATTN-MASK", reason = "we never pass a mask" }]

    [[tool.attndoctor.config]]
    name = "ours"
    hdim = 128
    heads = 32
"""

import os
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping, NamedTuple, Sequence

from ..config import AttentionConfig, make_config
from ..errors import UsageError

KEYS = ("config", "models", "require", "require_any", "fail_on", "ignore", "environment", "env_file")


class ProjectConfig(NamedTuple):
    """What the project file says; empty fields mean 'not set'."""

    path: str = ""
    configs: Sequence[AttentionConfig] = ()
    models: Sequence[str] = ()
    require: Sequence[str] = ()
    require_any: Sequence[str] = ()
    fail_on: str | None = None
    ignore: Mapping[str, str] = MappingProxyType({})
    environment: Mapping[str, Any] = MappingProxyType({})
    env_file: str | None = None
    lines: Mapping[str, int] = MappingProxyType({})
    """The line of each setting in the file, so a value found wrong later can be named as file:line."""

    def where(self, key: str) -> str:
        """`file:line: key` for messages about a setting."""
        line = self.lines.get(key)
        if not self.path:
            return key
        return f"{self.path}:{line}: {key}" if line else f"{self.path}: {key}"


SETTINGS = "expected attndoctor.toml, or a pyproject.toml with [tool.attndoctor]"


def find_project_file(start: Path | None = None) -> Path | None:
    """attndoctor.toml, else a pyproject.toml that names attndoctor, in the current folder; one that is there in any
    form (a folder, a loop, unreadable) is returned, so that reading it says what is wrong rather than skipping it."""
    from ..inputs import describe, read_text

    folder = start or Path()
    own = folder / "attndoctor.toml"
    if os.path.lexists(own):
        return own
    py = folder / "pyproject.toml"
    if os.path.lexists(py):
        text = read_text(py, describe(py, "settings file", "attndoctor reads [tool.attndoctor] from it; give "
                                      "--project FILE to read settings from another file"))
        if "attndoctor" in text:
            return py
    return None


def load_project(path: str | Path | None = None) -> ProjectConfig:
    """Read and validate the project file (found in the current folder when no path is given)."""
    from .._toml import kind_of, loads_toml
    from ..inputs import describe, read_text

    if path is not None and not str(path).strip():
        raise UsageError(f"--project: empty path; {SETTINGS}")
    file = Path(path) if path is not None else find_project_file()
    if file is None:
        return ProjectConfig()
    text = read_text(file, describe(file, "settings file", SETTINGS))
    try:
        doc = loads_toml(text)
    except ValueError as exc:
        raise UsageError(f"{file}: not valid TOML ({exc})") from None
    if file.name == "pyproject.toml":
        tool = doc.get("tool", {})
        if not isinstance(tool, Mapping):
            raise UsageError(f"{file}: tool: expected a table such as [tool.attndoctor], got {kind_of(tool)}")
        table = tool.get("attndoctor")
        if table is None:  # found because it names attndoctor (as a dependency, say): no settings
            return ProjectConfig(path=str(file) if path is not None else "")
        if not isinstance(table, Mapping):
            raise UsageError(f"{file}: tool.attndoctor: expected a table of settings ([tool.attndoctor] with "
                             f"{', '.join(KEYS)}), got {kind_of(table)}")
        return _parse(table, str(file), file.parent, _key_lines(text, "tool.attndoctor"))
    return _parse(doc, str(file), file.parent, _key_lines(text, ""))


_HEADER = r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$"
_KEY = r"^\s*([A-Za-z0-9_-]+)\s*="
"""Patterns as text: only a run that has a settings file compiles them."""


def _key_lines(text: str, prefix: str) -> dict[str, int]:
    """The first line of each top-level setting and of each [[config]] table (`config.1`, `config.2`, ...)."""
    import re

    lines: dict[str, int] = {}
    table = ""
    configs = 0
    config_table = f"{prefix}.config" if prefix else "config"
    for number, line in enumerate(text.splitlines(), 1):
        header = re.match(_HEADER, line)
        if header:
            table = header.group(1).replace(" ", "").replace('"', "")
            if table == config_table:
                configs += 1
                lines[f"config.{configs}"] = number
            continue
        key = re.match(_KEY, line)
        if key and table == prefix:
            name = key.group(1)
            lines.setdefault(name, number)
            if name == "config":
                lines.setdefault("config.1", number)
    return lines


def _list_of_text(value: Any, key: str, where: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise UsageError(f"{where}: expected a list of text such as [\"sdpa-cudnn\"], got {value!r}")
    return [v.strip() for v in value]


def _parse(table: Any, path: str, base: Path, lines: Mapping[str, int]) -> ProjectConfig:
    from ..inputs import EITHER, describe, locate

    project = ProjectConfig(path=path, lines=MappingProxyType(dict(lines)))
    where = project.where
    if not isinstance(table, Mapping):
        raise UsageError(f"{path}: expected a table of settings")
    extra = sorted(set(table) - set(KEYS))
    if extra:
        raise UsageError(f"{where(extra[0])}: unknown setting; accepted: {', '.join(KEYS)}")
    configs = table.get("config", [])
    if isinstance(configs, Mapping):
        configs = [configs]
    if not isinstance(configs, list) or not all(isinstance(c, Mapping) for c in configs):
        raise UsageError(f"{where('config')}: expected [[config]] tables of config fields")
    parsed = []
    for i, values in enumerate(configs, 1):
        line = lines.get(f"config.{i}", 0)
        config = make_config(values, where=f"{path}:{line}: config {i}" if line else f"{path}: config {i}",
                             typed=True)
        parsed.append(config._replace(source=(path, line)))
    models = []
    for m in _list_of_text(table.get("models", []), "models", where("models")):
        model = Path(m) if Path(m).is_absolute() else base / m
        try:
            locate(model, describe(m, "model config", "a config.json or a folder holding one"), EITHER)
        except UsageError as exc:
            raise UsageError(f"{where('models')}: {exc}") from None
        models.append(str(model))
    require = _list_of_text(table.get("require", []), "require", where("require"))
    require_any = _list_of_text(table.get("require_any", []), "require_any", where("require_any"))
    for group in require_any:
        if not any(b.strip() for b in group.split(",")):
            raise UsageError(f"{where('require_any')}: empty group; expected backend ids such as "
                             "'sdpa-flash,sdpa-cudnn'")
    fail_on = table.get("fail_on")
    if fail_on is not None:
        from ..engine.gate import SEVERITY

        if fail_on not in SEVERITY:
            raise UsageError(f"{where('fail_on')}: expected one of {', '.join(SEVERITY)}, got {fail_on!r}")
    ignore: dict[str, str] = {}
    items = table.get("ignore", [])
    if not isinstance(items, list):
        raise UsageError(f"{where('ignore')}: expected a list of {{ rule = 'ID', reason = '...' }}")
    for item in items:
        if not isinstance(item, Mapping) or set(item) - {"rule", "reason"} or not isinstance(item.get("rule"), str) \
                or not isinstance(item.get("reason"), str) or not item["reason"].strip():
            raise UsageError(f"{where('ignore')}: each entry needs rule = 'ID' and a reason = '...', got {item!r}")
        ignore[item["rule"]] = item["reason"].strip()
    environment = table.get("environment", {})
    if not isinstance(environment, Mapping):
        raise UsageError(f"{where('environment')}: expected a table such as {{ gpu = 'H100', cudnn = '9.5.0' }}")
    from ..environment import environment_from_flags

    for key, value in environment.items():
        try:
            environment_from_flags({key: value})
        except UsageError as exc:
            raise UsageError(f"{where('environment')}.{key}: {exc}") from None
    env_file = table.get("env_file")
    if env_file is not None:
        if not isinstance(env_file, str) or not env_file.strip():
            raise UsageError(f"{where('env_file')}: expected a path to another machine's `check --format json`")
        env_file = str(base / env_file)
    return project._replace(configs=tuple(parsed), models=tuple(models), require=tuple(require),
                            require_any=tuple(require_any), fail_on=fail_on, ignore=MappingProxyType(ignore),
                            environment=MappingProxyType(dict(environment)), env_file=env_file)
