"""The rule base's data model: effects and fix kinds, a rule, a backend, a selection order, a horizon, and the
RuleBase that holds them (rules.py loads and validates them from TOML)."""

from functools import lru_cache
from typing import Any, Iterable, Mapping, NamedTuple

from packaging.version import Version

from ..environment import PACKAGE_LABELS, install_hint, parse_version
from ..errors import UsageError
from . import expr
from .ranges import VersionRange
from .states import BLOCKING_EFFECTS, Effect, Evidence, Surface

EFFECTS = tuple(Effect)
"""Finding effects, most severe first for status; `--fail-on` thresholds use this order reversed."""
BLOCKING = BLOCKING_EFFECTS
SURFACES = tuple(Surface)
"""How a blocking finding shows: the framework refuses and falls back (dispatch), the call fails (runtime), or never."""
DEFAULT_SURFACE = {Effect.UNSUPPORTED: Surface.DISPATCH, Effect.API_MISMATCH: Surface.RUNTIME,
                   Effect.WRONG_RESULTS: Surface.SILENT, Effect.SLOW: Surface.DISPATCH, Effect.INFO: Surface.DISPATCH}
EVIDENCE = tuple(Evidence)
FIX_KINDS = ("upgrade", "downgrade", "change", "pad", "set", "unset")
FIX_RANK = {"set": 0, "unset": 0, "upgrade": 1, "change": 2, "pad": 2, "downgrade": 3}
"""Smaller is cheaper: an environment switch, then an upgrade (the remedy upstream intends), then a config
workaround (padding, a layout change), then a downgrade."""
CHANGEABLE = tuple(v for v in expr.CONFIG_VARIABLES if v not in ("qkv_format",))
PADDABLE = ("hdim", "hdim_v", "seqlen_q", "seqlen_kv")
"""Sizes a tensor can be zero-padded along: the fields a `pad` fix may grow."""
ID_PATTERN = r"^[A-Z][A-Z0-9]*(-[A-Z0-9]+)+$"
ENV_VAR_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
"""Patterns as text: `re` compiles them on first use, which only a rule file that is not in the cache needs."""
RULE_KEYS = {"id", "title", "backends", "effect", "surfaces", "when", "condition", "message", "symptom", "fixes",
             "references", "examples", "evidence", "notes", "data", "fixed_in", "workaround"}
DATA_CONDITIONS: dict[str, str] = {
    "low-lse": "a query row's logsumexp falls below about -88.7 (every logit of the row strongly negative)",
    "dominant-key": "one key dominates every row (massive activations, attention sinks)",
    "masked-rows": "a query row's mask hides every key (left padding of batched prompts, empty key ranges)",
    "fp16-large": "fp16 values near the top of its range",
    "grad-out-strides": "the output gradient reaches backward as a non-contiguous view",
    "strided-inputs": "q, k or v is passed as a non-contiguous slice",
    "padded-tail": "the packed q/k/v buffers hold more tokens than cu_seqlens[-1] (static-shape padding)",
    "empty-sequences": "a packed (varlen) batch holds sequences of length 0 (two equal neighbours in cu_seqlens)",
    "fp32-mask": "a float32 attn_mask with fp16/bf16 q, k, v",
    "mask-grad": "the attn_mask requires grad while q, k and v do not",
    "graph-replay": "the call is captured in a CUDA graph and replayed",
    "learnable-sinks": "the attention has learnable sinks (softmax_type='learnable')",
    "mxfp8": "the FP8 recipe is MXFP8 block scaling",
    "bf16-output": "the FP8 attention writes a bf16 output",
    "memory-reuse": "the caching allocator reuses freed scratch memory while the kernel still reads it",
    "timing": "the outcome depends on stream timing (a race)",
    "padding-garbage": "padded positions hold non-zero values",
    "nonfinite-unused-kv": "K/V positions the call does not attend to (a KV cache's slots past a sequence's length, padding "
                           "after a packed sequence) hold NaN or Inf (a cache made with torch.empty, memory shared with "
                           "other state)",
    "blockmask-length": "a FlexAttention BlockMask built for longer sequences than the call's q/k/v is reused",
}
"""Facts about the tensors' values or the call's surroundings that a config cannot state: an advisory that needs one
stays open ("at risk if ..."), and `verify --stress` or `trace --numerics` can decide it."""


