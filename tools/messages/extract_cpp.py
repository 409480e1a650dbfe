"""Messages in C++/CUDA sources: check and log macros, thrown exceptions, c10::str, streams and concatenation."""
from __future__ import annotations

import re

from .model import C_STRING, LIT, PH, Raw, merge_parts, simplify

# macro -> (kind, index of the condition argument or None, index of the first message argument)
MACROS = {
    "TORCH_CHECK": ("error", 0, 1),
    "TORCH_CHECK_VALUE": ("error", 0, 1),
    "TORCH_CHECK_TYPE": ("error", 0, 1),
    "TORCH_CHECK_INDEX": ("error", 0, 1),
    "TORCH_CHECK_NOT_IMPLEMENTED": ("error", 0, 1),
    "TORCH_INTERNAL_ASSERT": ("assert", 0, 1),
    "TORCH_WARN": ("warning", None, 0),
    "TORCH_WARN_ONCE": ("warning", None, 0),
    "AT_ERROR": ("error", None, 0),
    "NVTE_CHECK": ("error", 0, 1),
    "NVTE_CHECK_CUDNN_FE": ("error", None, 0),
    "NVTE_ERROR": ("error", None, 0),
    "NVTE_WARN": ("warning", None, 0),
    "RETURN_CUDNN_FRONTEND_ERROR_IF": ("error", 0, 2),
    "CUDNN_FE_LOG_LABEL_ENDL": ("log", None, 0),
    "CUDNN_FE_LOG_LABEL": ("log", None, 0),
    "CUDNN_FE_LOG": ("log", None, 0),
    "CUDNN_FRONTEND_UNUSED": None,
    "std::runtime_error": ("error", None, 0),
    "std::invalid_argument": ("error", None, 0),
    "std::logic_error": ("error", None, 0),
    "std::out_of_range": ("error", None, 0),
    "cudnn_frontend::cudnnException": ("error", None, 0),
    "cudnnException": ("error", None, 0),
    "set_error_and_throw_exception": ("error", None, 2),
    "error_t": ("error", None, 1),
    "FLASHINFER_CHECK": ("error", 0, 1),
    "FLASHINFER_ERROR": ("error", None, 0),
    "FLASHINFER_WARN": ("warning", None, 0),
    "TLLM_CHECK_WITH_INFO": ("error", 0, 1),
    "TVM_FFI_ICHECK": ("error", 0, None),
    "TVM_FFI_ICHECK_EQ": ("error", 0, None),
    "TVM_FFI_ICHECK_NE": ("error", 0, None),
    "TVM_FFI_ICHECK_LT": ("error", 0, None),
    "TVM_FFI_ICHECK_LE": ("error", 0, None),
    "TVM_FFI_ICHECK_GT": ("error", 0, None),
    "TVM_FFI_ICHECK_GE": ("error", 0, None),
    "TVM_FFI_THROW": ("error", None, None),
    "GGML_ABORT": ("error", None, 0),
    "GGML_ASSERT": ("assert", 0, 1),
    "LLAMA_LOG_ERROR": ("error", None, 0),
    "LLAMA_LOG_WARN": ("warning", None, 0),
    "LLAMA_LOG_INFO": ("log", None, 0),
    "GGML_LOG_ERROR": ("error", None, 0),
    "GGML_LOG_WARN": ("warning", None, 0),
    "GGML_LOG_INFO": ("log", None, 0),
}
_ERROR_IF = {"RETURN_CUDNN_FRONTEND_ERROR_IF"}
"""Checks whose condition is what makes them fail; the others' is what they require."""
_C10_STR = {"TORCH_CHECK", "TORCH_CHECK_VALUE", "TORCH_CHECK_TYPE", "TORCH_CHECK_INDEX", "TORCH_CHECK_NOT_IMPLEMENTED",
            "TORCH_INTERNAL_ASSERT", "TORCH_WARN", "TORCH_WARN_ONCE", "AT_ERROR"}
"""c10::str joins these macros' arguments as they are: a `%d` in their literal prints as `%d`, the value after it."""
_SPACED = {"FLASHINFER_CHECK", "FLASHINFER_WARN"}
"""FlashInfer's variadic checks write their arguments with one space between them (exception.h write_to_stream)."""
_CALL = re.compile(r"(?<![\w:])(" + "|".join(re.escape(k) for k, v in MACROS.items() if v) + r")\s*\(")
_STR = re.compile(r'(?:u8|u|U|L)?"((?:[^"\\\n]|\\.)*)"')
_RAW = re.compile(r'R"([^(\s]*)\((.*?)\)\1"', re.S)
_ESC = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "0": "\0", "r": "\r", "a": "\a"}


