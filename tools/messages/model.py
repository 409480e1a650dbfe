"""Message records, placeholder names, regex patterns and ids shared by both extractors."""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

LIT = "lit"
PH = "ph"
MODULE = "__name__"
"""The placeholder of a module's own name (`f"module {__name__!r} has no attribute {name!r}"`): known once the file's
path is, so it is written out there (module_named) instead of matching any module."""

# Fields a placeholder may name (attndoctor's vocabulary).
FACT_FIELDS = {
    "hdim", "hdim_v", "heads", "kv_heads", "batch", "seqlen_q", "seqlen_kv", "dtype", "sm", "gpu", "torch",
    "cuda", "cudnn", "flash_attn", "te", "window", "dropout", "softcap", "layout", "smem_required", "smem_limit",
}

# Placeholder name -> fact, only for names whose meaning is certain.
_FACT_BY_NAME = {
    "hdim": "hdim", "head_dim": "hdim", "headdim": "hdim", "head_size": "hdim", "head_size_og": "hdim",
    "head_size_qk": "hdim", "head_dim_qk": "hdim", "qk_head_dim": "hdim", "head_dim_q": "hdim",
    "hdim_v": "hdim_v", "head_dim_v": "hdim_v", "headdim_v": "hdim_v", "head_size_v": "hdim_v",
    "head_size_v_og": "hdim_v", "v_head_dim": "hdim_v",
    "num_heads": "heads", "num_heads_q": "heads", "num_attention_heads": "heads", "num_q_heads": "heads",
    "num_heads_k": "kv_heads", "num_kv_heads": "kv_heads", "num_key_value_heads": "kv_heads",
    "num_heads_kv": "kv_heads", "kv_heads": "kv_heads",
    "batch_size": "batch",
    "seqlen_q": "seqlen_q", "max_seqlen_q": "seqlen_q", "seqlen_kv": "seqlen_kv", "seqlen_k": "seqlen_kv",
    "max_seqlen_k": "seqlen_kv", "max_seqlen_kv": "seqlen_kv",
    "dtype": "dtype", "torch_dtype": "dtype", "q_dtype": "dtype", "query_dtype": "dtype", "qkv_dtype": "dtype", "query_dtype_": "dtype",
    "compute_capability": "sm", "sm_arch": "sm", "sm": "sm", "arch": "sm", "device_capability": "sm",
    "cc": "sm", "capability": "sm",
    "gpu_name": "gpu", "device_name": "gpu",
    "torch_version": "torch", "cuda_version": "cuda", "cudnn_version": "cudnn",
    "flash_attn_version": "flash_attn", "flash_attention_version": "flash_attn", "te_version": "te",
    "get_te_version": "te",
    "window_size": "window", "sliding_window": "window", "window_size_left": "window",
    "dropout_p": "dropout", "dropout": "dropout", "attention_dropout": "dropout",
    "softcap": "softcap", "logit_softcapping": "softcap", "softcapping": "softcap",
    "qkv_layout": "layout", "layout": "layout",
}

_INT_HINTS = re.compile(
    r"(^|_)(hdim|headdim|head_dim|head_size|seqlen|seq_len|len|num|size|batch|heads|dim|major|minor|"
    r"count|idx|index|rank|world|stride|alignment|align|block|blocks|bytes|nbytes|smem|required|limit|"
    r"warps|stages|sm|cc|nheads|numel|k|n|m|d|b|h|s)(_|$|\d)"
)
_NAME_HINTS = re.compile(r"(dtype|device|arch|version|backend|layout|impl|implementation)$")


@dataclass
class Raw:
    """One message as read from one source file, before dedupe."""

    kind: str
    parts: list  # [(LIT, str) | (PH, name, spec)]
    condition: str
    text: str
    line: int
    trigger: bool = False
    """The condition is what makes the library print it (`if cond: raise`), not what it requires (`assert cond`)."""
    backend: list = field(default_factory=list)
    scope: list = field(default_factory=list)


def simplify(expr: str) -> str:
    """A placeholder needs a readable identifier, not the source expression."""
    e = expr.strip()
    e = re.sub(r"^(std::)?to_string\((.*)\)$", r"\2", e)
    e = re.sub(r"^(str|repr|int|float|len)\((.*)\)$", lambda m: m.group(2) if m.group(1) in ("str", "repr") else m.group(0), e)
    e = re.sub(r"\.(item|cpu|tolist)\(\)", "", e)
    e = re.sub(r"\bself\.|\bcls\.|\bthis->|\bparams\.|\bargs\.|\bmeta\.|\bconfig\.", "", e)
    name = re.sub(r"\W+", "_", e).strip("_").lower()
    name = re.sub(r"_+", "_", name)
    if not name:
        name = "value"
    if name[0].isdigit():
        name = "v_" + name
    if len(name) > 40:
        name = name[:40].rstrip("_")
    return name