class Fix(NamedTuple):
    """A structured fix: upgrade/downgrade a package, change or pad a config field, set/unset an environment variable.

    `pad` is a change that may only grow a size (zero-padding a head dim or a sequence): the fix search drops a pad
    that would keep or lower the value, so "pad" never names a cut.
    """

    kind: str
    target: str
    to: Any = None
    note: str = ""
    value_node: expr.Node | None = None
    """The expression `to` was computed from (seqlen_q + 64 - seqlen_q % 64); not part of the fix's identity."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Fix) and self[:4] == other[:4]

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self[:4])

    def describe(self) -> str:
        """One line a user can act on."""
        if self.kind in ("upgrade", "downgrade"):
            label = PACKAGE_LABELS.get(self.target, self.target)
            bound = f"{self.to} or later" if self.kind == "upgrade" else f"{self.to}"
            spec = f">={self.to}" if self.kind == "upgrade" else f"=={self.to}"
            hint = f" ({install_hint(self.target, spec)})" if self.target not in ("cudnn", "cuda", "driver") else ""
            text = f"{self.kind} {label} to {bound}{hint}"
        elif self.kind == "change":
            text = f"set {self.target} = {self.to}"
        elif self.kind == "pad":
            text = f"pad {self.target} to {self.to}"
        elif self.kind == "set":
            text = f"export {self.target}={self.to}"
        else:
            text = f"unset {self.target}"
        return f"{text} ({self.note})" if self.note else text

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        out: dict[str, Any] = {"kind": self.kind, "target": self.target, "to": self.to, "text": self.describe()}
        if self.note:
            out["note"] = self.note
        return out


class Example(NamedTuple):
    """A case CI replays: config and environment, and whether the rule applies there."""

    applies: bool
    config: Mapping[str, Any]
    env: Mapping[str, Any]


class Rule(NamedTuple):
    """One upstream fact about one or more backends."""

    id: str
    title: str
    backends: tuple[str, ...]
    effect: Effect
    surfaces: Surface
    when: Mapping[str, VersionRange]
    condition_text: str
    message: str
    symptom: str
    fixes: tuple[Fix, ...]
    references: tuple[str, ...]
    examples: tuple[Example, ...]
    evidence: Evidence
    notes: str
    file: str
    line: int
    predicate: expr.Node
    names: frozenset[str]
    key_names: tuple[str, ...] = ()
    data: tuple[str, ...] = ()
    """Data conditions (DATA_CONDITIONS) that must also hold for the bug to bite; the config cannot decide them."""
    fixed_in: Mapping[str, str] = {}
    """For an advisory: the release of each package that fixes the bug."""
    workaround: str = ""

    @property
    def compiled(self) -> expr.Compiled:
        """The predicate as a closure, built on first use (closures do not pickle into the load cache)."""
        return expr.compile_node(self.predicate)

    @property
    def blocking(self) -> bool:
        """Whether a finding of this rule stops the backend from being usable: not when the values decide it."""
        return self.effect in BLOCKING and not self.data

    @property
    def advisory(self) -> bool:
        """A known bug of a kernel that accepts the call (the OSV sense): it says when it was fixed, or what
        values trigger it, or how to avoid it."""
        return bool(self.data or self.fixed_in or self.workaround)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (for `rules show --format json` and SARIF)."""
        return {
            "id": self.id, "title": self.title, "backends": list(self.backends), "effect": self.effect,
            "surfaces": self.surfaces, "when": {k: str(v) for k, v in self.when.items()},
            "condition": self.condition_text, "message": self.message, "symptom": self.symptom,
            "fixes": [f.to_dict() for f in self.fixes], "references": list(self.references),
            "evidence": self.evidence, "notes": self.notes, "file": self.file, "line": self.line,
            "data": [{"name": d, "text": DATA_CONDITIONS[d]} for d in self.data], "fixed_in": dict(self.fixed_in),
            "workaround": self.workaround,
        }


FRAMEWORK_LABELS = {"pytorch": "PyTorch SDPA", "transformer-engine": "TransformerEngine"}
"""How the frameworks that select a backend themselves are named to users."""


class Backend(NamedTuple):
    """A backend id, the framework that owns it, and what it needs installed."""

    id: str
    framework: str
    label: str
    requires: tuple[str, ...]
    select: str
    references: tuple[str, ...]
    cpu: bool = False


class SelectionEntry(NamedTuple):
    """One priority order of a framework, used when its predicate holds (first matching entry wins)."""

    id: str
    framework: str
    order: tuple[str, ...]
    note: str
    references: tuple[str, ...]
    condition_text: str
    predicate: expr.Node

    @property
    def compiled(self) -> expr.Compiled:
        """The predicate as a closure, built on first use."""
        return expr.compile_node(self.predicate)


class Horizon(NamedTuple):
    """The releases of one package that the rules about some backends were read at: outside them nothing is claimed."""

    package: str
    backends: tuple[str, ...]
    oldest: str
    newest: str
    """A release series: '2.14' covers 2.14.x, '2.8.3' covers 2.8.3 and its post-releases."""
    references: tuple[str, ...]

    def outside(self, version: Version) -> str:
        """'older' or 'newer' when `version` lies outside the modelled releases, else ''."""
        oldest, newest = _bounds(self.oldest, self.newest)
        if version < oldest:
            return "older"
        return "newer" if tuple(version.release[:len(newest)]) > newest else ""


@lru_cache(maxsize=64)
def _bounds(oldest: str, newest: str) -> tuple[Version, tuple[int, ...]]:
    return parse_version(oldest), parse_version(newest).release


class RuleBase:
    """Every rule, backend and selection order, loaded and validated."""

    def __init__(self, rules: tuple[Rule, ...], backends: tuple[Backend, ...], selection: tuple[SelectionEntry, ...],
                 files: tuple[str, ...], horizons: tuple[Horizon, ...] = ()) -> None:
        self.rules = rules
        self.backends = backends
        self.selection = selection
        self.files = files
        self.horizons = horizons
        self._index: dict[str, tuple[Rule, ...]] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {**vars(self), "_index": {}}

    def backend(self, backend_id: str) -> Backend:
        for b in self.backends:
            if b.id == backend_id:
                return b
        raise KeyError(backend_id)

    @property
    def backend_ids(self) -> tuple[str, ...]:
        return tuple(b.id for b in self.backends)

    def check_backend_ids(self, names: Iterable[str] | None, option: str = "--backend") -> None:
        """Bad input in a backend option is exit 2 naming the first unknown id and the accepted ones."""
        ids = self.backend_ids
        unknown = next((b for b in names or () if b not in ids), None)
        if unknown is not None:
            raise UsageError(f"{option}: unknown backend {unknown!r}; accepted: {', '.join(ids)}")

    def rule(self, rule_id: str) -> Rule | None:
        return next((r for r in self.rules if r.id == rule_id), None)

    def rules_for(self, backend_id: str) -> tuple[Rule, ...]:
        """The rules about one backend, in file order."""
        found = self._index.get(backend_id)
        if found is None:
            found = self._index[backend_id] = tuple(r for r in self.rules if backend_id in r.backends)
        return found


# ---------------------------------------------------------------- loading
