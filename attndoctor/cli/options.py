"""Option groups shared by commands, spelled once: each group arrives in the command as one dict."""

from __future__ import annotations

import functools
import inspect
import typing
from typing import Any, Callable, List, Optional

import typer

from ..fields import BOOL, INT, SHORTHANDS, TABLE, Field


def _config_options() -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]], list[Field]]:
    """(name, flag, help) of the value options and of the switches, and the two-flag switches, from the table."""
    values: list[tuple[str, str, str]] = []
    switches = [(s.name, s.flag, s.help) for s in SHORTHANDS if s.type == BOOL]
    for field in (f for f in TABLE if f.flag):
        values += [(s.name, s.flag, s.help) for s in SHORTHANDS if s.before == field.name]
        if field.type != BOOL:
            values.append((field.name, field.flag, field.help_text))
        elif not field.off_flag:
            switches.append((field.name, field.flag, field.help_text))
    return values, switches, [f for f in TABLE if f.off_flag]


CONFIG_OPTIONS, CONFIG_FLAGS, TWO_FLAGS = _config_options()
ENV_OPTIONS: list[tuple[str, str, str]] = [
    ("gpu", "--gpu", "GPU name (H100, A100, L40S, RTX4090, B200, ...), a GeForce series whose models share one "
                     "architecture (\"RTX 50 series\"), an AWS or Azure instance type (g6.4xlarge), sm90, or an "
                     "architecture or what GPUs are older than (Blackwell, \"pre-Ampere\", \"compute capability "
                     "below 8.0\": every one of them is tried)."),
    ("torch", "--torch", "PyTorch version."),
    ("cuda", "--cuda", "CUDA version torch was built with."),
    ("cudnn", "--cudnn", "cuDNN version loaded at run time."),
    ("flash_attn", "--flash-attn", "flash-attn 2 version ('none' = not installed)."),
    ("flash_attn_3", "--flash-attn-3", "flash-attn 3 version."),
    ("flash_attn_4", "--flash-attn-4", "flash-attn 4 version."),
    ("cutlass_dsl", "--cutlass-dsl", "nvidia-cutlass-dsl version (the CuTe DSL runtime flash-attn 4 compiles with)."),
    ("cudnn_frontend", "--cudnn-frontend", "nvidia-cudnn-frontend version."),
    ("te", "--te", "TransformerEngine version."),
    ("driver", "--driver", "NVIDIA driver version (or the CUDA version it runs, as nvidia-smi's banner prints it: 12.2)."),
]


METAVARS = {
    **{f.name: f.metavar for f in TABLE if f.metavar}, **{s.name: "N" for s in SHORTHANDS if s.type == INT},
    "gpu": "NAME", "set_env": "NAME=VALUE", "backend": "ID",
    "require": "ID", "require_any": "ID,ID", "fail_on": "EFFECT", "format": "FORMAT",
    "config_file": "PATH", "model": "PATH", "env_file": "PATH", "output_file": "PATH", "rules_dir": "PATH",
    "project": "PATH",
}
"""What a value looks like in --help; version flags read VERSION."""


def _param(name: str, flag: str, help_text: str, panel: str, *, kind: Any = Optional[str],
           default: Any = None, **extra: Any) -> inspect.Parameter:
    if kind is not bool:
        extra.setdefault("metavar", METAVARS.get(name, "VERSION"))
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=kind,
                             default=typer.Option(default, flag, help=help_text, rich_help_panel=panel, **extra))


def config_params() -> list[inspect.Parameter]:
    panel = "Attention config"
    params = [_param(n, f, h, panel) for n, f, h in CONFIG_OPTIONS]
    for field in TWO_FLAGS:
        params += [_param(field.name, field.flag, field.help_text, panel, kind=bool, default=False),
                   _param(field.off_flag.lstrip("-"), field.off_flag, field.off_help, panel, kind=bool, default=False)]
    params += [_param(n, f, h, panel, kind=bool, default=False) for n, f, h in CONFIG_FLAGS]
    params.append(_param("config_file", "--config-file", "Configs from .json (object or list), .jsonl, or .toml "
                         "with \\[\\[config]] tables; flags override their fields.", panel,
                         kind=Optional[List[str]]))
    params.append(_param("model", "--model", "A Hugging Face config.json (or a folder holding one): one config per "
                         "attention kind of the model; flags override its fields.", panel, kind=Optional[List[str]]))
    return params


def env_params() -> list[inspect.Parameter]:
    panel = "Environment (what-if)"
    params = [_param(n, f, h, panel) for n, f, h in ENV_OPTIONS]
    params.append(_param("set_env", "--set-env", "An environment variable NAME=VALUE (repeatable).", panel,
                         kind=Optional[List[str]]))
    params.append(_param("env_file", "--env-file", "The JSON of `attndoctor check --format json` from another "
                         "machine; flags override it.", panel))
    return params


