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

from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping, NamedTuple, Sequence

from .config import AttentionConfig, make_config
from .errors import UsageError

KEYS = {"config", "models", "require", "require_any", "fail_on", "ignore", "environment", "env_file"}


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


def find_project_file(start: Path | None = None) -> Path | None:
    """attndoctor.toml, else a pyproject.toml that has [tool.attndoctor], in the current folder."""
    folder = start or Path.cwd()
    own = folder / "attndoctor.toml"
    if own.is_file():
        return own
    py = folder / "pyproject.toml"
    if py.is_file():
        try:
            if "[tool.attndoctor" in py.read_text(encoding="utf-8"):
                return py
        except (OSError, UnicodeDecodeError):
            return None
    return None


def load_project(path: str | Path | None = None) -> ProjectConfig:
    """Read and validate the project file (found in the current folder when no path is given)."""
    from ._toml import loads_toml

    file = Path(path) if path else find_project_file()
    if file is None:
        return ProjectConfig()
    if not file.is_file():
        raise UsageError(f"{file}: no such project file")
    try:
        doc = loads_toml(file.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise UsageError(f"{file}: not a text file") from None
    except ValueError as exc:
        raise UsageError(f"{file}: not valid TOML ({exc})") from None
    table = doc.get("tool", {}).get("attndoctor") if file.name == "pyproject.toml" else doc
    if table is None:
        return ProjectConfig(path=str(file))
    return _parse(table, str(file), file.parent)


def _list_of_text(value: Any, key: str, where: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise UsageError(f"{where}: {key}: expected a list of text")
    return value


def _parse(table: Mapping[str, Any], where: str, base: Path) -> ProjectConfig:
    if not isinstance(table, Mapping):
        raise UsageError(f"{where}: expected a table of settings")
    extra = sorted(set(table) - KEYS)
    if extra:
        raise UsageError(f"{where}: unknown setting {extra[0]!r}; accepted: {', '.join(sorted(KEYS))}")
    out = ProjectConfig(path=where)
    configs = table.get("config", [])
    if isinstance(configs, Mapping):
        configs = [configs]
    if not isinstance(configs, list):
        raise UsageError(f"{where}: config: expected [[config]] tables")
    out.configs = [make_config(c, where=f"{where} config {i + 1}") for i, c in enumerate(configs)]
    out.models = [str((base / m) if not Path(m).is_absolute() else m)
                  for m in _list_of_text(table.get("models", []), "models", where)]
    out.require = _list_of_text(table.get("require", []), "require", where)
    out.require_any = _list_of_text(table.get("require_any", []), "require_any", where)
    fail_on = table.get("fail_on")
    if fail_on is not None and not isinstance(fail_on, str):
        raise UsageError(f"{where}: fail_on: expected text such as 'unsupported'")
    out.fail_on = fail_on
    ignore = table.get("ignore", [])
    if not isinstance(ignore, list):
        raise UsageError(f"{where}: ignore: expected a list of {{ rule = 'ID', reason = '...' }}")
    for item in ignore:
        if not isinstance(item, Mapping) or not isinstance(item.get("rule"), str) or \
                not isinstance(item.get("reason"), str) or not item["reason"].strip():
            raise UsageError(f"{where}: ignore: each entry needs rule = 'ID' and a reason = '...'")
        out.ignore[item["rule"]] = item["reason"].strip()
    environment = table.get("environment", {})
    if not isinstance(environment, Mapping):
        raise UsageError(f"{where}: environment: expected a table such as {{ gpu = 'H100', cudnn = '9.5.0' }}")
    out.environment = dict(environment)
    env_file = table.get("env_file")
    if env_file is not None:
        if not isinstance(env_file, str):
            raise UsageError(f"{where}: env_file: expected a path")
        out.env_file = str(base / env_file)
    return out
