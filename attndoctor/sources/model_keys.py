"""Where a config.json keeps each attention setting, nested or defaulted, so every value carries its key."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .._json import loads_json
from ..errors import UsageError

HEAD_COUNT_KEYS = ("num_attention_heads", "n_head", "num_heads", "n_heads")
HIDDEN_KEYS = ("hidden_size", "n_embd", "d_model", "dim")
HEAD_DIM_KEYS = ("head_dim", "d_kv", "kv_channels")
KV_HEAD_KEYS = ("num_key_value_heads", "n_head_kv", "num_kv_heads", "n_kv_heads")
SEQLEN_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "max_sequence_length")
DTYPE_KEYS = ("torch_dtype", "dtype")
# Where multimodal configs keep their language model; searched in this order, one level or two deep.
NESTED_KEYS = ("text_config", "llm_config", "language_config", "language_model_config", "thinker_config")

# Sub-configs of composite models are saved as a diff against their class defaults (transformers'
# `to_diff_dict`), so Gemma-3-4B's text_config omits its head count and head dim. These are the class defaults
# of the language configs such models nest (transformers/models/<type>/configuration_<type>.py); they fill
# only nested configs, never a top-level one, which transformers always writes out in full.
NESTED_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": {"num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "sliding_window": 4096,
                    "sliding_window_pattern": 6, "max_position_embeddings": 131072},
    "llama": {"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 2048},
    "mistral": {"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
                "sliding_window": 4096, "max_position_embeddings": 4096 * 32},
}

# The language model type a composite config implies when its text_config names none.
NESTED_TYPE_OF = {"gemma3": "gemma3_text", "llava": "llama", "llava_next": "llama", "mllama": "mllama_text_model"}


@dataclass
class _Source:
    """One config dict (the top level or a nested language config) and how to read it."""

    file: str
    data: Mapping[str, Any]
    prefix: str = ""
    outer: Mapping[str, Any] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    model_type: str = ""

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None or key in self.defaults

    def get(self, key: str) -> tuple[Any, str]:
        """The value of a key (None when absent or null) and where it came from."""
        value = self.data.get(key)
        if value is not None:
            return value, self.prefix + key
        if key in self.defaults:
            return self.defaults[key], f"{self.prefix}{key} absent: {self.model_type} default {self.defaults[key]}"
        return None, self.prefix + key

    def first(self, keys: tuple[str, ...]) -> tuple[Any, str]:
        for key in keys:
            value, origin = self.get(key)
            if value is not None:
                return value, origin
        return None, ""

    def fail(self, message: str) -> UsageError:
        return UsageError(f"{self.file}: {message}")

    def key_of(self, where: str) -> str:
        """The full key path behind a bare key or an origin string ("text_config.head_dim absent: ...")."""
        key = where.split(" ")[0]
        return key if key.startswith(self.prefix) else self.prefix + key

    def count(self, where: str, value: Any) -> int:
        """A positive whole number, or a one-line error naming the key."""
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise self.fail(f"{self.key_of(where)}: expected a whole number >= 1, got {value!r}")
        return value

    def flag(self, where: str, value: Any) -> bool:
        if isinstance(value, bool):
            return value
        raise self.fail(f"{self.key_of(where)}: expected true or false, got {value!r}")


HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")
"""A Hugging Face model id (owner/name), as people pass it to from_pretrained."""


def hub_cached_config(model_id: str) -> Path | None:
    """The config.json of a model id in the local Hugging Face cache (HF_HUB_CACHE, HF_HOME/hub or ~/.cache), from
    the snapshot refs/main names, else the newest snapshot that has one; None when the model was never downloaded."""
    home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    repo = Path(os.environ.get("HF_HUB_CACHE") or os.path.join(home, "hub")) / ("models--" + model_id.replace("/", "--"))
    try:
        main = (repo / "refs" / "main").read_text(encoding="utf-8").strip()
        if main and (repo / "snapshots" / main / "config.json").is_file():
            return repo / "snapshots" / main / "config.json"
        found = [c for c in (repo / "snapshots").glob("*/config.json") if c.is_file()]
    except OSError:
        found = []
    return max(found, key=lambda c: c.stat().st_mtime) if found else None


def _load(path: str | Path) -> tuple[str, dict[str, Any], str]:
    from ..inputs import EITHER, describe, locate, read_text

    accepted = "expected a Hugging Face config.json or a model folder holding one"
    if not os.path.lexists(path) and HUB_ID.fullmatch(str(path)):
        cached = hub_cached_config(str(path))
        if cached is None:
            name = str(path).split("/")[1]
            raise UsageError(f"{path}: no such file or folder, and no download of this model id in the Hugging Face "
                             f"cache; fetch its config first: huggingface-cli download {path} config.json "
                             f"--local-dir {name}, then --model {name}")
        path = cached
    p = Path(path)
    if stat.S_ISDIR(locate(path, describe(path, "file or folder", accepted), EITHER).st_mode):
        p = p / "config.json"
        if not os.path.lexists(p):
            raise UsageError(f"{path}: folder has no config.json; {accepted}")
    file = str(p)
    text = read_text(p, describe(p, "model config", accepted))
    if not text.strip():
        raise UsageError(f"{file}: empty file; {accepted}")
    doc = loads_json(text, file, accepted)
    if not isinstance(doc, dict):
        raise UsageError(f"{file}: expected a JSON object of model settings, got a JSON {_json_kind(doc)}")
    return file, doc, text


def _json_kind(value: Any) -> str:
    return {list: "list", str: "string", bool: "boolean", int: "number", float: "number"}.get(type(value), "null")


def _language_config(file: str, doc: dict[str, Any]) -> _Source:
    """The top level, or the nested language model config of a multimodal model."""
    top_type = str(doc.get("model_type") or "").lower()
    top = _Source(file, doc, model_type=top_type)
    if _has_heads(top):
        return top
    for key in NESTED_KEYS:
        sub = doc.get(key)
        if not isinstance(sub, dict):
            continue
        for inner_key in ("",) + NESTED_KEYS:
            inner = sub if not inner_key else sub.get(inner_key)
            if not isinstance(inner, dict):
                continue
            prefix = f"{key}." + (f"{inner_key}." if inner_key else "")
            sub_type = str(inner.get("model_type") or NESTED_TYPE_OF.get(top_type, "")).lower()
            src = _Source(file, inner, prefix=prefix, outer=doc, defaults=NESTED_DEFAULTS.get(sub_type, {}),
                          model_type=sub_type)
            if _has_heads(src):
                return src
    return top


def _has_heads(src: _Source) -> bool:
    return any(src.has(k) for k in HEAD_COUNT_KEYS)


def _model_name(path: str | Path, file: str, doc: Mapping[str, Any], src: _Source) -> str:
    named = doc.get("_name_or_path")
    if isinstance(named, str) and named.strip().strip("/\\"):
        return re.split(r"[/\\]", named.strip().rstrip("/\\"))[-1]
    p = Path(file).resolve()
    folder = p.parent
    # The Hugging Face cache: models--org--name/snapshots/<commit>/config.json
    if folder.parent.name == "snapshots" and folder.parent.parent.name.startswith("models--"):
        return folder.parent.parent.name.split("--")[-1]
    if p.name != "config.json":
        return p.stem
    if folder.name:
        return folder.name
    return src.model_type or str(doc.get("model_type") or "model")


def _layers(src: _Source) -> int | None:
    value, key = src.first(("num_hidden_layers", "n_layer", "num_layers", "n_layers"))
    return None if value is None else src.count(key, value)


def _key_line(text: str, origin: str) -> int:
    """The line of the key an origin starts with ("text_config.sliding_window (1024, 0)"), 0 when it names none."""
    path = re.match(r"[A-Za-z_][\w.]*", origin)
    line, at = 0, 0
    for key in path.group(0).split(".") if path else ():
        found = re.compile(rf'"{re.escape(key)}"\s*:').search(text, at)
        if not found:
            break
        at = found.end()
        line = text.count("\n", 0, found.start()) + 1
    return line