def _unescape(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESC.get(m.group(1), m.group(1)), s)


# What a check without a message prints: c10/util/Exception.h (TORCH_CHECK_MSG: "Expected " #cond " to be true,
# but got false.  ..."), transformer_engine/common/util/logging.h (NVTE_CHECK: "Assertion failed: " #expr ". ") and
# ggml/include/ggml.h (GGML_ASSERT(x): GGML_ABORT("GGML_ASSERT(%s) failed", #x), after "file:line: ").
_CHECK_DEFAULT = {
    "TORCH_CHECK": "Expected {cond} to be true, but got false.",
    "TORCH_CHECK_VALUE": "Expected {cond} to be true, but got false.",
    "TORCH_CHECK_TYPE": "Expected {cond} to be true, but got false.",
    "TORCH_CHECK_INDEX": "Expected {cond} to be true, but got false.",
    "NVTE_CHECK": "Assertion failed: {cond}.",
    "GGML_ASSERT": "GGML_ASSERT({cond}) failed",
}


STRINGIZING = {
    "CHECK_EQ": ("CHECK_EQ({0}, {1}) failed. ", "{0} == {1}", True),
    "CHECK_GE": ("CHECK_GE({0}, {1}) failed. ", "{0} >= {1}", True),
    "CHECK_CUDA": ("{0} must be a CUDA tensor", "{0}.is_cuda()", False),
    "CHECK_CONTIGUOUS": ("{0} must be contiguous", "{0}.is_contiguous()", False),
    "CHECK_DIM": ("{1} must be a {0}D tensor", "{1}.dim() == {0}", False),
}
"""FlashInfer 0.1-0.2's checks (python/csrc/pytorch_extension_utils.h, later csrc/): TORCH_CHECK with the text of
their arguments (#a) in the message, and for CHECK_EQ/CHECK_GE both values after it (`a, " vs ", b`). Read only where
a source says so: other code bases define CHECK_EQ otherwise (glog's "Check failed: a == b")."""
_STRINGIZING_CALL = re.compile(r"(?<![\w:])(" + "|".join(STRINGIZING) + r")\s*\(")


def _in_define(masked: str, pos: int) -> bool:
    """A macro name right after `#define` is being defined there, not called."""
    return bool(re.search(r"define\s*$", masked[max(0, pos - 12):pos]))


def _stringizing_checks(source: str, masked: str, lines: list, line_of) -> list:
    """The messages of STRINGIZING's macros, each call's argument text put into its message."""
    out = []
    for m in _STRINGIZING_CALL.finditer(masked):
        if _in_define(masked, m.start()):
            continue
        close = _close(masked, m.end() - 1)
        if close < 0:
            continue
        args = [_stringize(source, masked, span) for span in _split_top(source, masked, m.end(), close, ",")]
        message, condition, values = STRINGIZING[m.group(1)]
        if len(args) != message.count("{") or not all(args):
            continue
        parts = [(LIT, message.format(*args))]
        if values:
            parts += [(PH, simplify(args[0]), ""), (LIT, " vs "), (PH, simplify(args[1]), "")]
        l0 = line_of(m.start())
        out.append(Raw(kind="error", parts=merge_parts(parts), condition=condition.format(*args),
                       text="\n".join(lines[l0 - 1:line_of(close)]).strip()[:300], line=l0))
    return out


_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\((\w+)\)((?:[^\n]*\\\n)*[^\n]*)", re.M)
_STRINGIZED_CHECK = r"TORCH_CHECK\s*\(\s*((?:[^;]|;(?!\s*$))*?)\s*,\s*#{0}\s*\"((?:[^\"\\\\]|\\\\.)*)\"\s*\)"


def check_macros(source: str) -> dict:
    """The one-argument macros a file defines whose checks print the argument's own text (#TENSOR " must be ..."):
    name -> (parameter, ((condition, literal after the argument's text), ...)). Their calls are messages too."""
    out = {}
    for m in _DEFINE.finditer(source):
        name, param, body = m.group(1), m.group(2), m.group(3).replace("\\\n", " ")
        checks = tuple((re.sub(r"\s+", " ", c.group(1)).strip(), _unescape(c.group(2)))
                       for c in re.finditer(_STRINGIZED_CHECK.format(re.escape(param)), body))
        if checks:
            out[name] = (param, checks)
    return out


