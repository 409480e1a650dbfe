"""API facts read from a package's Python source with `ast`, without importing it.

Keys look like `flash_attn._flash_attn_varlen_backward.softcap` (the parameter is in the def) and
`flash_attn._flash_attn_varlen_backward.softcap.required` (it is in the def and has no default; False when it
is absent or defaulted). A function that is not found gives no keys: its facts stay unknown.
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import importlib.util
from pathlib import Path

from ..environment import ABSENT, Environment
from ._run import note

PARAMETERS = ("softcap", "window_size", "window_size_left", "window_size_right")
"""Parameters whose presence (and whether they are required) rules may ask about."""

FLASH_ATTN_FUNCTIONS = ("_flash_attn_forward", "_flash_attn_varlen_forward", "_flash_attn_backward",
                        "_flash_attn_varlen_backward")
FLASH_ATTN_3_FUNCTIONS = ("flash_attn_func", "flash_attn_varlen_func")


def function_parameters(source: str, names: tuple[str, ...] | list[str]) -> dict[str, dict[str, bool]]:
    """{function: {parameter: has_default}} for the module-level defs named in `names` (also those inside
    module-level if/try/with blocks, as in `if torch.__version__ >= "2.4": ...`). Raises SyntaxError."""
    tree = ast.parse(source)
    wanted = set(names)
    found: dict[str, dict[str, bool]] = {}

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.name in wanted and node.name not in found:
                    found[node.name] = _params(node.args)
            elif isinstance(node, ast.If):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                visit(node.body)

    visit(tree.body)
    return found


def _params(args: ast.arguments) -> dict[str, bool]:
    positional = [*args.posonlyargs, *args.args]
    first_default = len(positional) - len(args.defaults)
    out = {a.arg: i >= first_default for i, a in enumerate(positional)}
    for a, default in zip(args.kwonlyargs, args.kw_defaults):
        out[a.arg] = default is not None
    return out


def api_facts(source: str, prefix: str, functions: tuple[str, ...],
              parameters: tuple[str, ...] = PARAMETERS) -> dict[str, bool]:
    """The api keys for one source file: `{prefix}.{function}.{param}` and `....{param}.required`."""
    facts: dict[str, bool] = {}
    for fn, params in function_parameters(source, functions).items():
        for p in parameters:
            present = p in params
            facts[f"{prefix}.{fn}.{p}"] = present
            facts[f"{prefix}.{fn}.{p}.required"] = present and not params[p]
    return facts


def locate_flash_attn_interface() -> Path | None:
    """flash_attn/flash_attn_interface.py of the installed flash-attn 2, found without importing flash_attn."""
    try:
        spec = importlib.util.find_spec("flash_attn")
    except (ImportError, ValueError, AttributeError):
        spec = None
    for loc in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(loc) / "flash_attn_interface.py"
        if path.is_file():
            return path
    return _from_metadata(("flash-attn", "flash_attn"), "flash_attn/flash_attn_interface.py")


def locate_flash_attn_3_interface() -> Path | None:
    """The top-level flash_attn_interface.py of flash-attn 3 (Hopper), found without importing it."""
    try:
        spec = importlib.util.find_spec("flash_attn_interface")
    except (ImportError, ValueError, AttributeError):
        spec = None
    if spec is not None and spec.origin and spec.origin.endswith(".py") and Path(spec.origin).is_file():
        return Path(spec.origin)
    return _from_metadata(("flash-attn-3", "flash_attn_3", "flashattn-hopper"), "flash_attn_interface.py")


def _from_metadata(dists: tuple[str, ...], suffix: str) -> Path | None:
    for name in dists:
        try:
            dist = metadata.distribution(name)
            files = dist.files or []
        except Exception:  # noqa: BLE001 - not installed, or unreadable metadata
            continue
        for f in files:
            text = str(f).replace("\\", "/")
            if text == suffix or text.endswith("/" + suffix):
                path = Path(str(dist.locate_file(f)))
                if path.is_file():
                    return path
    return None


def probe_api(versions: dict[str, str] | None = None) -> Environment:
    """A partial Environment with api facts of the installed flash-attn 2 and 3; never raises."""
    env = Environment(source="probe")
    versions = versions or {}
    jobs = (
        ("flash_attn", "flash_attn", locate_flash_attn_interface, FLASH_ATTN_FUNCTIONS),
        ("flash_attn_3", "flash_attn_3", locate_flash_attn_3_interface, FLASH_ATTN_3_FUNCTIONS),
    )
    for fact, prefix, locate, functions in jobs:
        if versions.get(fact) == ABSENT:
            continue
        try:
            path = locate()
            if path is None:
                if fact in versions:
                    env.notes.append(note("api", "info", f"{prefix}: could not find flash_attn_interface.py; "
                                          "its API facts are unknown"))
                continue
            source = path.read_text(encoding="utf-8", errors="replace")
            facts = api_facts(source, prefix, functions)
        except Exception as exc:  # noqa: BLE001 - unreadable or unparsable source: unknown facts
            env.notes.append(note("api", "warning", f"{prefix}: could not read its API ({type(exc).__name__}: "
                                  f"{exc}); its API facts are unknown"))
            continue
        env.api.update(facts)
    return env
