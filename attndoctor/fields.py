"""The config vocabulary, one row per field: the config type, its validation, the rule language's names and the CLI
flags are all built from this table, so a field is added in one place."""

from typing import Any, Mapping, NamedTuple

INT, NUM, STR, BOOL = "int", "number", "text", "bool"
"""Value types, spelled as the rule language spells them."""
WINDOW = "window"
"""The sliding window (L, R): a field of its own, read by rules as window_left and window_right."""

DTYPES = ("bf16", "fp16", "fp32", "fp8")
DTYPE_ALIASES = {
    "bfloat16": "bf16", "torch.bfloat16": "bf16",
    "float16": "fp16", "half": "fp16", "torch.float16": "fp16",
    "float32": "fp32", "float": "fp32", "torch.float32": "fp32",
    "float8": "fp8", "e4m3": "fp8", "float8_e4m3fn": "fp8", "fp8_e4m3": "fp8",
}
MASKS = ("none", "causal", "causal-bottom-right", "padding", "padding-causal",
         "padding-causal-bottom-right", "arbitrary")
BIASES = ("none", "alibi", "post-scale")
QKV_FORMATS = ("bshd", "sbhd", "thd", "bhsd")
# TransformerEngine's qkv layouts (transformer_engine/common/include/transformer_engine/fused_attn.h).
TE_LAYOUTS = (
    "sb3hd", "sbh3d", "sbhd_sb2hd", "sbhd_sbh2d", "sbhd_sbhd_sbhd",
    "bs3hd", "bsh3d", "bshd_bs2hd", "bshd_bsh2d", "bshd_bshd_bshd",
    "t3hd", "th3d", "thd_t2hd", "thd_th2d", "thd_thd_thd",
    "sbhd_bshd_bshd", "bshd_sbhd_sbhd", "thd_bshd_bshd", "thd_sbhd_sbhd",
    "paged_kv_bshd_bshd_bshd", "paged_kv_bshd_sbhd_sbhd", "paged_kv_sbhd_bshd_bshd",
    "paged_kv_sbhd_sbhd_sbhd", "paged_kv_thd_bshd_bshd", "paged_kv_thd_sbhd_sbhd",
    "bhsd_bhsd_bhsd",
)
LAYOUTS = QKV_FORMATS + TE_LAYOUTS
CP_COMMS = ("p2p", "a2a", "all_gather", "a2a+p2p")
FP8_RECIPES = ("none", "delayed", "current", "mxfp8", "block", "nvfp4")
"""TransformerEngine's FP8 recipe for attention (fp8_autocast with fp8_dpa=True): none, DelayedScaling,
Float8CurrentScaling, MXFP8BlockScaling, Float8BlockScaling, NVFP4BlockScaling."""
SDPA_FLASH_IMPLS = ("fa2", "fa3", "fa4")
"""Which FlashAttention SDPA's flash backend runs: fa2 (built into torch) unless
torch.nn.attention.activate_flash_attention_impl('FA3'/'FA4') replaced it."""


class Field(NamedTuple):
    """One config field. `limit` is the largest whole number (INT) or (low, high, high is open) (NUM); `help` may
    hold {choices}; a field without `flag` has no CLI option; `fact` says the rule language reads it by name."""

    name: str
    type: str
    default: Any
    doc: str
    help: str = ""
    flag: str = ""
    metavar: str = ""
    choices: tuple[str, ...] | None = None
    aliases: Mapping[str, str] | None = None
    limit: Any = None
    fact: bool = True
    dashes: bool = False
    """Whether '_' in a value reads as '-' (mask and bias names are written both ways upstream)."""
    off_flag: str = ""
    off_help: str = ""
    """A boolean field with two flags (--train/--infer): the one that sets it false, and its help."""
    low: int = 1
    """The smallest whole number an INT field takes (0 for batch: DDP, MoE and dataloader tails pass empty batches)."""

    @property
    def help_text(self) -> str:
        return self.help.format(choices=" | ".join(self.choices or ()))


