"""Messages in Python sources, read with ast: raise, assert, warnings, logging and refusal-reason lists."""
from __future__ import annotations

import ast
import re
import string

from .model import LIT, MODULE, PH, Raw, merge_parts, simplify

_LOG_KIND = {
    "warning": "warning", "warn": "warning", "warning_once": "warning", "warn_once": "warning",
    "info": "log", "info_once": "log", "debug": "log", "debug_once": "log",
    "error": "error", "exception": "error", "critical": "error", "fatal": "error",
    "warning_rank0": "warning", "warning_rank0_once": "warning", "info_rank0": "log", "error_rank0": "error",
}
_LOGGER_NAMES = re.compile(r"^(logger|log|logging|_logger|LOGGER|LOG|_log|perf_logger|logger_)$")
_PCT = re.compile(r"%(\((?P<key>[^)]*)\))?[#0\- +]*(\*|\d+)?(\.(\*|\d+))?[hlL]?(?P<conv>[diouxXeEfFgGcrsa%])")


class _Unresolved(Exception):
    pass


def _ph(node: ast.AST, spec: str = "") -> tuple:
    if isinstance(node, ast.Name) and node.id == MODULE:
        return (PH, MODULE, spec)
    return (PH, simplify(ast.unparse(node)), spec)


def _percent(fmt: str, args: list, kw: dict | None) -> list:
    parts: list = []
    pos = 0
    arg_i = 0
    for m in _PCT.finditer(fmt):
        parts.append((LIT, fmt[pos:m.start()]))
        pos = m.end()
        conv = m.group("conv")
        if conv == "%":
            parts.append((LIT, "%"))
            continue
        key = m.group("key")
        if key is not None:
            parts.append((PH, simplify(key), conv))
        elif arg_i < len(args):
            parts.append((PH, simplify(ast.unparse(args[arg_i])), conv))
            arg_i += 1
        else:
            parts.append((PH, "value", conv))
    parts.append((LIT, fmt[pos:]))
    return parts


def _format(fmt: str, args: list, keywords: list) -> list:
    parts: list = []
    auto = 0
    try:
        parsed = list(string.Formatter().parse(fmt))
    except ValueError:
        raise _Unresolved
    for literal, field, spec, conv in parsed:
        parts.append((LIT, literal))
        if field is None:
            continue
        root = re.split(r"[.\[]", field, maxsplit=1)[0]
        if root == "":
            node = args[auto] if auto < len(args) else None
            auto += 1
            name = simplify(ast.unparse(node)) if node is not None else "value"
        elif root.isdigit():
            i = int(root)
            name = simplify(ast.unparse(args[i])) if i < len(args) else "value"
        else:
            name = simplify(field)
        parts.append((PH, name, spec or (conv or "")))
    return parts


class _Ctx:
    def __init__(self, assigns: dict):
        self.assigns = assigns


def message_parts(node: ast.AST, ctx: _Ctx | None = None, depth: int = 0) -> list:
    """Turn a message expression into literal parts and named placeholders."""
    if depth > 6:
        raise _Unresolved
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [(LIT, node.value)]
    if isinstance(node, ast.JoinedStr):
        parts: list = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append((LIT, str(v.value)))
            elif isinstance(v, ast.FormattedValue):
                spec = ""
                if v.format_spec is not None:
                    spec = "".join(str(x.value) for x in v.format_spec.values if isinstance(x, ast.Constant))
                if v.conversion == ord("r"):
                    spec = spec or "r"
                parts.append(_ph(v.value, spec))
        return parts
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = _maybe(node.left, ctx, depth)
        right = _maybe(node.right, ctx, depth)
        if left is None and right is None:
            raise _Unresolved
        return (left if left is not None else [_ph(node.left)]) + (right if right is not None else [_ph(node.right)])
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) \
            and isinstance(node.left.value, str):
        args = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
        return _percent(node.left.value, args, None)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr == "format" and isinstance(node.func.value, ast.Constant) \
                and isinstance(node.func.value.value, str):
            return _format(node.func.value.value, node.args, node.keywords)
        held = ctx.assigns.get(_target_key(node.func.value)) if node.func.attr == "format" and ctx else None
        if isinstance(held, ast.Constant) and isinstance(held.value, str):  # MESSAGE.format(...), MESSAGE a constant
            return _format(held.value, node.args, node.keywords)
        if node.func.attr == "join" and isinstance(node.func.value, ast.Constant) and node.args:
            raise _Unresolved
    if _target_key(node) and ctx is not None and _target_key(node) in ctx.assigns:
        return message_parts(ctx.assigns[_target_key(node)], ctx, depth + 1)
    raise _Unresolved