NAME_VALUE = r"[\w.:+\-]+"
"""A dtype, device, version or backend name; MSVC builds print c10 types as "struct c10::Half", hence the optional
word before it, outside the group."""


INT_OR_TUPLE = r"-?\d+|\([-\d, ]+\)|torch\.Size\(\[[-\d, ]*\]\)"
"""A value whose name says it is a count or a size: an integer, a Python tuple of them (`correct_2d_size`), or what a
tensor's .size() prints (torch.Size([1, 30, 30]))."""


C_STRING = "cstr"
"""The spec of a C printf `%s`: a char*, so text whatever its placeholder's name says (Python's `%s` of a count
prints the number, and keeps the name's hint)."""


TYPE_REPR = r"<class '[\w.]+'>|[\w.]+"
"""What `type(x)` formats to (<class 'torch.Tensor'>), or a class's bare name where a library prints __name__."""


def subpattern(name: str, spec: str) -> str:
    """Each placeholder must match what the library prints there, no more and no less."""
    spec = spec or ""
    if spec.startswith("alt:"):
        return "|".join(re.escape(x).replace("\\ ", " ") for x in spec[4:].split("\x00"))
    if spec == C_STRING:
        return NAME_VALUE if _NAME_HINTS.search(name) else r".*?"
    if re.search(r"[dxXob]$", spec):
        return r"-?\d+"
    if re.search(r"[eEfFgG%]$", spec):
        return r"[-+\w.]+"
    if spec in ("r",):
        return r".*?"
    if name.startswith("type_"):  # type(x): Python prints <class 'module.Name'>
        return TYPE_REPR
    if _INT_HINTS.search(name) and not _NAME_HINTS.search(name) and not re.search(r"shape|sizes|list|tuple", name):
        return INT_OR_TUPLE
    if _NAME_HINTS.search(name):
        return NAME_VALUE
    return r".*?"


def merge_parts(parts: list) -> list:
    """Adjacent literals (C++ concatenation, implicit joins) form one literal."""
    out: list = []
    for p in parts:
        if p[0] == LIT:
            if not p[1]:
                continue
            if out and out[-1][0] == LIT:
                out[-1] = (LIT, out[-1][1] + p[1])
                continue
        out.append(p)
    return out


def template_of(parts: list) -> str:
    """The template is the message as written, placeholders as {name}, literal braces doubled."""
    out = []
    for p in parts:
        if p[0] == LIT:
            out.append(p[1].replace("{", "{{").replace("}", "}}"))
        else:
            out.append("{" + p[1] + "}")
    return "".join(out)


def normalize(template: str) -> str:
    """Ids must not change with incidental whitespace."""
    return re.sub(r"\s+", " ", template).strip()


def entry_id(library: str, template: str) -> str:
    """An id is stable across reruns and releases: library plus normalized template."""
    digest = hashlib.sha1((library + "\n" + normalize(template)).encode("utf-8")).hexdigest()[:12]
    return f"{library}-{digest}"


QUOTES = "`'\""
"""Quotes around a value in a message (`sdpa`): people quote the message without them as often as with them."""


def pattern_of(parts: list) -> tuple[str, dict]:
    """A regex that finds the printed message, each placeholder a named group."""
    seen: dict = {}
    out = []
    facts = {}
    for i, p in enumerate(parts):
        if p[0] == LIT:
            text, head, tail = p[1], "", ""
            if i == len(parts) - 1:
                text = text.rstrip() or text  # a prompt's or a line's trailing space does not survive a paste
            if i == 0:
                text = text.lstrip() or text  # a triple-quoted message opens with a line break
            text = re.sub(r"[ \t]*\n[ \t]*", "\n", text)
            if i + 2 < len(parts) and parts[i + 1][0] != LIT and parts[i + 2][0] == LIT and text[-1:] in QUOTES \
                    and parts[i + 2][1].startswith(text[-1]):
                text, tail = text[:-1], re.escape(text[-1]) + "?"
            if i >= 2 and parts[i - 1][0] != LIT and parts[i - 2][0] == LIT and text[:1] in QUOTES \
                    and parts[i - 2][1].endswith(text[0]):
                text, head = text[1:], re.escape(text[0]) + "?"
            # a line break inside a message: printed as written, or joined with one space where why reads wrapped lines
            out.append(head + re.escape(text).replace("\\ ", " ").replace("\\\n", "\\s+") + tail)
            continue
        name, spec = p[1], p[2]
        base = re.sub(r"[^0-9a-zA-Z_]", "_", name)
        if base[0].isdigit():
            base = "v_" + base
        seen[base] = seen.get(base, 0) + 1
        group = base if seen[base] == 1 else f"{base}_{seen[base]}"
        sub = subpattern(name, spec)
        fact = fact_of(name, parts, i)
        if fact:
            facts[group] = fact
            if fact in _INT_FACTS and sub == r".*?":
                sub = r"-?\d+"
        last = i == len(parts) - 1
        if last and sub == r".*?":
            sub = r".*"
        out.append(("(?:struct |class )?" if sub == NAME_VALUE else "") + f"(?P<{group}>{sub})")
    if parts and parts[-1][0] == LIT and (len(parts[-1][1].strip()) >= 2 and re.search(r"[^.]\.$", parts[-1][1]) or (
            parts[-1][1] == "." and len(out) > 1 and not out[-2].endswith(".*?)"))):
        out[-1] = out[-1] + "?"  # pasted messages often lose the final period
    return "".join(out), facts


