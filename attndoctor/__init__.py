"""attndoctor: which attention backends will run your attention config on your GPU, and why the others won't."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from .config import AttentionConfig
    from .engine.results import Report
    from .environment import Environment

__all__ = ["__version__", "diagnose", "preflight", "PreflightError", "trace"]


def diagnose(config: "AttentionConfig | dict[str, Any]", environment: "Environment | dict[str, Any] | None" = None,
             *, backends: list[str] | None = None) -> "Report":
    """Evaluate one config; the environment defaults to probing this machine (never imports torch in-process)."""
    from .config import AttentionConfig, make_config
    from .environment import Environment, environment_from_flags
    from .services import diagnose_many

    cfg = config if isinstance(config, AttentionConfig) else make_config(config)
    if environment is None:
        from .probe import probe

        env = probe()
    elif isinstance(environment, Environment):
        env = environment
    else:
        env = environment_from_flags(environment)
    return diagnose_many([cfg], env, command="diagnose", backends=backends)


def preflight(q: Any, k: Any, v: Any, **options: Any) -> "Report":
    """Check real q, k, v tensors before the call: raises PreflightError with the full verdict when it would fail.

    Options: backend, causal, dropout, attn_mask, window, softcap, train, deterministic, layout, environment
    (see attndoctor.tensors.preflight).
    """
    from .tensors import preflight as run

    return run(q, k, v, **options)


def __getattr__(name: str) -> Any:
    if name == "PreflightError":
        from .tensors import PreflightError

        return PreflightError
    if name == "trace":
        import importlib

        return importlib.import_module(".trace", __name__)
    raise AttributeError(f"module 'attndoctor' has no attribute {name!r}")
