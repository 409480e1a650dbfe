"""`attndoctor explain`: any config on any machine, from flags alone; never imports torch."""

from __future__ import annotations

from typing import Any

from .common import config_flags, emit, handle_errors
from .options import with_groups


@with_groups("config", "env", "output", "gate")
@handle_errors
def explain(*, config: dict[str, Any], env: dict[str, Any], output: dict[str, Any], gate: dict[str, Any]) -> None:
    """Explain which backends run a config on a machine you describe (GPU, versions); no GPU or torch needed."""
    from ..services import configs_from_inputs, diagnose_many, parse_env_assignments, whatif_environment

    values, files = config_flags(config)
    configs = configs_from_inputs(values, files)
    env_vars = parse_env_assignments(env.pop("set_env") or [])
    environment = whatif_environment(env, env.pop("env_file"), env_vars)
    report = diagnose_many(configs, environment, command="explain", backends=output.get("backend"),
                           rules_dir=output.get("rules_dir"))
    emit(report, output=output, gate=gate)
