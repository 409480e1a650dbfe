"""The closed set of names a condition may read, their types, and the functions it may call."""

from ..config import BIASES, CP_COMMS, DTYPES, FP8_RECIPES, LAYOUTS, MASKS, QKV_FORMATS, SDPA_FLASH_IMPLS
from ..environment import PACKAGES

INT, NUM, STR, BOOL, VER = "int", "number", "text", "bool", "version"

VARIABLES: dict[str, tuple[str, tuple[str, ...] | None, str]] = {
    # config
    "batch": (INT, None, "batch size"),
    "heads": (INT, None, "query heads"),
    "kv_heads": (INT, None, "key/value heads"),
    "seqlen_q": (INT, None, "query sequence length"),
    "seqlen_kv": (INT, None, "key/value sequence length"),
    "hdim": (INT, None, "Q/K head dim"),
    "hdim_v": (INT, None, "V head dim"),
    "cp": (INT, None, "context-parallel size"),
    "window_left": (INT, None, "sliding window, left (-1 = unbounded)"),
    "window_right": (INT, None, "sliding window, right (-1 = unbounded)"),
    "dropout": (NUM, None, "dropout probability"),
    "softcap": (NUM, None, "logit softcap (0 = off)"),
    "dtype": (STR, DTYPES, "data type"),
    "mask": (STR, MASKS, "mask kind"),
    "bias": (STR, BIASES, "bias kind"),
    "layout": (STR, LAYOUTS, "q/k/v layout"),
    "qkv_format": (STR, QKV_FORMATS, "q tensor format"),
    "cp_comm": (STR, CP_COMMS, "context-parallel communication"),
    "train": (BOOL, None, "forward and backward"),
    "deterministic": (BOOL, None, "deterministic algorithms"),
    "paged_kv": (BOOL, None, "paged KV cache"),
    "qkv_fused": (BOOL, None, "q, k, v are views into one fused buffer"),
    "fp8_recipe": (STR, FP8_RECIPES, "TransformerEngine FP8 recipe"),
    "sdpa_flash_impl": (STR, SDPA_FLASH_IMPLS, "FlashAttention behind SDPA's flash backend"),
    "sinks": (BOOL, None, "learnable per-head attention sink logits"),
    # environment
    "sm": (INT, None, "GPU compute capability (90 = Hopper)"),
    "gpu": (STR, None, "GPU name"),
    "cudnn_compiled": (VER, None, "cuDNN version torch was compiled against"),
    "flash_attn_4_beta": (INT, None, "which flash-attn 4 beta (4.0.0b27 is 27): versions read every beta as 4.0.0"),
    "flash_attn_local": (BOOL, None, "the flash-attn version carries a local label (2.8.3+cu128): versions drop it"),
    **{p: (VER, None, f"{p} version") for p in PACKAGES},
}
CONFIG_VARIABLES = frozenset((
    "batch", "heads", "kv_heads", "seqlen_q", "seqlen_kv", "hdim", "hdim_v", "cp", "window_left", "window_right",
    "dropout", "softcap", "dtype", "mask", "bias", "layout", "qkv_format", "cp_comm", "train", "deterministic",
    "paged_kv", "qkv_fused", "fp8_recipe", "sdpa_flash_impl", "sinks",
))

FUNCTIONS: dict[str, tuple[tuple[str, ...], str, str]] = {
    # name: (argument types, result type, doc); "lit" = a text literal argument
    "env": (("lit",), STR, "an environment variable's value, '' when unset"),
    "api": (("lit",), BOOL, "an API fact read from a package's source"),
    "installed": (("lit",), BOOL, "whether a package is installed"),
    "max": ((NUM, NUM), NUM, "the larger of two numbers"),
    "min": ((NUM, NUM), NUM, "the smaller of two numbers"),
}