def brief_params(panel: str) -> list[inspect.Parameter]:
    """--quiet and --summary: for commands whose exit code is a gate."""
    return [
        _param("quiet", "--quiet", "Write no report: the exit code tells the gate's answer, errors still go to "
               "stderr (a report asked for with --output is still written).", panel, kind=bool, default=False),
        _param("summary", "--summary", "One line per backend (its verdicts over every config, the rules behind "
               "them, the fix) and one for the gate.", panel, kind=bool, default=False),
    ]


def output_params(formats: tuple[str, ...], brief: bool = False) -> list[inspect.Parameter]:
    panel = "Output"
    return (brief_params(panel) if brief else []) + [
        _param("backend", "--backend", "Only these backends (repeatable).", panel, kind=Optional[List[str]]),
        _param("format", "--format", f"{' | '.join(formats)}.", panel, kind=str, default="text"),
        _param("output_file", "--output", "Write the report to this file instead of standard output.", panel),
        _param("details", "--details", "One table per config even when there are many.", panel, kind=bool,
               default=False),
        _param("rules_dir", "--rules-dir", "Use the rules in this folder instead of the bundled ones.", panel),
    ]


def gate_params() -> list[inspect.Parameter]:
    panel = "Gate (exit 1 when it fails)"
    return [
        _param("require", "--require", "This backend must run every config (repeatable).", panel,
               kind=Optional[List[str]]),
        _param("require_any", "--require-any", "At least one of these comma-separated backends must run every "
               "config (repeatable).", panel, kind=Optional[List[str]]),
        _param("fail_on", "--fail-on", "Fail on any finding of this effect or worse on the backends in scope: "
               "info | slow | unsupported | api-mismatch | wrong-results.", panel),
        _param("project", "--project", "Project settings file (default: ./attndoctor.toml or \\[tool.attndoctor] "
               "in ./pyproject.toml).", panel),
    ]


MAX_SECONDS = 7 * 24 * 3600
"""The longest timeout any command takes (a week): far above any probe or kernel, and far below what the waits
underneath can hold (a queue or pipe wait overflows near 1e10 s)."""


def seconds(value: float) -> float:
    """Every timeout option takes the same range: above 0, at most MAX_SECONDS; NaN and inf refused (callback)."""
    if not 0 < value <= MAX_SECONDS:  # NaN fails every comparison
        raise typer.BadParameter(f"expected a number of seconds above 0 and at most {MAX_SECONDS} (a week), "
                                 f"got {value:g}")
    return value


def at_least(low: int) -> Callable[[Optional[int]], Optional[int]]:
    """A whole-number option's callback: `low` or more (an option left out stays None)."""

    def check(value: Optional[int]) -> Optional[int]:
        if value is not None and value < low:
            raise typer.BadParameter(f"expected a whole number of at least {low}, got {value}")
        return value

    return check


def config_flags(values: dict[str, Any]) -> dict[str, Any]:
    """The config flags as config fields, refusing flags that contradict each other (the last one does not win)."""
    from ..errors import UsageError

    out = dict(values)
    train, infer = out.pop("train"), out.pop("infer")
    if train and infer:
        raise UsageError("--train and --infer contradict each other; give one of them")
    out["train"] = True if train else (False if infer else None)
    if out.get("causal") and out.get("mask") is not None:
        if out["mask"].strip().lower() != "causal":
            raise UsageError(f"--causal and --mask {out['mask']} contradict each other (--causal is --mask causal); "
                             "give one of them")
    if out.pop("causal", False):
        out["mask"] = "causal"
    for one in ("seqlen_q", "seqlen_kv"):
        if out.get("seqlen") is not None and out.get(one) is not None and out[one] != out["seqlen"]:
            flag = "--" + one.replace("_", "-")
            raise UsageError(f"--seqlen {out['seqlen']} and {flag} {out[one]} contradict each other; give --seqlen "
                             "for both lengths, or --seqlen-q and --seqlen-kv")
    return out


GROUPS: dict[str, Callable[..., list[inspect.Parameter]]] = {
    "config": config_params, "env": env_params, "gate": gate_params,
}


def with_groups(*groups: str, formats: tuple[str, ...] = ("text", "json"),
                brief: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a command the option groups it names; it receives each group as a dict keyword (config=..., ...);
    `brief` adds --quiet and --summary to the output group."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        own = [p for p in inspect.signature(func).parameters.values() if p.name not in (*groups, "output_opts")]
        group_params = {g: (output_params(formats, brief) if g == "output" else GROUPS[g]()) for g in groups}

        @functools.wraps(func)
        def wrapper(**kwargs: Any) -> Any:
            grouped = {g: {p.name: kwargs.pop(p.name) for p in params} for g, params in group_params.items()}
            if "config" in grouped:
                grouped["config"] = config_flags(grouped["config"])
            return func(**kwargs, **grouped)

        params = own + [p for ps in group_params.values() for p in ps]
        hints = typing.get_type_hints(func)
        params = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in params]
        wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        del wrapper.__wrapped__
        return wrapper

    return decorate
