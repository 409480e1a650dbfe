"""A multimodal model's vision tower, and the mask its image tokens give the language model's layers."""

from __future__ import annotations

from typing import Any, Mapping

from ..config import make_config
from .model_fields import _heads_and_dims
from .model_keys import _has_heads, _key_line, _layers, _Source
from .model_readings import KindReading


def _vision_towers(file: str, doc: Mapping[str, Any], text: str, name: str, common: Mapping[str, Any],
                   origin: Mapping[str, str]) -> list[KindReading]:
    """A vision encoder's self-attention: bidirectional over the patches of one image."""
    sub = doc.get("vision_config")
    if not isinstance(sub, dict):
        return []
    src = _Source(file, sub, prefix="vision_config.", outer=doc, model_type=str(sub.get("model_type") or "").lower())
    if not _has_heads(src) or not (src.has("head_dim") or src.has("hidden_size")):
        return []
    values: dict[str, Any] = {}
    vorigin: dict[str, str] = {}
    _heads_and_dims(src, values, vorigin)
    if "dtype" in common:
        values["dtype"], vorigin["dtype"] = common["dtype"], origin["dtype"]
    values["mask"], vorigin["mask"] = "none", "vision_config: an encoder over the patches of one image, no mask"
    vorigin["window"] = "vision_config: every patch attends to every patch, no window"
    image, patch = src.data.get("image_size"), src.data.get("patch_size")
    if isinstance(image, int) and isinstance(patch, int) and patch > 0 and image >= patch:
        tokens = (image // patch) ** 2
        values["seqlen"] = tokens
        vorigin["seqlen_q"] = vorigin["seqlen_kv"] = (
            f"(vision_config.image_size / vision_config.patch_size)^2 = ({image} / {patch})^2 patches")
    else:
        vorigin["seqlen_q"] = vorigin["seqlen_kv"] = "vision_config gives no image_size and patch_size: unknown"
    values["name"] = f"{name} vision tower"
    values["origin"] = vorigin
    config = make_config(values, where=file)._replace(source=(file, _key_line(text, "vision_config") or 1))
    layers = _layers(src)
    if layers is None and src.data.get("depth") is not None:
        # Qwen2-VL, Qwen3-VL and Qwen3.5 vision configs count their blocks in `depth`
        layers = src.count("depth", src.data["depth"])
    return [KindReading("vision tower", config, tuple(range(layers or 0)), (), tower="vision")]


IMAGE_PROMPTS = "the input holds image tokens (training, and the prefill of generation)"


def _image_prompt_kinds(file: str, doc: Mapping[str, Any], text: str, src: _Source,
                        kinds: list[KindReading]) -> list[KindReading]:
    """Gemma 3 and Gemma 4 let an image's tokens see the whole image: a mask tensor no causal or window flag states."""
    top = str(doc.get("model_type") or "").lower()
    p = src.prefix
    if top == "gemma3" and isinstance(doc.get("vision_config"), dict):
        picked, key = kinds, "vision_config"
        why = ("model_type gemma3 with a vision_config: on a prompt with image tokens every layer takes a mask "
               "tensor, OR(causal, same image) on the global layers and AND(window, OR(causal, same image)) on the "
               "sliding ones (transformers 5.24.0 modeling_gemma3.py create_masks_for_vision_model)")
    elif top == "gemma4" and src.data.get("use_bidirectional_attention") == "vision":
        picked, key = [k for k in kinds if k.config.window != (-1, -1)], f"{p}use_bidirectional_attention"
        why = (f'{p}use_bidirectional_attention="vision": on a prompt with image tokens the sliding layers take a '
               f"mask tensor, AND(window, OR(causal, same image)); the global layers stay causal (transformers "
               f"5.24.0 modeling_gemma4.py create_masks_for_vision_model)")
    else:
        return []
    out = []
    for kind in picked:
        config = kind.config
        origin = {**config.origin, "mask": why}
        variant = config._replace(name=f"{config.name} with image tokens", mask="arbitrary", origin=origin,
                                  source=(file, _key_line(text, key) or 1))
        notes = ("transformers 5.24.0 sets _supports_flash_attn = False on the multimodal classes for this mask "
                 "(\"Flash Attention drops the bidirectional mask over image tokens\"; 5.23.0 did not); text-only "
                 "inputs and decode steps keep the causal mask above",)
        out.append(KindReading(f"{kind.label} with image tokens", variant, kind.layers, notes, when=IMAGE_PROMPTS))
    return out
