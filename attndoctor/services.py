"""What the commands and the Python API share: building configs and environments, and running the engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from .config import AttentionConfig, load_config_file, make_config, replace
from .environment import Environment, environment_from_flags, load_env_file
from .errors import UsageError


def bundled_configs() -> list[AttentionConfig]:
    """The well-known model shapes, each for training and for inference."""
    from ._toml import load_toml_file

    _, data = load_toml_file(Path(__file__).resolve().parent / "data" / "shapes.toml")
    out = []
    for entry in data["config"]:
        base = make_config(entry)
        out.append(replace(base, train=True, name=f"{base.name} train"))
        out.append(replace(base, train=False, name=f"{base.name} infer"))
    return out


def configs_from_inputs(flags: Mapping[str, Any], config_files: Sequence[str] = (),
                        default_bundled: bool = False, models: Sequence[str] = (),
                        project_configs: Sequence[AttentionConfig] = ()) -> list[AttentionConfig]:
    """Configs from config files and model configs with flags on top; else the project's; else bundled shapes."""
    given = {k: v for k, v in flags.items() if v is not None}
    configs: list[AttentionConfig] = []
    for path in config_files:
        configs.extend(load_config_file(path))
    if models:
        from .models import configs_from_model

        seqlen = given.get("seqlen") or given.get("seqlen_q")
        for path in models:
            configs.extend(configs_from_model(path, seqlen=int(seqlen) if str(seqlen or "").isdigit() else None))
    if configs:
        return [make_config({**c.to_dict(), **given})._replace(source=c.source) for c in configs] if given \
            else configs
    if project_configs:
        return [make_config({**c.to_dict(), **given})._replace(source=c.source) for c in project_configs] \
            if given else list(project_configs)
    if given or not default_bundled:
        return [make_config(given)]
    return bundled_configs()


def whatif_environment(facts: Mapping[str, Any], env_file: str | None = None,
                       env_vars: Mapping[str, str] | None = None) -> Environment:
    """An environment from --env-file, overridden by what-if flags."""
    base = load_env_file(env_file) if env_file else None
    values = {k: v for k, v in facts.items() if v is not None}
    if env_vars:
        values["env_vars"] = dict(env_vars)
    return environment_from_flags(values, base=base)


def parse_env_assignments(items: Iterable[str]) -> dict[str, str]:
    """NAME=VALUE pairs from --set-env."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name or not name.replace("_", "").isalnum():
            raise UsageError(f"--set-env: expected NAME=VALUE, got {item!r}")
        out[name] = value
    return out


def diagnose_many(configs: Sequence[AttentionConfig], env: Environment, *, command: str = "explain",
                  backends: Sequence[str] | None = None, rules_dir: str | None = None,
                  ignore: Iterable[str] = (), ignore_from: str = "ignore") -> Any:
    """Evaluate every config on one environment and return a Report."""
    from .engine.evaluate import Evaluator, Report
    from .engine.rules import load_rulebase

    base = load_rulebase(rules_dir)
    base.check_backend_ids(backends)
    ignored = dict(ignore) if isinstance(ignore, Mapping) else {r: "" for r in ignore}
    for rule_id in ignored:
        if base.rule(rule_id) is None:
            raise UsageError(f"{ignore_from}: no rule {rule_id!r}; see `attndoctor rules list`")
    evaluator = Evaluator(base, ignore=ignored, batch=len(configs) > 8)
    results = [evaluator.evaluate(c, env, backends) for c in configs]
    return Report(command=command, environment=env, results=results, rule_count=len(base.rules),
                  rule_files=base.files, ignored=ignored)
