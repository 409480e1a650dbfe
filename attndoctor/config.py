"""The attention configuration a user asks about, validated so that every later step can trust it."""

import collections
import functools
import math
from typing import Any, Callable, Iterable, Mapping

from .errors import UsageError
from .fields import (BIASES, BOOL, BOOL_FIELDS, CP_COMMS, DTYPE_ALIASES, DTYPES, FIELDS, FP8_RECIPES, INT,
                     INT_FIELDS, LAYOUTS, LIMITS, LOWEST, MASKS, NUM, NUMBER_FIELDS, QKV_FORMATS, SDPA_FLASH_IMPLS, STR,
                     TABLE, TE_LAYOUTS, WINDOW)

__all__ = ["BIASES", "BOOL_FIELDS", "CP_COMMS", "DTYPES", "DTYPE_ALIASES", "FIELDS", "FP8_RECIPES", "INT_FIELDS",
           "LAYOUTS", "LIMITS", "MASKS", "NUMBER_FIELDS", "QKV_FORMATS", "SDPA_FLASH_IMPLS", "TE_LAYOUTS",
           "AttentionConfig", "make_config", "parse_window", "replace", "with_changes"]

_Fields = collections.namedtuple("_Fields", [*FIELDS, "origin", "source"],  # type: ignore[misc]
                                 defaults=[f.default for f in TABLE] + [None, None])
"""The tuple behind AttentionConfig: the table's fields, then `origin` (where each field came from, for model
configs) and `source` (the file and 1-based line a config was read from); neither of the last two is part of a
config's identity."""


