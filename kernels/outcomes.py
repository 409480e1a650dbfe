"""Outcome classes of one probe, and how an exception (plus the warnings around it) maps to one of them.

Nothing here imports torch: the classification works on exception types by name and on message text, so the
parent process, the worker and the tests share it.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

from attndoctor.engine.states import Outcome

OK, REJECTED, API_MISMATCH, WRONG_RESULTS = Outcome.OK, Outcome.REJECTED, Outcome.API_MISMATCH, Outcome.WRONG_RESULTS
CRASHED, NOT_INSTALLED, OUT_OF_MEMORY, SKIPPED = (Outcome.CRASHED, Outcome.NOT_INSTALLED, Outcome.OUT_OF_MEMORY,
                                                  Outcome.SKIPPED)

OUTCOMES = tuple(Outcome)
"""ok: ran and matched the float64 reference. rejected: the library refused cleanly (or its API has no way to
express the config: `expressible` false). api-mismatch: the Python call itself broke (a signature or return arity).
wrong-results: ran, but the error against the reference is over the tolerance, or an output stayed unwritten.
crashed: the worker died, a CUDA error, or the probe ran past its timeout. not-installed: the library is missing or
does not import. out-of-memory: the GPU ran out of memory (says nothing about support). skipped: attndoctor's
runner does not build this case yet (paged KV, context parallelism, fp8 outside SDPA)."""

TOLERANCES = {"fp32": 1e-4, "fp16": 2e-2, "bf16": 5e-2, "fp8": 2.5e-1}
"""Largest accepted error, as max|x - ref| / max|ref| over the compared rows, per input dtype; applied to the output
and, when training, to dq, dk and dv. A bf16 output carries about 2^-8 = 0.004 of rounding alone, and flash kernels
round the probabilities to bf16 before the second matmul; backward errors are a few times larger. These bounds sit
well above what sdpa-math in the same dtype shows (recorded beside each observation as `baseline_error`) and well
below what a wrong mask or a misread layout gives (errors of order 1)."""

_SIGNATURE_PATTERNS = (
    r"unexpected keyword argument",
    r"missing \d+ required (positional|keyword-only) argument",
    r"takes (from )?\d+ (to \d+ )?positional arguments? but \d+ (was|were) given",
    r"got multiple values for (keyword )?argument",
    r"incompatible function arguments",
    r"takes at most \d+ positional arguments",
    r"got an unexpected keyword",
    r"required positional argument",
)
_ARITY_PATTERNS = (r"not enough values to unpack", r"too many values to unpack", r"cannot unpack non-iterable")

_CUDA_ERROR_PATTERNS = (
    r"CUDA error", r"illegal memory access", r"illegal instruction", r"misaligned address",
    r"device-side assert", r"unspecified launch failure", r"cudaError", r"CUDA_ERROR_", r"CUBLAS_STATUS_EXECUTION_FAILED",
    r"CUDNN_STATUS_EXECUTION_FAILED", r"CUDNN_STATUS_INTERNAL_ERROR", r"an illegal address", r"launch timed out",
    r"uncorrectable ECC", r"CUDA driver error", r"AcceleratorError",
)
_KERNEL_RESOURCE_PATTERNS = (r"out of resource", r"OutOfResources", r"No valid triton configs",
                             r"NoValidChoicesError")
"""A generated (Triton) kernel that does not fit the GPU's shared memory or registers for this shape: a refusal of
the config (FlexAttention's compiled kernels, per head dim, dtype and arch), never a memory outage, though Inductor
words it "OutOfMemoryError: out of resource"."""
_OOM_PATTERNS = (r"out of memory", r"OutOfMemoryError", r"CUDNN_STATUS_ALLOC_FAILED", r"CUBLAS_STATUS_ALLOC_FAILED")
_NOT_INSTALLED_TYPES = ("ModuleNotFoundError", "ImportError")
_REFUSAL_TYPES = ("RuntimeError", "ValueError", "AssertionError", "NotImplementedError", "cudnnGraphNotSupportedError",
                  "TypeError")
"""Exceptions a library raises when it checks its inputs and refuses (TORCH_CHECK is a RuntimeError; flash-attn 3/4
and TE assert; cudnn-frontend has its own type). A TypeError that names a call signature is an api-mismatch instead."""

_HARNESS_TYPES = ("NameError", "UnboundLocalError", "SyntaxError", "KeyError", "ZeroDivisionError", "RecursionError")

REFUSAL_HINTS = (
    "No available kernel", "No execution plans support the graph", "No valid engine configs",
    "cudnnGraphNotSupportedError", "GRAPH_NOT_SUPPORTED", "FlashAttention only support", "not supported",
    "No dot product attention backend is available", "does not support", "only supports", "Expected", "must be",
    "CUDNN_STATUS_NOT_SUPPORTED", "CUDNN_STATUS_BAD_PARAM",
)


def _matches(patterns: Iterable[str], text: str) -> bool:
    return any(re.search(p, text, flags=re.IGNORECASE) for p in patterns)


def is_cuda_error(type_name: str, message: str) -> bool:
    """A CUDA error leaves the context unusable (sticky): the worker must restart after it."""
    if _matches(_OOM_PATTERNS, f"{type_name}: {message}"):
        return False
    return type_name == "AcceleratorError" or _matches(_CUDA_ERROR_PATTERNS, message)


def is_out_of_memory(type_name: str, message: str) -> bool:
    return type_name == "OutOfMemoryError" or _matches(_OOM_PATTERNS, message)


def exception_names(exc: BaseException) -> tuple[str, ...]:
    """The names of the exception's class and its bases, most specific first (torch.OutOfMemoryError is a
    RuntimeError; cudnnGraphNotSupportedError may derive from RuntimeError)."""
    return tuple(c.__name__ for c in type(exc).__mro__ if c not in (BaseException, object))


def classify(type_names: Sequence[str] | str, message: str, *, library_modules: Sequence[str] = (),
             traceback_modules: Sequence[str] = ()) -> tuple[str, bool]:
    """(outcome, restart_worker) for an exception raised while a runner called its library.

    `type_names` is the exception class name, or the names along its MRO. `traceback_modules` are the modules
    whose frames the traceback went through; an AttributeError raised in the library (not in our runner) or naming
    the library is an api-mismatch.
    """
    names = (type_names,) if isinstance(type_names, str) else tuple(type_names)
    first = names[0] if names else "Exception"
    text = message or ""
    if _matches(_KERNEL_RESOURCE_PATTERNS, f"{' '.join(names)}: {text}"):
        return REJECTED, False
    if is_out_of_memory(first, text) or "OutOfMemoryError" in names:
        return OUT_OF_MEMORY, False
    if is_cuda_error(first, text) or "AcceleratorError" in names:
        return CRASHED, True
    if first in _NOT_INSTALLED_TYPES:
        return NOT_INSTALLED, False
    if first == "TypeError" and _matches(_SIGNATURE_PATTERNS, text):
        return API_MISMATCH, False
    if first == "ValueError" and _matches(_ARITY_PATTERNS, text):
        return API_MISMATCH, False
    if first == "AttributeError":
        in_library = any(m.split(".")[0] in {lm.split(".")[0] for lm in library_modules} for m in traceback_modules)
        names_library = any(re.search(rf"\b{re.escape(lm)}\b", text) for lm in library_modules)
        if names_library or "has no attribute" in text and in_library:
            return API_MISMATCH, False
        return CRASHED, False
    if first in _HARNESS_TYPES:
        return CRASHED, False
    if any(n in _REFUSAL_TYPES for n in names) or _matches([re.escape(h) for h in REFUSAL_HINTS], text):
        return REJECTED, False
    return CRASHED, False


def classify_exception(exc: BaseException, *, library_modules: Sequence[str] = ()) -> tuple[str, bool]:
    """classify() for a live exception, reading the modules of its traceback frames."""
    modules = []
    tb = exc.__traceback__
    while tb is not None:
        modules.append(str(tb.tb_frame.f_globals.get("__name__", "")))
        tb = tb.tb_next
    return classify(exception_names(exc), str(exc), library_modules=library_modules, traceback_modules=modules)


def error_text(exc: BaseException, warnings_text: Sequence[str] = (), limit: int = 1200) -> str:
    """The library's own words: the exception's type and message, then the reason warnings it printed."""
    message = " ".join(str(exc).split())
    head = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    reasons = [w for w in dict.fromkeys(" ".join(w.split()) for w in warnings_text) if w and w not in head]
    if reasons:
        head += " | " + " | ".join(reasons)
    return head if len(head) <= limit else head[: limit - 3] + "..."
