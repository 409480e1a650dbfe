"""One runner per backend id of rules/backends.toml, all with the interface of base.Runner."""

from __future__ import annotations

import importlib
from typing import Iterable

from .base import KernelRunner, NotExpressible, Probe, Runner
from .cudnn_fe import CudnnFeRunner
from .flash import VARIANTS as FLASH_VARIANTS
from .flash import FlashAttnRunner
from .flex import BACKEND as FLEX_BACKEND
from .flex import FlexRunner
from .sdpa import SDPA_BACKENDS, SdpaRunner
from .te import SWITCHES as TE_SWITCHES
from .te import TeRunner

__all__ = ["KernelRunner", "NotExpressible", "Probe", "Runner", "builtin_runners", "load_runners", "TE_SWITCHES"]


def builtin_runners() -> dict[str, Runner]:
    """Every backend attndoctor knows, keyed by backend id."""
    runners: dict[str, Runner] = {b: SdpaRunner(b) for b in SDPA_BACKENDS}
    runners.update({b: FlashAttnRunner(b) for b in FLASH_VARIANTS})
    runners["cudnn-fe"] = CudnnFeRunner()
    runners.update({b: TeRunner(b) for b in TE_SWITCHES})
    runners[FLEX_BACKEND] = FlexRunner()
    return runners


def load_runners(modules: Iterable[str] = ()) -> dict[str, Runner]:
    """The built-in runners plus those of extra modules (each a RUNNERS dict of backend id -> Runner), which is
    how tests plant runners that abort, hang or raise CUDA errors."""
    runners = builtin_runners()
    for name in modules:
        if not name:
            continue
        mod = importlib.import_module(name)
        runners.update(getattr(mod, "RUNNERS"))
    return runners
