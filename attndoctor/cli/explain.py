"""`attndoctor explain`: any config on any machine, from flags alone; never imports torch."""

from __future__ import annotations

from typing import Any

from ..errors import UsageError
from .common import REPORT_FORMATS, emit, handle_errors, plan
from .options import with_groups

NO_CONFIG = ("no config to explain; describe one with flags (e.g. --hdim 128 --heads 32 --seqlen 4096 --dtype bf16 "
             "--train), a model with --model config.json, or many with --config-file configs.jsonl, or ask about "
             "one backend on one machine (--backend flash-attn-3 --gpu T4) (see --help)")
"""What a bare `attndoctor explain` answers: every verdict would depend on the config it was not given."""


@with_groups("config", "env", "output", "gate", formats=REPORT_FORMATS, brief=True)
@handle_errors
def explain(*, config: dict[str, Any], env: dict[str, Any], output: dict[str, Any], gate: dict[str, Any]) -> None:
    """Explain which backends run a config on a machine you describe (GPU, versions); no GPU or torch needed."""
    from ..services import diagnose_stream, parse_env_assignments, whatif_environment

    described = any(v not in (None, False, []) for k, v in config.items() if k != "train") or (
        config.get("train") is not None and bool(output.get("backend")))  # training on one backend is a question
    configs, project = plan(config, gate, default_bundled=False, stream=True)
    env_vars = parse_env_assignments(env.pop("set_env") or [])
    facts = {**{k.replace("-", "_"): v for k, v in project.environment.items()},
             **{k: v for k, v in env.items() if v is not None}}
    env_file = facts.pop("env_file", None)
    env_file = project.env_file if env_file is None else env_file
    environment = whatif_environment(facts, env_file, env_vars)
    report = diagnose_stream(configs, environment, command="explain", backends=output.get("backend"),
                             rules_dir=output.get("rules_dir"), ignore=project.ignore,
                             ignore_from=project.where("ignore"))
    machine_question = bool(output.get("backend")) and bool(facts or env_file)
    if not (described or project.configs or project.models or machine_question):
        raise UsageError(NO_CONFIG)
    models = list(config.get("model") or []) or ([] if config.get("config_file") else project.models)
    if models:
        from ..sources.model_plan import build_plans
        from ..services import model_readings

        collected = report.collect()
        report = collected._replace(models=tuple(build_plans(model_readings(models, config), collected.results)))
    emit(report, output=output, gate=gate)
