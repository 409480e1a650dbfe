"""Put on PYTHONPATH by `attndoctor trace`: every Python process the program starts records its attention calls.

Loads attndoctor/trace by file under a private name (the traced interpreter need not have attndoctor installed),
then runs the sitecustomize this one hides, if there is one.
"""

import os
import sys


def _start() -> None:
    if not os.environ.get("ATTNDOCTOR_TRACE_DIR"):
        return
    import importlib.util

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    name = "_attndoctor_trace"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, os.path.join(here, "__init__.py"),
                                                      submodule_search_locations=[here])
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    sys.modules[name + ".bootstrap"] = importlib.import_module(name + ".bootstrap")
    sys.modules[name + ".bootstrap"].start()


def _chain() -> None:
    import importlib.util
    from importlib.machinery import PathFinder

    mine = os.path.dirname(os.path.abspath(__file__))
    paths = [p for p in sys.path if os.path.abspath(p or ".") != mine]
    spec = PathFinder.find_spec("sitecustomize", paths)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


try:
    _start()
except Exception as exc:  # noqa: BLE001 - the program runs whatever happens to the recorder
    sys.stderr.write(f"attndoctor trace: recorder not started: {type(exc).__name__}: {exc}\n")
try:
    _chain()
except ImportError:
    pass
