"""The environment variables that steer attention backends (NVTE_*, CUDNN_*, TORCH_CUDNN_SDPA_*, ...)."""

from __future__ import annotations

import os
from typing import Mapping

from ..environment import ENV_PREFIXES, Environment


def relevant_env_vars(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables whose names start with one of ENV_PREFIXES, sorted by name."""
    source = os.environ if environ is None else environ
    return {k: source[k] for k in sorted(source) if k.startswith(ENV_PREFIXES)}


def probe_env_vars() -> Environment:
    """A partial Environment with env_vars."""
    env = Environment(source="probe")
    env.env_vars = relevant_env_vars()
    return env