def _maybe(node, ctx, depth):
    try:
        return message_parts(node, ctx, depth + 1)
    except _Unresolved:
        return None


def _has_literal(parts: list) -> bool:
    return any(p[0] == LIT and p[1].strip() for p in parts)


def _target_key(node: ast.AST) -> str:
    """A local name (`msg`) or an attribute of self (`self.message`) that a message may be assigned to."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return "self." + node.attr
    return ""


def _func_assigns(func: ast.AST) -> dict:
    """`msg = f"..."; raise X(msg)` is common; a name assigned once to a string expression resolves, and so does one
    assigned once and then extended by `+=` in the function's own statements (no branch can skip a part). One extended
    under a branch resolves to its first value and an open tail ({msg_rest}), which every branch's wording starts with."""
    counts: dict = {}
    values: dict = {}
    not_added: set = set()  # names an augmented assignment changes otherwise than by adding (`msg *= 2`)
    for n in ast.walk(func):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and _target_key(n.targets[0]):
            k = _target_key(n.targets[0])
            counts[k] = counts.get(k, 0) + 1
            values[k] = n.value
        elif isinstance(n, ast.AugAssign) and _target_key(n.target):
            k = _target_key(n.target)
            counts[k] = counts.get(k, 0) + 2
            if not isinstance(n.op, ast.Add):
                not_added.add(k)
    resolved = {k: v for k, v in values.items() if counts[k] == 1}
    sums: dict = {}
    steps: dict = {}
    for st in getattr(func, "body", []):
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and _target_key(st.targets[0]):
            k = _target_key(st.targets[0])
            sums[k], steps[k] = st.value, steps.get(k, 0) + 1
        elif isinstance(st, ast.AugAssign) and isinstance(st.op, ast.Add) and _target_key(st.target) in sums:
            k = _target_key(st.target)
            sums[k], steps[k] = ast.BinOp(left=sums[k], op=ast.Add(), right=st.value), steps[k] + 2
    for k, v in sums.items():
        if steps[k] == counts[k] and counts[k] % 2 == 1:
            resolved[k] = v
    for k, v in values.items():
        if k not in resolved and counts[k] % 2 == 1 and k not in not_added:
            # set once, a part added under a branch: the message still opens with what the name was set to
            resolved[k] = ast.BinOp(left=v, op=ast.Add(), right=ast.Name(id=f"{k.split('.')[-1]}_rest"))
    return resolved


def _module_constants(tree: ast.Module) -> dict:
    """Module-level string constants assigned once (`CUDA_MISMATCH_MESSAGE = "..."`), which functions format."""
    counts: dict = {}
    values: dict = {}
    for st in tree.body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            name = st.targets[0].id
            counts[name] = counts.get(name, 0) + 1
            values[name] = st.value
    return {k: v for k, v in values.items() if counts[k] == 1 and k.isupper() and isinstance(v, ast.Constant)
            and isinstance(v.value, str)}


def _branch_templates(tree: ast.Module) -> dict:
    """Upper-case names the module sets again under its own branches (TGI picks its FLASH_ATT_ERROR_MESSAGE by the
    GPU it finds at import) and formats in a raise: each branch's wording is a message of its own, worded with the
    first raise's arguments (name -> that `NAME.format(...)` call)."""
    counts: dict = {}

    def assigns(body: list) -> None:
        for st in body:
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) \
                    and st.targets[0].id.isupper():
                counts[st.targets[0].id] = counts.get(st.targets[0].id, 0) + 1
            if not isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for field in ("body", "orelse", "finalbody", "handlers"):
                    assigns(getattr(st, field, []) or [])

    assigns(tree.body)
    uses: dict = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Raise) and isinstance(n.exc, ast.Call) and n.exc.args:
            call = n.exc.args[0]
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "format" \
                    and isinstance(call.func.value, ast.Name):
                uses.setdefault(call.func.value.id, call)
    return {k: uses[k] for k, c in counts.items() if c > 1 and k in uses}