class AttentionConfig(_Fields):
    """One attention call: shapes, dtype, features. A shape or dtype not given is None (unknown)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AttentionConfig) and self[:-2] == other[:-2]

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self[:-2])

    @property
    def qkv_format(self) -> str:
        """The tensor format of q (bshd, sbhd, thd, bhsd) behind a TE layout name.

        Packed variable-length (thd) is a feature and, like every feature not mentioned, off: a config that does
        not name its layout has padded batches of separate tensors, which we read as bshd.
        """
        if self.layout is None:
            return "bshd"
        first = self.layout.removeprefix("paged_kv_").split("_")[0]
        return "".join(ch for ch in first if not ch.isdigit())

    def to_dict(self) -> dict[str, Any]:
        """The config as JSON: field names of DESIGN.md, window as [left, right]."""
        out: dict[str, Any] = {}
        for name in FIELDS:
            value = getattr(self, name)
            out[name] = list(value) if isinstance(value, tuple) else value
        if self.origin:
            out["origin"] = dict(self.origin)
        return out

    def label(self) -> str:
        """A short human description for tables."""
        parts = []
        if self.name:
            parts.append(self.name)
        dims = "?" if self.hdim is None else str(self.hdim)
        if self.hdim_v is not None and self.hdim_v != self.hdim:
            dims += f"/{self.hdim_v}"
        heads = "?" if self.heads is None else str(self.heads)
        if self.kv_heads is not None and self.kv_heads != self.heads:
            heads += f"/{self.kv_heads}kv"
        seq = "?" if self.seqlen_q is None else str(self.seqlen_q)
        if self.seqlen_kv is not None and self.seqlen_kv != self.seqlen_q:
            seq += f"x{self.seqlen_kv}"
        mode = {True: "train", False: "infer", None: "train?"}[self.train]
        desc = f"d={dims} h={heads} s={seq} {self.dtype or 'dtype?'} {mode}"
        if self.batch == 0:
            desc += " batch=0"
        if self.mask != "none":
            desc += f" {self.mask}"
        if self.window != (-1, -1):
            desc += f" window={self.window[0]},{self.window[1]}"
        if self.softcap:
            desc += f" softcap={self.softcap:g}"
        if self.dropout:
            desc += f" dropout={self.dropout:g}"
        if self.bias != "none":
            desc += f" bias={self.bias}"
        if self.cp > 1:
            desc += f" cp={self.cp}({self.cp_comm})"
        if self.qkv_fused:
            desc += " qkv-fused"
        if self.layout:
            desc += f" {self.layout}"
        if self.deterministic:
            desc += " deterministic"
        if self.paged_kv:
            desc += " paged-kv"
        if self.fp8_recipe != "none":
            desc += f" fp8-recipe={self.fp8_recipe}"
        if self.sdpa_flash_impl != "fa2":
            desc += f" sdpa-flash={self.sdpa_flash_impl}"
        if self.sinks:
            desc += " sinks"
        return f"{parts[0]}: {desc}" if parts else desc




KILO_FIELDS = frozenset({"seqlen", "seqlen_q", "seqlen_kv"})
"""Lengths people write as a model card does: 128k is 131072 tokens (k = 1024, as max_position_embeddings counts)."""


def _int(name: str, value: Any) -> int:
    kilo = " (or with k for 1024: 128k)" if name in KILO_FIELDS else ""
    expected = f"{name}: expected a whole number from {LOWEST[name]} to {LIMITS[name]}{kilo}, got {value!r}"
    if isinstance(value, bool) or value is None:
        raise UsageError(expected)
    if isinstance(value, float):
        if not value.is_integer():
            raise UsageError(expected)
        value = int(value)
    if isinstance(value, str):
        text = value.strip()
        scale = 1024 if kilo and text[-1:] in ("k", "K") else 1
        try:
            value = int(text[:-1] if scale > 1 else text) * scale
        except ValueError:
            raise UsageError(expected) from None
    if not isinstance(value, int) or value < LOWEST[name] or value > LIMITS[name]:
        raise UsageError(expected)
    return value


def _bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
        return value.lower() in ("true", "1", "yes")
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise UsageError(f"{name}: expected true or false, got {value!r}")


def _float(name: str, value: Any, low: float, high: float | None, high_open: bool) -> float:
    if isinstance(value, bool):
        raise UsageError(f"{name}: expected a number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{name}: expected a number, got {value!r}") from None
    above = high is not None and (number >= high if high_open else number > high)
    if not math.isfinite(number) or number < low or above:
        span = f"a number in [{low:g}, {high:g})" if high is not None else f"a finite number >= {low:g}"
        raise UsageError(f"{name}: expected {span}, got {value!r}")
    return number


def _choice(name: str, value: Any, choices: Iterable[str], aliases: Mapping[str, str] | None = None,
            dashes: bool = False) -> str:
    if not isinstance(value, str):
        raise UsageError(f"{name}: expected one of {'|'.join(choices)}, got {value!r}")
    key = value.strip().lower().replace("_", "-") if dashes else value.strip().lower()
    if aliases and key in aliases:
        key = aliases[key]
    if key not in choices:
        raise UsageError(f"{name}: expected one of {'|'.join(choices)}, got {value!r}")
    return key


def parse_window(value: Any) -> tuple[int, int]:
    """Accept 'L,R', [L, R] or a single L (a causal window of L tokens to the left); -1 means unbounded."""
    accepted = "window: expected L,R with whole numbers >= -1 (e.g. 4096,0), or none"
    if value is None or (isinstance(value, str) and value.strip().lower() in ("none", "")):
        return (-1, -1)
    if isinstance(value, bool):
        raise UsageError(f"{accepted}, got {value!r}")
    if isinstance(value, int):
        parts: list[Any] = [value, 0]
    elif isinstance(value, str):
        parts = [p.strip() for p in value.split(",")]
        if len(parts) == 1:
            parts.append("0")
    elif isinstance(value, (list, tuple)):
        parts = list(value)
    else:
        raise UsageError(f"{accepted}, got {value!r}")
    if len(parts) != 2:
        raise UsageError(f"{accepted}, got {value!r}")
    out = []
    for part in parts:
        try:
            if isinstance(part, bool) or (isinstance(part, float) and not part.is_integer()):
                raise ValueError
            number = int(part)
        except (TypeError, ValueError):
            raise UsageError(f"{accepted}, got {value!r}") from None
        if number < -1 or number > LIMITS["seqlen_q"]:
            raise UsageError(f"{accepted}, got {value!r}")
        out.append(number)
    return (out[0], out[1])


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise UsageError(f"{name}: expected text, got {value!r}")
    return value


_CHECKS: dict[str, Callable[[Any, Any], Any]] = {
    INT: lambda f, v: _int(f.name, v),
    BOOL: lambda f, v: _bool(f.name, v),
    STR: lambda f, v: _choice(f.name, v, f.choices, f.aliases, f.dashes) if f.choices else _text(f.name, v),
    WINDOW: lambda f, v: parse_window(v),
    NUM: lambda f, v: _float(f.name, v, *f.limit),
}
_CHECK_ORDER = sorted(TABLE, key=lambda f: (f.type == STR and not f.choices,
                                            (INT, BOOL, STR, WINDOW, NUM).index(f.type)))
"""Fields are checked whole numbers first, then switches, names from a list, the window, numbers, free text: with
several bad values, the first one named is the same whatever order the user wrote them in."""


def make_config(values: Mapping[str, Any], *, where: str = "", typed: bool = False) -> AttentionConfig:
    """Build a validated config from field names of DESIGN.md; `seqlen` sets both lengths.

    `typed` values come from a JSON or TOML file, where a number written as text is a mistake (flags are all text).
    """
    prefix = f"{where}: " if where else ""
    try:
        if typed:
            _check_file_values(values)
        return _make(values)
    except UsageError as exc:
        raise UsageError(f"{prefix}{exc}") from None


def _check_file_values(values: Any) -> None:
    """What a file may not say although flags and internal callers may: numbers as text, seqlen beside another."""
    if not isinstance(values, Mapping):
        return
    for key, value in values.items():
        kind = NUMBER_FIELDS.get(str(key).replace("-", "_"))
        if kind and isinstance(value, str):
            raise UsageError(f"{key}: expected {kind}, got the text {value!r}; write it without quotes")
    seqlen = values.get("seqlen")
    for one in ("seqlen_q", "seqlen_kv"):
        if seqlen is not None and values.get(one) is not None and values[one] != seqlen:
            raise UsageError(f"seqlen: {seqlen!r} contradicts {one} {values[one]!r}; give seqlen for both lengths, "
                             "or seqlen_q and seqlen_kv")


def _make(values: Mapping[str, Any]) -> AttentionConfig:
    if not isinstance(values, Mapping):
        raise UsageError(f"a config must be an object of fields, got {type(values).__name__}")
    data = {k.replace("-", "_"): v for k, v in values.items() if v is not None}
    if len(data) < sum(v is not None for v in values.values()):
        a, b = next((a, b) for a in values for b in values if a < b and a.replace("-", "_") == b.replace("-", "_"))
        raise UsageError(f"{a!r} and {b!r} name the same field; give one")
    if "seqlen" in data:
        seqlen = data.pop("seqlen")
        data.setdefault("seqlen_q", seqlen)
        data.setdefault("seqlen_kv", seqlen)
    if "causal" in data:
        if _bool("causal", data.pop("causal")):
            if "mask" in data and data["mask"] != "causal":
                raise UsageError(f"causal: contradicts mask {data['mask']!r} (causal is short for mask causal); "
                                 "give one of them")
            data["mask"] = "causal"
    known = set(FIELDS) | {"origin"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise UsageError(f"unknown config field {unknown[0]!r}; accepted: {', '.join(FIELDS)}, seqlen (both lengths), "
                         "causal (mask = causal); a dash may stand for an underscore")
    out = {f.name: _CHECKS[f.type](f, data[f.name]) for f in _CHECK_ORDER if f.name in data}
    if "origin" in data and isinstance(data["origin"], Mapping):
        out["origin"] = {str(k): str(v) for k, v in data["origin"].items()}
    if out.get("layout") == "thd":
        # packed sequences carry their boundaries in cu_seqlens: a THD call is a padding-mask call (TransformerEngine
        # asserts a padding mask type for qkv_format=thd), so a THD config that names no mask has a padding one
        out.setdefault("mask", "padding")
    out.setdefault("kv_heads", out.get("heads"))
    out.setdefault("hdim_v", out.get("hdim"))
    out.setdefault("seqlen_kv", out.get("seqlen_q"))
    heads, kv_heads = out.get("heads"), out.get("kv_heads")
    if heads is not None and kv_heads is not None and heads % kv_heads:
        raise UsageError(f"kv_heads: heads ({heads}) must be a multiple of kv_heads ({kv_heads})")
    if heads is None and "kv_heads" in data:
        raise UsageError("kv_heads: give heads too (kv_heads must divide heads)")
    return AttentionConfig(**out)


def with_changes(config: AttentionConfig, changes: Mapping[str, Any]) -> AttentionConfig:
    """A copy with a few fields changed, each validated, and the cross-field rules checked again (fast path)."""
    try:
        values = _validated(tuple(changes.items()))
    except TypeError:  # an unhashable value: validate it without the cache
        values = _validated.__wrapped__(tuple(changes.items()))
    out = config._replace(**values)
    if out.heads is not None and out.kv_heads is not None and out.heads % out.kv_heads:
        raise UsageError(f"kv_heads: heads ({out.heads}) must be a multiple of kv_heads ({out.kv_heads})")
    return out


@functools.lru_cache(maxsize=4096)
def _validated(changes: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    """The changed fields, validated on their own (fix trials try the same few changes on config after config)."""
    probe = _make(dict(changes))
    return {k: getattr(probe, k) for k, _ in changes}


def replace(config: AttentionConfig, **changes: Any) -> AttentionConfig:
    """A copy with some fields changed, validated again."""
    values = config.to_dict()
    values.update(changes)
    return make_config(values)