_N = 1 << 31
TABLE: tuple[Field, ...] = (
    Field("batch", INT, None, "batch size", "Batch size (0: an empty batch).", "--batch", "N", limit=10_000_000, low=0),
    Field("heads", INT, None, "query heads", "Query heads.", "--heads", "N", limit=65_536),
    Field("kv_heads", INT, None, "key/value heads", "Key/value heads (GQA/MQA); defaults to --heads.", "--kv-heads",
          "N", limit=65_536),
    Field("seqlen_q", INT, None, "query sequence length", "Query sequence length (k = 1024: 128k).", "--seqlen-q", "N", limit=_N),
    Field("seqlen_kv", INT, None, "key/value sequence length",
          "Key/value sequence length (k = 1024); defaults to the query length.", "--seqlen-kv", "N", limit=_N),
    Field("hdim", INT, None, "Q/K head dim", "Q/K head dim.", "--hdim", "N", limit=16_384),
    Field("hdim_v", INT, None, "V head dim", "V head dim; defaults to --hdim.", "--hdim-v", "N", limit=16_384),
    Field("dtype", STR, None, "data type", "{choices}.", "--dtype", "NAME", DTYPES, DTYPE_ALIASES),
    Field("train", BOOL, None, "forward and backward", "Forward and backward (training).", "--train",
          off_flag="--infer", off_help="Forward only (inference)."),
    Field("mask", STR, "none", "mask kind", "{choices}. With --layout thd it defaults to padding.", "--mask",
          "NAME", MASKS,
          {"no-mask": "none", "bottom-right": "causal-bottom-right"}, dashes=True),
    Field("window", WINDOW, (-1, -1), "sliding window (left, right)",
          "Sliding window L,R (-1 = unbounded), e.g. 4096,0.", "--window", "L,R", fact=False),
    Field("dropout", NUM, 0.0, "dropout probability", "Dropout probability in [0, 1).", "--dropout", "P",
          limit=(0.0, 1.0, True)),
    Field("softcap", NUM, 0.0, "logit softcap (0 = off)", "Logit softcap (Gemma-2: 50).", "--softcap", "X",
          limit=(0.0, None, False)),
    Field("bias", STR, "none", "bias kind", "{choices}.", "--bias", "NAME", BIASES,
          {"no-bias": "none", "post-scale-bias": "post-scale"}, dashes=True),
    Field("layout", STR, None, "q/k/v layout", "bshd | sbhd | thd | bhsd, or a TransformerEngine qkv layout.",
          "--layout", "NAME", LAYOUTS),
    Field("cp", INT, 1, "context-parallel size", "Context-parallel size.", "--cp", "N", limit=65_536),
    Field("cp_comm", STR, "p2p", "context-parallel communication", "{choices}.", "--cp-comm", "NAME", CP_COMMS),
    Field("deterministic", BOOL, False, "deterministic algorithms", "Deterministic algorithms requested.",
          "--deterministic"),
    Field("paged_kv", BOOL, False, "paged KV cache", "Paged KV cache.", "--paged-kv"),
    Field("qkv_fused", BOOL, False, "q, k, v are views into one fused buffer",
          "q, k, v are views into one fused buffer (TE fuse_qkv_params).", "--qkv-fused"),
    Field("fp8_recipe", STR, "none", "TransformerEngine FP8 recipe", "TransformerEngine FP8 recipe: {choices}.",
          "--fp8-recipe", "NAME", FP8_RECIPES,
          {"fp8-delayed": "delayed", "current-scaling": "current", "block-scaling": "block"}),
    Field("sdpa_flash_impl", STR, "fa2", "FlashAttention behind SDPA's flash backend",
          "FlashAttention behind SDPA's flash backend: fa2 (torch's own) | fa3 | fa4 "
          "(torch.nn.attention.activate_flash_attention_impl).", "--sdpa-flash-impl", "NAME", SDPA_FLASH_IMPLS),
    Field("sinks", BOOL, False, "learnable per-head attention sink logits",
          "Learnable per-head attention sink logits (gpt-oss).", "--sinks"),
    Field("name", STR, "", "the config's name in reports", fact=False),
)
"""Every config field in the order of AttentionConfig, its JSON and its --help."""

BY_NAME = {f.name: f for f in TABLE}


class Shorthand(NamedTuple):
    """A key that is no field but sets fields: `seqlen` sets both lengths, `causal` sets the mask."""

    name: str
    type: str
    help: str
    flag: str
    before: str
    """The field whose CLI option it is listed before."""


SHORTHANDS = (
    Shorthand("seqlen", INT, "Sequence length of queries and keys/values (k = 1024: 128k).", "--seqlen", "seqlen_q"),
    Shorthand("causal", BOOL, "Short for --mask causal (top-left, like PyTorch's is_causal).", "--causal", ""),
)

DERIVED_FACTS: tuple[tuple[str, str, tuple[str, ...] | None, str], ...] = (
    ("window_left", INT, None, "sliding window, left (-1 = unbounded)"),
    ("window_right", INT, None, "sliding window, right (-1 = unbounded)"),
    ("qkv_format", STR, QKV_FORMATS, "q tensor format"),
)
"""Names the rules read that a config computes from its fields (the window's ends, the layout's q format)."""

FIELDS = tuple(f.name for f in TABLE)
LIMITS = {f.name: f.limit for f in TABLE if f.type == INT}
LOWEST = {f.name: f.low for f in TABLE if f.type == INT}
INT_FIELDS = tuple(f.name for f in TABLE if f.type == INT)
BOOL_FIELDS = tuple(f.name for f in TABLE if f.type == BOOL)
NUMBER_FIELDS = {**{s.name: "a whole number" for s in TABLE + SHORTHANDS if s.type == INT},  # type: ignore[operator]
                 **{f.name: "a number" for f in TABLE if f.type == NUM},
                 **{s.name: "true or false" for s in TABLE + SHORTHANDS if s.type == BOOL}}  # type: ignore[operator]
"""What a file must write as a number or a boolean, not as text."""
FACTS = tuple(f.name for f in TABLE if f.fact)
"""The fields the rules read by name; with DERIVED_FACTS, every config name of the rule language."""
