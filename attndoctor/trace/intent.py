"""What the model's attention asks for (softcap, sliding window, sinks), read from the frames of a call."""

from __future__ import annotations

from typing import Any

from .sites import OWN_DIR


def _module_type() -> Any:
    import torch

    return torch.nn.Module


INTENT_KWARGS = {"softcap": "softcap", "sliding_window": "window", "s_aux": "sinks", "sinks": "sinks"}
"""Arguments of transformers' attention functions (attention_interface) that state what the model's attention is."""
INTENT_ATTRS = (("attn_logit_softcapping", "softcap"), ("softcap", "softcap"), ("sliding_window", "window"),
                ("sinks", "sinks"))
"""Attributes of the attention module that state the same (Gemma-2's attn_logit_softcapping, gpt-oss's sinks)."""


def model_intent(frame: Any) -> dict[str, Any]:
    """What the model's attention asks for (softcap, sliding window, sinks), read once per call key from the
    frames between the attention call and the attention module's forward: the attention function's arguments
    first, then the module's attributes and its config's attn_logit_softcapping."""
    asks: dict[str, Any] = {}
    read: dict[str, str] = {}
    Module = _module_type()
    while frame is not None:
        code = frame.f_code
        local = frame.f_locals
        module = local.get("self") if code.co_name == "forward" else None
        if isinstance(module, Module):
            for attr, what in INTENT_ATTRS:
                if what not in read and hasattr(module, attr):
                    asks[what], read[what] = getattr(module, attr), f"{type(module).__name__}.{attr}"
            config = getattr(module, "config", None)
            if "softcap" not in read and getattr(config, "attn_logit_softcapping", None) is not None:
                asks["softcap"] = config.attn_logit_softcapping
                read["softcap"] = f"{type(module).__name__}.config.attn_logit_softcapping"
            break
        if not code.co_filename.startswith(OWN_DIR):
            kwargs = local.get("kwargs")
            for scope, label in ((kwargs if isinstance(kwargs, dict) else {}, "kwargs"), (local, "argument")):
                for name, what in INTENT_KWARGS.items():
                    if what not in read and name in scope and (label == "kwargs" or name in code.co_varnames):
                        asks[what], read[what] = scope[name], f"{code.co_name}({label} {name})"
        frame = frame.f_back
    out: dict[str, Any] = {}
    softcap, window, sinks = asks.get("softcap"), asks.get("window"), asks.get("sinks")
    if isinstance(softcap, (int, float)) and not isinstance(softcap, bool) and softcap > 0:
        out["softcap"] = float(softcap)
    if isinstance(window, int) and not isinstance(window, bool) and window > 0:
        out["window"] = int(window)
    if sinks is not None and hasattr(sinks, "shape"):
        out["sinks"] = True
    if out:
        out["read_from"] = {k: read[k] for k in ("softcap", "window", "sinks") if k in out}
    return out