_INT_FACTS = {"hdim", "hdim_v", "heads", "kv_heads", "batch", "seqlen_q", "seqlen_kv", "smem_required", "smem_limit"}

_LITERAL_FACTS = [
    (re.compile(r"seqlen_q\s*[:=]\s*$"), "seqlen_q"),
    (re.compile(r"seqlen_kv?\s*[:=]\s*$"), "seqlen_kv"),
    (re.compile(r"query\.size\(-1\)\s*[:=]\s*$"), "hdim"),
    (re.compile(r"value\.size\(-1\)\s*[:=]\s*$"), "hdim_v"),
    (re.compile(r"(query|q) dtype\s*[:=]\s*$"), "dtype"),
]


def fact_of(name: str, parts: list, i: int) -> str | None:
    """A placeholder is a fact only where its name or the literal beside it makes the meaning certain."""
    if name in _FACT_BY_NAME:
        return _FACT_BY_NAME[name]
    before = parts[i - 1][1] if i > 0 and parts[i - 1][0] == LIT else ""
    tail = before[-40:].lower()
    if re.search(r"required:\s*$", tail):
        return "smem_required"
    if re.search(r"hardware limit:\s*$", tail):
        return "smem_limit"
    if re.search(r"head ?dim(ension)?( size)?( of)?\s*[:=]?\s*$", tail) and "v" not in name.split("_"):
        return "hdim"
    for rx, fact in _LITERAL_FACTS:
        if rx.search(tail):
            return fact
    return None


_WORD = re.compile(r"[A-Za-z][A-Za-z']+")
GENERIC = {
    "not implemented", "not supported", "unsupported", "invalid", "error", "unreachable", "todo",
    "should not reach here", "unknown", "internal error", "supported", "not currently supported", "not implemented yet",
    "not supported yet",
}
PYTHON_OWN = {"object has no attribute", "has no attribute", "got an unexpected keyword argument", "object is not callable",
              "object is not subscriptable", "object is not iterable", "shape is invalid for input of size"}
"""Python's and PyTorch's own error texts (a `view` of the wrong size), which a library sometimes raises word for
word: any code prints them."""


def skip_reason(parts: list) -> str | None:
    """A message too generic to identify anything would only add noise to matching."""
    lits = " ".join(p[1] for p in parts if p[0] == LIT)
    if not lits.strip():
        return "only placeholders"
    words = _WORD.findall(lits)
    if len(lits.strip()) >= 12 and re.search(r"!=|==|<=|>=| % | > | < ", lits) and words:
        return None  # a printed check such as "query.shape[-1] % 8 != 0" identifies the refusal
    if len(words) < 2 or (len(words) == 2 and len(lits.strip()) < 16):
        return "fewer than 3 literal words"
    core = re.sub(r"^(?:(?:this|that|it) )?(?:is|are|was|were) (?:no longer |not yet |yet |currently )?", "",
                  normalize(lits).strip(" .:!").lower())
    if core in GENERIC:
        return "generic text"  # "{value} is not supported." or "This is no longer supported." names nothing
    if normalize(re.sub(r"[`'\"]", "", lits)).strip(" .:!").lower() in PYTHON_OWN:
        return "Python's or PyTorch's own wording"
    return None


def module_of(path: str) -> str:
    """The dotted name a source file imports as: its path without a source root (python/, src/) or __init__.py."""
    parts = re.sub(r"\.py$", "", path).split("/")
    while parts and parts[0] in ("python", "src"):
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def module_named(parts: list, path: str) -> list:
    """The parts with the module's own name written out, as the file prints it (quoted for !r)."""
    if not any(p[0] == PH and p[1] == MODULE for p in parts):
        return parts
    name = module_of(path)
    return merge_parts([(LIT, repr(name) if p[2] == "r" else name) if p[0] == PH and p[1] == MODULE else p
                        for p in parts])