def _condition(stack: list, node: ast.AST) -> str:
    """The check that leads to the message, as the source writes it (`if cond: raise` -> cond)."""
    child = node
    for anc in reversed(stack):
        if isinstance(anc, ast.If):
            if any(child is s for s in anc.body):
                return ast.unparse(anc.test)
            if any(child is s for s in anc.orelse):
                return "not (" + ast.unparse(anc.test) + ")"
            return ""
        if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
            return ""
        child = anc
    return ""


def _call_name(func: ast.AST) -> tuple[str, str]:
    if isinstance(func, ast.Attribute):
        base = func.value
        base_name = ""
        if isinstance(base, ast.Name):
            base_name = base.id
        elif isinstance(base, ast.Attribute):
            base_name = base.attr
        elif isinstance(base, ast.Call):
            base_name = ast.unparse(base.func).split(".")[-1]
        return base_name, func.attr
    if isinstance(func, ast.Name):
        return "", func.id
    return "", ""


def _print_parts(args: list) -> ast.AST:
    """print(a, b) writes its arguments separated by one space; the message is that sum."""
    node = args[0]
    for a in args[1:]:
        node = ast.BinOp(left=ast.BinOp(left=node, op=ast.Add(), right=ast.Constant(" ")), op=ast.Add(), right=a)
    return node


_EXCEPTION_CLASS = re.compile(r"(Error|Exception|Resources)$")
"""A class whose name says it is an exception (triton's OutOfResources too): its __str__ and __init__ build a message."""
_BARE_ASSERT = re.compile(r"assert [^#]{16,}$")
"""An assert without a message shows only its own source line in the traceback, so the line is the message; short
ones (`assert x`) and lines that do not hold the whole condition would match other programs' tracebacks or nothing."""


