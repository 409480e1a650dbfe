"""`attndoctor trace`: what a program's attention calls actually ran, call site by call site.

`with attndoctor.trace() as t: ...` records the calls made inside the block; `t.calls` and `t.report()` read them.
This package is callable (`attndoctor.trace(...)` makes a Trace) so the subpackage and the function share one name.
Only the standard library is imported here: the recorder loads torch's pieces when it is installed.
"""

from __future__ import annotations

import sys
import types
from typing import Any


class Trace:
    """A context manager that records attention calls made inside it (in this process, this thread's imports)."""

    def __init__(self, numerics: bool = False, timing: bool = False) -> None:
        self.numerics = numerics
        self.timing = timing
        self._recorder: Any = None
        self._watcher: Any = None
        self._calls: list[dict[str, Any]] | None = None
        self._header: dict[str, Any] = {}

    def __enter__(self) -> "Trace":
        from .bootstrap import watch_imports
        from .recorder import Recorder

        self._recorder = Recorder(numerics=self.numerics, timing=self.timing).install()
        self._watcher = watch_imports(self._recorder.on_import)
        return self

    def __exit__(self, *exc: Any) -> None:
        from .bootstrap import unwatch_imports

        unwatch_imports(self._watcher)
        self._recorder.uninstall()
        self._calls = self._recorder.calls()
        self._header = self._recorder.header()

    @property
    def calls(self) -> list[dict[str, Any]]:
        """The recorded calls (site, module, api, phase, op, ran, count, config, details; numerics, timing_ms)."""
        if self._calls is not None:
            return self._calls
        return self._recorder.calls() if self._recorder is not None else []

    def report(self, environment: Any = None) -> Any:
        """The diagnosis of the recorded calls on this process's torch and GPU (or the `environment` given)."""
        from .reader import trace_report

        header = self._header or (self._recorder.header() if self._recorder else {})
        if environment is None:
            from ..tensors import live_environment

            environment = live_environment()
        return trace_report([(header, self.calls)], environment, argv=list(header.get("argv") or []))


class _CallableModule(types.ModuleType):
    def __call__(self, numerics: bool = False, timing: bool = False) -> Trace:
        return Trace(numerics=numerics, timing=timing)


sys.modules[__name__].__class__ = _CallableModule