def printed_asserts(source: str) -> dict:
    """The one-argument assert macros a file defines to print `<prefix><file>:<line>: <argument's text>` (ggml.h's
    GGML_ASSERT before ggml_abort: fprintf(stderr, "GGML_ASSERT: %s:%d: %s\\n", __FILE__, __LINE__, #x)): name ->
    prefix. A release that defines one prints its calls so, not in the wording of _CHECK_DEFAULT."""
    out = {}
    for m in _DEFINE.finditer(source):
        name, param, body = m.group(1), m.group(2), m.group(3).replace("\\\n", " ")
        printed = re.search(r'fprintf\s*\(\s*stderr\s*,\s*"((?:[^"\\]|\\.)*?)%s:%d: %s\\n"\s*,\s*__FILE__\s*,\s*'
                            r"__LINE__\s*,\s*#\s*" + re.escape(param) + r"\s*\)", body)
        if printed:
            out[name] = _unescape(printed.group(1))
    return out


def _scope_at(masked: str, pos: int) -> list:
    """The function a message at `pos` lies in (the last definition within 20,000 characters above it), as a list."""
    fm = None
    for fm in _FUNC.finditer(masked, max(0, pos - 20000), pos):
        pass
    return [fm.group(1)] if fm else []


def _macro_checks(source: str, masked: str, lines: list, line_of, macros: dict) -> list:
    """The messages of the calls of `macros` (check_macros), each call's argument text put where the macro puts it."""
    out: list = []
    if not macros:
        return out
    for m in re.finditer(r"(?<![\w:])(" + "|".join(map(re.escape, macros)) + r")\s*\(", masked):
        if _in_define(masked, m.start()):
            continue
        close = _close(masked, m.end() - 1)
        if close < 0:
            continue
        spans = _split_top(source, masked, m.end(), close, ",")
        if len(spans) != 1:
            continue
        arg = _stringize(source, masked, spans[0])
        param, checks = macros[m.group(1)]
        l0 = line_of(m.start())
        scope = _scope_at(masked, m.start())
        for cond, literal in checks:
            raw = Raw(kind="error", parts=merge_parts([(LIT, arg + literal)]),
                      condition=re.sub(r"\b%s\b" % re.escape(param), lambda _: arg, cond),
                      text="\n".join(lines[l0 - 1:line_of(close)]).strip()[:300], line=l0)
            raw.scope = scope
            out.append(raw)
    return out


def _stringize(src: str, masked: str, span: tuple) -> str:
    """The preprocessor's #cond: the argument's text, comments dropped, whitespace runs as one space."""
    a, b = span
    text = "".join(src[i] if masked[i] == src[i] or masked[i] in "sc" else " " for i in range(a, b))
    return re.sub(r"\s+", " ", text).strip()


def _brace_errors(src: str, masked: str):
    """cudnn-frontend also returns errors as `{error_code_t::X, "message" + detail}`."""
    for m in re.finditer(r"\{\s*(?:cudnn_frontend::)?error_code_t::(\w+)\s*,", masked):
        close = _close(masked, m.start(), "{", "}")
        if close > 0:
            yield m, m.end(), close


def _mask(src: str) -> str:
    """Find code structure without being fooled by comments and literals (same length, same offsets)."""
    out = list(src)
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
        elif c == '"' or (c == "R" and src.startswith('R"', i)):
            if c == "R":
                m = _RAW.match(src, i)
                j = m.end() if m else i + 2
            else:
                j = i + 1
                while j < n and src[j] != '"':
                    if src[j] == "\\":
                        j += 1
                    if j < n and src[j] == "\n":
                        break
                    j += 1
                j += 1
            for k in range(i + 1, min(j, n) - 1):
                if out[k] != "\n":
                    out[k] = "s"
            i = j
        elif c == "'" and not (i > 0 and (src[i - 1].isalnum())):
            j = i + 1
            while j < n and src[j] != "'" and src[j] != "\n":
                if src[j] == "\\":
                    j += 1
                j += 1
            for k in range(i + 1, min(j, n)):
                out[k] = "c"
            i = j + 1
        else:
            i += 1
    return "".join(out)


def _close(masked: str, start: int, open_ch="(", close_ch=")") -> int:
    depth = 0
    for i in range(start, len(masked)):
        ch = masked[i]
        if ch == open_ch:
            depth += 1
        elif ch == close_ch:
            depth -= 1
            if depth == 0:
                return i
    return -1


