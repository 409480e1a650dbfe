"""Start the recorder inside a traced process: watch imports, install when torch arrives, write the record at exit."""

from __future__ import annotations

import atexit
import importlib.abc
import importlib.util
import os
import sys
from typing import Any, Callable

from .record import DIR_VAR, OPTIONS_VAR, record_path, write_record

WATCHED = ("torch", "torch.nn.attention.flex_attention", "flash_attn", "flash_attn.flash_attn_interface",
           "flash_attn_interface", "flash_attn.cute", "flash_attn.cute.interface", "transformer_engine.pytorch",
           "transformers.modeling_utils", "torch.nn.attention.varlen", "torch._dynamo.output_graph", "kernels",
           "kernels.load", "vllm.vllm_flash_attn", "vllm.vllm_flash_attn.flash_attn_interface")


def _wanted(name: str) -> bool:
    return name in WATCHED or (name.startswith("transformers.models.") and ".modeling_" in name)


class _Loader:
    """A loader that runs the real one, then tells the recorder the module is there."""

    def __init__(self, loader: Any, done: Callable[[str], None]) -> None:
        self._loader = loader
        self._done = done

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        try:
            self._done(module.__name__)
        except Exception as exc:  # noqa: BLE001 - a recorder failure must never break the program's import
            sys.stderr.write(f"attndoctor trace: could not hook {module.__name__}: {type(exc).__name__}: {exc}\n")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class _Watcher(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for a watched module, finds it through the other finders and wraps its loader."""

    def __init__(self, done: Callable[[str], None]) -> None:
        self.done = done
        self.busy: set[str] = set()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name in self.busy or not _wanted(name):
            return None
        self.busy.add(name)
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            return None
        finally:
            self.busy.discard(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = _Loader(spec.loader, self.done)
        return spec


def watch_imports(done: Callable[[str], None]) -> _Watcher:
    watcher = _Watcher(done)
    sys.meta_path.insert(0, watcher)
    return watcher


def unwatch_imports(watcher: Any) -> None:
    if watcher in sys.meta_path:
        sys.meta_path.remove(watcher)


class _Session:
    """The recorder of this process, made when torch is imported, and its record written at exit."""

    def __init__(self, directory: str, options: set[str]) -> None:
        self.directory = directory
        self.options = options
        self.recorder: Any = None
        self.pid = os.getpid()

    def on_import(self, name: str) -> None:
        if self.recorder is None:
            if name != "torch" and "torch" not in sys.modules:
                return
            from .recorder import Recorder

            self.recorder = Recorder(numerics="numerics" in self.options, timing="timing" in self.options).install()
            return
        self.recorder.on_import(name)

    def after_fork(self) -> None:
        """A forked child (a DataLoader worker) starts empty: the parent's calls are the parent's to write."""
        self.pid = os.getpid()
        if self.recorder is not None:
            self.recorder.entries.clear()
            self.recorder.pending.clear()

    def write(self) -> None:
        try:
            if self.recorder is None:
                header: dict[str, Any] = {"pid": os.getpid(), "rank": os.environ.get("RANK"), "argv": list(sys.argv),
                                          "torch": None, "notes": ["this process never imported torch"]}
                calls: list = []
            else:
                self.recorder.uninstall()
                calls = self.recorder.calls()
                header = self.recorder.header()
            write_record(record_path(self.directory), header, calls)
        except Exception as exc:  # noqa: BLE001 - at exit, one line and the program's own exit code
            sys.stderr.write(f"attndoctor trace: could not write the record: {type(exc).__name__}: {exc}\n")


def start(directory: str | None = None, options: str | None = None) -> _Session | None:
    """Called by the bootstrap sitecustomize (or `python -m attndoctor.trace.bootstrap`)."""
    directory = directory or os.environ.get(DIR_VAR)
    if not directory:
        return None
    session = _Session(directory, {o.strip() for o in (options or os.environ.get(OPTIONS_VAR, "")).split(",")})
    watch_imports(session.on_import)
    if "torch" in sys.modules:
        session.on_import("torch")
        for name in list(sys.modules):
            if _wanted(name):
                session.on_import(name)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=session.after_fork)
    atexit.register(session.write)
    return session
