"""What the commands and the Python API share: building configs and environments, and running the engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, NamedTuple, Sequence, Sized

from .config import AttentionConfig, make_config, replace
from .environment import Environment, environment_from_flags, load_env_file
from .errors import UsageError
from .sources.config_files import iter_config_file, load_config_file


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


class ConfigStream:
    """Configs from config files, read again on each pass rather than held, so a file of any length costs the memory
    of one config; read through once when made, so that a bad line ends the command before any output."""

    def __init__(self, files: Sequence[str], given: Mapping[str, Any]) -> None:
        self.files = list(files)
        self.given = dict(given)
        self.count = sum(1 for _ in self)

    def __iter__(self) -> Iterator[AttentionConfig]:
        for path in self.files:
            for config in iter_config_file(path):
                yield _with_flags(config, self.given)

    def __len__(self) -> int:
        return self.count


def _with_flags(config: AttentionConfig, given: Mapping[str, Any]) -> AttentionConfig:
    """A config with the flags' fields over its own; where it was read from stays."""
    if not given:
        return config
    return make_config({**config.to_dict(), **given})._replace(source=config.source)


def configs_from_inputs(flags: Mapping[str, Any], config_files: Sequence[str] = (),
                        default_bundled: bool = False, models: Sequence[str] = (),
                        project_configs: Sequence[AttentionConfig] = (),
                        stream: bool = False) -> Sequence[AttentionConfig]:
    """Configs from config files and model configs with flags on top; else the project's; else bundled shapes.

    With `stream`, configs from files alone come as a ConfigStream (read lazily, any number of them)."""
    given = {k: v for k, v in flags.items() if v is not None}
    if stream and config_files and not models:
        return ConfigStream(config_files, given)
    configs: list[AttentionConfig] = []
    for path in config_files:
        configs.extend(load_config_file(path))
    if models:
        from .sources.models import configs_from_model

        seqlen = given.get("seqlen") or given.get("seqlen_q")
        for path in models:
            configs.extend(configs_from_model(path, seqlen=int(seqlen) if str(seqlen or "").isdigit() else None))
    if configs:
        return [_with_flags(c, given) for c in configs] if given else configs
    if project_configs:
        return [make_config({**c.to_dict(), **given})._replace(source=c.source) for c in project_configs] \
            if given else list(project_configs)
    if given or not default_bundled:
        return [make_config(given)]
    return bundled_configs()


def model_readings(paths: Sequence[str], flags: Mapping[str, Any]) -> list[Any]:
    """What each --model config.json says of its layers, read with the sequence length the flags give."""
    from .sources.models import read_model

    seqlen = flags.get("seqlen") or flags.get("seqlen_q")
    return [read_model(p, seqlen=int(seqlen) if str(seqlen or "").isdigit() else None) for p in paths]


def whatif_environment(facts: Mapping[str, Any], env_file: str | None = None,
                       env_vars: Mapping[str, str] | None = None) -> Environment:
    """An environment from --env-file, overridden by what-if flags."""
    base = load_env_file(env_file) if env_file is not None else None
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


class ReportStream(NamedTuple):
    """A report whose results come one at a time, for more configs than fit in memory at once (see report/stream.py);
    `collect()` gives the Report that every renderer takes."""

    command: str
    environment: Environment
    results: Iterator[Any]
    rule_count: int
    rule_files: tuple[str, ...]
    ignored: Mapping[str, str]
    backend_ids: tuple[str, ...]
    count: int
    configs: Iterable[AttentionConfig] = ()
    evaluate: Any = None
    """What `results` is made of: the configs, and a function from configs to their results (for worker
    processes, which evaluate chunks of the configs themselves)."""

    def collect(self) -> Any:
        from .engine.results import Report

        return Report(command=self.command, environment=self.environment, results=list(self.results),
                      rule_count=self.rule_count, rule_files=self.rule_files, ignored=self.ignored)


DISTINCT_KEPT = 16384
"""Results of this many distinct configs are kept to answer repeats; a repeat older than that is evaluated again."""


def diagnose_many(configs: Sequence[AttentionConfig], env: Environment, *, command: str = "explain",
                  backends: Sequence[str] | None = None, rules_dir: str | None = None,
                  ignore: Iterable[str] = (), ignore_from: str = "ignore") -> Any:
    """Evaluate every config on one environment and return a Report."""
    return diagnose_stream(configs, env, command=command, backends=backends, rules_dir=rules_dir,
                           ignore=ignore, ignore_from=ignore_from).collect()


def diagnose_stream(configs: Iterable[AttentionConfig], env: Environment, *, command: str = "explain",
                    backends: Sequence[str] | None = None, rules_dir: str | None = None,
                    ignore: Iterable[str] = (), ignore_from: str = "ignore") -> ReportStream:
    """Evaluate configs one at a time as the results are read; a config seen before is not evaluated again."""
    from .engine.evaluate import Evaluator
    from .engine.rules import load_rulebase

    base = load_rulebase(rules_dir)
    base.check_backend_ids(backends)
    ignored = dict(ignore) if isinstance(ignore, Mapping) else {r: "" for r in ignore}
    for rule_id in ignored:
        if base.rule(rule_id) is None:
            raise UsageError(f"{ignore_from}: no rule {rule_id!r}; see `attndoctor rules list`")
    count = len(configs) if isinstance(configs, Sized) else -1
    evaluator = Evaluator(base, ignore=ignored, batch=count < 0 or count > 8)
    def evaluate(chunk: Iterable[AttentionConfig]) -> Iterator[Any]:
        return _results(evaluator, chunk, env, backends)

    return ReportStream(command=command, environment=env, results=evaluate(configs),
                        rule_count=len(base.rules), rule_files=base.files, ignored=ignored,
                        backend_ids=base.backend_ids, count=count, configs=configs, evaluate=evaluate)


def _results(evaluator: Any, configs: Iterable[AttentionConfig], env: Environment,
             backends: Sequence[str] | None) -> Iterator[Any]:
    """Each config's result; repeats (the same fields, whatever their name: the engine never reads it) share one."""
    seen: dict[tuple[Any, ...], Any] = {}
    for config in configs:
        key = config[:NAME_AT]
        result = seen.get(key)
        if result is None:
            result = evaluator.evaluate(config, env, backends)
            if len(seen) >= DISTINCT_KEPT:
                del seen[next(iter(seen))]
            seen[key] = result
        elif result.config is not config:
            result = result._replace(config=config)
        yield result


NAME_AT = AttentionConfig._fields.index("name")
