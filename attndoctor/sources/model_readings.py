"""What reading a model's config.json gives back: one reading per attention kind, and the whole model's."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..config import AttentionConfig


@dataclass
class KindReading:
    """One attention kind of a model: its config, the layers that run it, and what the config says of them."""

    label: str
    config: AttentionConfig
    layers: tuple[int, ...]
    notes: tuple[str, ...] = ()
    tower: str = ""
    when: str = ""
    """the inputs under which these layers take this shape instead of their usual one ("" = always)"""

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "name": self.config.name, "layers": list(self.layers),
                "layer_count": len(self.layers), "notes": list(self.notes), "tower": self.tower or None,
                "when": self.when or None}


@dataclass
class ModelReading:
    """What a config.json says of every layer: the attention kinds, and the layers no attention backend runs."""

    name: str
    file: str
    model_type: str
    layers: int | None
    kinds: list[KindReading]
    skipped: dict[str, tuple[int, ...]] = field(default_factory=dict)
    skipped_origin: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def configs(self) -> list[AttentionConfig]:
        return [k.config for k in self.kinds]