def _invariant(test: ast.AST) -> bool:
    """`x is not None`, `isinstance(...)` and bare names check the program's own wiring, not the user's input."""
    if isinstance(test, ast.BoolOp):
        return all(_invariant(v) for v in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _invariant(test.operand)
    if isinstance(test, (ast.Name, ast.Attribute, ast.Subscript)):
        return True
    if isinstance(test, ast.Call):
        return _call_name(test.func)[1] in ("isinstance", "issubclass", "hasattr", "callable", "is_contiguous")
    if isinstance(test, ast.Compare):
        return all(isinstance(op, (ast.Is, ast.IsNot)) for op in test.ops)
    return False


def extract(source: str, prints: bool = False, reasons: bool = False) -> tuple[list, dict]:
    """One pass over a module yields every message it can print and the counts of what it skipped; `prints` reads
    bare print() calls too, for libraries that report their set-up that way (unsloth); `reasons`, a string passed as
    `reason=` to any call, for libraries that record why they refuse something and print the list later (the
    kernels hub's build variants)."""
    skipped: dict = {}
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return [], {"python file does not parse": 1}
    lines = source.splitlines()
    out: list = []

    def text_of(n: ast.AST) -> str:
        end = getattr(n, "end_lineno", n.lineno) or n.lineno
        chunk = "\n".join(lines[n.lineno - 1:end]).strip()
        return chunk[:300]

    def add(kind, msg_node, n, stack, ctx, condition=None):
        try:
            parts = merge_parts(message_parts(msg_node, ctx))
        except _Unresolved:
            skipped["message not a string expression"] = skipped.get("message not a string expression", 0) + 1
            return
        if not _has_literal(parts):
            skipped["only placeholders"] = skipped.get("only placeholders", 0) + 1
            return
        cond = condition if condition is not None else _condition(stack, n)
        raw = Raw(kind=kind, parts=parts, condition=cond, text=text_of(n), line=n.lineno,
                  trigger=condition is None and bool(cond))
        raw.scope = [a.name for a in stack if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        out.append(raw)

    constants = _module_constants(tree)
    templates = _branch_templates(tree)

    def visit(n: ast.AST, stack: list, ctx: _Ctx):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            ctx = _Ctx({**constants, **_func_assigns(n)})
        if isinstance(n, ast.Raise) and n.exc is not None:
            exc = n.exc
            if isinstance(exc, ast.Call):
                msg = exc.args[0] if exc.args else next(
                    (k.value for k in exc.keywords if k.arg in ("msg", "message", "reason")), None)
                if msg is not None:
                    add("error", msg, n, stack, ctx)
        elif isinstance(n, ast.Return) and n.value is not None and stack and \
                isinstance(stack[-1], ast.FunctionDef) and stack[-1].name == "__str__" and len(stack) >= 2 and \
                isinstance(stack[-2], ast.ClassDef) and _EXCEPTION_CLASS.search(stack[-2].name):
            add("error", n.value, n, stack, ctx)
        elif isinstance(n, ast.Assign) and stack and stack[-1] is not tree and isinstance(n.targets[0], ast.Name) \
                and n.targets[0].id in templates and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str) \
                and not any(isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for a in stack):
            use = templates[n.targets[0].id]
            add("error", ast.Call(func=ast.Attribute(value=n.value, attr="format"), args=use.args, keywords=use.keywords),
                n, stack, ctx)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "input" and n.args:
            add("log", n.args[0], n, stack, ctx)
        elif reasons and isinstance(n, ast.Call) and any(k.arg == "reason" for k in n.keywords):
            add("error", next(k.value for k in n.keywords if k.arg == "reason"), n, stack, ctx)
        elif isinstance(n, ast.Assert) and n.msg is None:
            line = lines[n.lineno - 1].strip()
            if n.end_lineno == n.lineno and _BARE_ASSERT.match(line) and not _invariant(n.test):
                add("assert", ast.Constant(line), n, stack, ctx, condition=ast.unparse(n.test))
        elif isinstance(n, ast.Assert) and n.msg is not None:
            msg = n.msg
            if isinstance(msg, ast.Call) and msg.args and re.search(r"(Error|Exception)$", _call_name(msg.func)[1]):
                msg = msg.args[0]
            add("assert", msg, n, stack, ctx, condition=ast.unparse(n.test))
        elif isinstance(n, ast.Expr) and isinstance(n.value, ast.Call):
            call = n.value
            base, attr = _call_name(call.func)
            if (base == "warnings" and attr == "warn") or (base == "" and attr in ("warn", "warn_once", "warning_once")):
                if call.args:
                    add("warning", call.args[0], n, stack, ctx)
            elif attr in _LOG_KIND and (_LOGGER_NAMES.match(base) or base.endswith("logger")) and call.args:
                first = call.args[0]
                if len(call.args) > 1 and isinstance(first, ast.Constant) and isinstance(first.value, str):
                    parts_node = ast.BinOp(left=first, op=ast.Mod(), right=ast.Tuple(elts=call.args[1:], ctx=ast.Load()))
                    ast.copy_location(parts_node, first)
                    add(_LOG_KIND[attr], parts_node, n, stack, ctx)
                else:
                    add(_LOG_KIND[attr], first, n, stack, ctx)
            elif attr == "__init__" and base == "super" and call.args and len(stack) >= 2 and \
                    isinstance(stack[-1], ast.FunctionDef) and stack[-1].name == "__init__" and \
                    isinstance(stack[-2], ast.ClassDef) and _EXCEPTION_CLASS.search(stack[-2].name):
                add("error", call.args[0], n, stack, ctx)
            elif attr == "append" and "reason" in base.lower() and call.args:
                add("error", call.args[0], n, stack, ctx)
            elif prints and base == "" and attr == "print" and call.args \
                    and not any(isinstance(a, ast.Starred) for a in call.args):
                add("log", _print_parts(call.args), n, stack, ctx)
        for child in ast.iter_child_nodes(n):
            visit(child, stack + [n], ctx)

    visit(tree, [], _Ctx(dict(constants)))
    return out, skipped