def _split_top(src: str, masked: str, a: int, b: int, sep: str) -> list:
    """Split an argument list (or a stream or a sum) at its top level only."""
    pieces = []
    depth = 0
    last = a
    i = a
    while i < b:
        ch = masked[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and masked.startswith(sep, i):
            if sep == "+" and (masked.startswith("++", i) or masked[i - 1] == "+" or masked.startswith("+=", i)):
                i += 1
                continue
            if sep == "<<" and masked.startswith("<<=", i):
                i += 2
                continue
            pieces.append((last, i))
            last = i + len(sep)
            i += len(sep)
            continue
        i += 1
    pieces.append((last, b))
    return pieces


def _literal_only(src: str, masked: str, a: int, b: int):
    """Return the concatenated literal if [a, b) is only adjacent string literals, else None."""
    seg = src[a:b].strip()
    if not seg:
        return None
    pos = 0
    out = []
    while pos < len(seg):
        while pos < len(seg) and seg[pos].isspace():
            pos += 1
        if pos >= len(seg):
            break
        m = _RAW.match(seg, pos)
        if m:
            out.append(m.group(2))
            pos = m.end()
            continue
        m = _STR.match(seg, pos)
        if m:
            out.append(_unescape(m.group(1)))
            pos = m.end()
            continue
        if seg.startswith("std::string(", pos) or seg.startswith("string(", pos):
            return None
        return None
    return "".join(out) if out else None


_FMT = re.compile(r"\{(\d*)(:[^{}]*)?\}|%[-+ #0]*\d*(?:\.\d+)?(?:l|ll|z|h)?[diuxXsfgeclp]")


def _fmt_literal(lit: str, args_after: list) -> tuple[list, int]:
    """fmt/printf-style literals take their values from the arguments after them."""
    if not _FMT.search(lit) or not args_after:
        return [(LIT, lit)], 0
    parts: list = []
    used = 0
    pos = 0
    for m in _FMT.finditer(lit):
        parts.append((LIT, lit[pos:m.start()]))
        pos = m.end()
        name = simplify(args_after[used]) if used < len(args_after) else "value"
        # C's %s takes a char*: a name or a word, never the number a placeholder's name may suggest
        spec = "d" if re.search(r"[diu]$", m.group(0)) else C_STRING if m.group(0).endswith("s") else ""
        parts.append((PH, name, spec))
        used += 1
    parts.append((LIT, lit[pos:]))
    return parts, used


def _expr_parts(src: str, masked: str, a: int, b: int, depth: int = 0) -> list:
    """One argument becomes literals and placeholders (streams, sums, c10::str, to_string)."""
    lit = _literal_only(src, masked, a, b)
    if lit is not None:
        return [(LIT, lit)]
    for sep in ("<<", "+"):
        pieces = _split_top(src, masked, a, b, sep)
        if len(pieces) > 1 and any(_literal_only(src, masked, x, y) is not None or
                                   _STR.search(src[x:y]) for x, y in pieces):
            out: list = []
            for x, y in pieces:
                out += _expr_parts(src, masked, x, y, depth + 1)
            return out
    seg = src[a:b].strip()
    alt = _ternary(src, masked, a, b)
    if alt is not None:
        return [alt]
    m = re.match(r"(?:c10::)?str\s*\(", seg)
    if m and depth < 4:
        off = a + (len(src[a:b]) - len(src[a:b].lstrip())) + m.end() - 1
        end = _close(masked, off)
        if end > 0:
            out = []
            for x, y in _split_top(src, masked, off + 1, end, ","):
                out += _expr_parts(src, masked, x, y, depth + 1)
            return out
    m = re.match(r"std::string\s*\(", seg)
    if m and depth < 4:
        off = a + (len(src[a:b]) - len(src[a:b].lstrip())) + m.end() - 1
        end = _close(masked, off)
        if end > 0:
            return _expr_parts(src, masked, off + 1, end, depth + 1)
    if not seg or seg in ("std::endl", "endl", "'\\n'"):
        return [(LIT, "\n")] if seg in ("std::endl", "endl") else []
    return [(PH, simplify(seg), "")]


def _ternary(src: str, masked: str, a: int, b: int):
    """`cond ? "A" : "B"` prints one of two known texts: a placeholder that matches either."""
    q = _split_top(src, masked, a, b, "?")
    if len(q) != 2:
        return None
    c = _split_top(src, masked, q[1][0], q[1][1], ":")
    c = [x for x in c if src[x[0]:x[1]].strip()] if len(c) == 2 else c
    if len(c) != 2:
        return None
    left = _literal_only(src, masked, *c[0])
    right = _literal_only(src, masked, *c[1])
    if left is None or right is None:
        return None
    return (PH, simplify(src[q[0][0]:q[0][1]]), "alt:" + left + "\x00" + right)


_FUNC = re.compile(r"\b(?:bool|void|int|int64_t|auto|Tensor|std::tuple<[^;{()]*>|at::Tensor)\s+(\w+)\s*\([^;{}]*\)\s*(?:const\s*)?\{")


def _trailing_stream(src: str, masked: str, pos: int):
    """`TVM_FFI_ICHECK(cond) << "message" << value;`: the message streamed after the check, None if none is."""
    m = re.match(r"\s*<<", masked[pos:])
    if not m:
        return None
    end = _statement_end(masked, pos)
    parts: list = []
    for x, y in _split_top(src, masked, pos + m.end(), end, "<<"):
        parts += _expr_parts(src, masked, x, y)
    return parts


def _statement_end(masked: str, pos: int) -> int:
    depth = 0
    for i in range(pos, len(masked)):
        ch = masked[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                return i
        elif ch == ";" and depth == 0:
            return i
    return len(masked)


def _named_stream(src: str, masked: str, msg_args: list, pos: int):
    """`std::ostringstream err_msg; err_msg << "Unsupported head_dim: " << head_dim; FLASHINFER_ERROR(err_msg.str());`
    prints what was streamed into the named stream since its declaration; None when the message is not such a stream."""
    if len(msg_args) != 1:
        return None
    m = re.fullmatch(r"\s*(\w+)\.str\(\)\s*", src[msg_args[0][0]:msg_args[0][1]])
    if not m:
        return None
    name = m.group(1)
    window = max(0, pos - 4000)
    decl = None
    for decl in re.finditer(r"\bstd::(?:o?string)?stream\s+" + name + r"\s*;", masked[window:pos]):
        pass
    if decl is None:
        return None
    parts: list = []
    for s in re.finditer(r"(?<![\w.])" + name + r"\s*<<", masked[window + decl.end():pos]):
        start = window + decl.end() + s.end()
        for x, y in _split_top(src, masked, start, _statement_end(masked, start), "<<"):
            parts += _expr_parts(src, masked, x, y)
    return parts or None


def _args_parts(src: str, masked: str, args: list, formats: bool = True) -> list:
    out: list = []
    i = 0
    texts = [src[x:y].strip() for x, y in args]
    while i < len(args):
        x, y = args[i]
        lit = _literal_only(src, masked, x, y)
        if lit is not None:
            parts, used = _fmt_literal(lit, texts[i + 1:]) if formats else ([(LIT, lit)], 0)
            out += parts
            i += 1 + used
            continue
        out += _expr_parts(src, masked, x, y)
        i += 1
    return out


def _enclosing_if(src: str, masked: str, pos: int) -> str:
    """`if (cond) { TORCH_WARN(...) }` and `if (cond) throw ...` carry their condition in the `if`."""
    head = masked[max(0, pos - 600):pos]
    base = max(0, pos - 600)
    m = None
    for m in re.finditer(r"\bif\s*\(", head):
        pass
    if not m:
        return ""
    start = base + m.end() - 1
    end = _close(masked, start)
    if end < 0 or end > pos:
        return ""
    between = masked[end + 1:pos]
    if not re.fullmatch(r"\s*\{?\s*(throw\s+)?(return\s+)?", between):
        return ""
    return re.sub(r"\s+", " ", src[start + 1:end]).strip()


def extract(source: str, stringizing: bool = False, macros: dict | None = None,
            asserts: dict | None = None) -> tuple[list, dict]:
    """One pass over a C++/CUDA file yields every message it can print and the counts of what it skipped;
    `stringizing` reads FlashInfer's argument-text checks too (STRINGIZING), `macros` the calls of a release's
    argument-text check macros (check_macros), `asserts` its assert macros' own wording (printed_asserts)."""
    if not _CALL.search(source) and not (stringizing and _STRINGIZING_CALL.search(source)) and not any(
            name in source for name in macros or {}):
        return [], {}
    masked = _mask(source)
    src_lines = source.splitlines()
    out: list = []
    skipped: dict = {}
    line_starts = [0]
    for i, ch in enumerate(source):
        if ch == "\n":
            line_starts.append(i + 1)

    def line_of(pos: int) -> int:
        lo, hi = 0, len(line_starts)
        while lo < hi - 1:
            mid = (lo + hi) // 2
            if line_starts[mid] <= pos:
                lo = mid
            else:
                hi = mid
        return lo + 1

    for m in _CALL.finditer(masked):
        name = m.group(1)
        if _in_define(masked, m.start()):
            continue
        kind, cond_i, msg_i = MACROS[name]
        open_pos = m.end() - 1
        close = _close(masked, open_pos)
        if close < 0:
            continue
        args = _split_top(source, masked, open_pos + 1, close, ",")
        if name in ("error_t",) and not (len(args) == 2 and "error_code_t" in source[args[0][0]:args[0][1]]):
            continue
        if msg_i is None:
            parts = _trailing_stream(source, masked, close + 1)
            if parts is None:
                skipped["check without a message"] = skipped.get("check without a message", 0) + 1
                continue
            msg_args = None
        else:
            msg_args = args[msg_i:]
            stream = _named_stream(source, masked, msg_args, m.start())
            if stream is not None:
                parts, msg_args = stream, None
        if msg_args is None:
            parts = merge_parts(parts)
        elif not msg_args or not source[msg_args[0][0]:msg_args[0][1]].strip():
            stringized = _stringize(source, masked, args[0]) if cond_i == 0 and args else ""
            if name == "GGML_ASSERT" and stringized in ("false", "0"):  # ggml's mark of a branch never to be reached
                skipped["check without a message"] = skipped.get("check without a message", 0) + 1
                continue
            if name in (asserts or {}) and stringized:
                parts = [(LIT, asserts[name]), (PH, "file", ""), (LIT, ":"), (PH, "line", "d"), (LIT, ": " + stringized)]
            elif name in _CHECK_DEFAULT and stringized:
                parts = [(LIT, _CHECK_DEFAULT[name].format(cond=stringized))]
            else:
                skipped["check without a message"] = skipped.get("check without a message", 0) + 1
                continue
        elif name in _SPACED:
            parts = []
            for k, (x, y) in enumerate(msg_args):
                parts += ([(LIT, " ")] if k else []) + _expr_parts(source, masked, x, y)
            parts = merge_parts(parts)
        else:
            parts = merge_parts(_args_parts(source, masked, msg_args, formats=name not in _C10_STR))
        if not any(p[0] == LIT and p[1].strip() for p in parts):
            skipped["only placeholders"] = skipped.get("only placeholders", 0) + 1
            continue
        if name.startswith("TVM_FFI_ICHECK_") and len(args) == 2:
            op = {"EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">="}[name.rsplit("_", 1)[1]]
            lhs, rhs = (re.sub(r"\s+", " ", source[a:b]).strip() for a, b in args)
            cond, trigger = f"{lhs} {op} {rhs}", False
        elif cond_i is not None and cond_i < len(args):
            cond = re.sub(r"\s+", " ", source[args[cond_i][0]:args[cond_i][1]]).strip()
            trigger = name in _ERROR_IF
        else:
            cond, trigger = _enclosing_if(source, masked, m.start()), True
        l0, l1 = line_of(m.start()), line_of(close)
        text = "\n".join(src_lines[l0 - 1:l1]).strip()[:300]
        raw = Raw(kind=kind, parts=parts, condition=cond, text=text, line=l0, trigger=trigger and bool(cond))
        raw.scope = _scope_at(masked, m.start())
        out.append(raw)
    if stringizing:
        out.extend(_stringizing_checks(source, masked, src_lines, line_of))
    out.extend(_macro_checks(source, masked, src_lines, line_of, macros or {}))
    for m, a, b in _brace_errors(source, masked):
        if m.group(1) == "OK":
            continue
        parts = merge_parts(_args_parts(source, masked, _split_top(source, masked, a, b, ",")))
        if not any(p[0] == LIT and p[1].strip() for p in parts):
            skipped["only placeholders"] = skipped.get("only placeholders", 0) + 1
            continue
        l0, l1 = line_of(m.start()), line_of(b)
        cond = _enclosing_if(source, masked, _stmt_start(masked, m.start()))
        raw = Raw(kind="error", parts=parts, condition=cond, text="\n".join(src_lines[l0 - 1:l1]).strip()[:300], line=l0,
                  trigger=bool(cond))
        out.append(raw)
    return out, skipped


def _stmt_start(masked: str, pos: int) -> int:
    m = None
    for m in re.finditer(r"\breturn\s*$|\berror_t\s*$|\berror_object\s*$", masked[max(0, pos - 40):pos]):
        pass
    return max(0, pos - 40) + m.start() if m else pos
