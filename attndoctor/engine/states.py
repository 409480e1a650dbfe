"""The engine's states as `str` enums: each member is its JSON string, so output reads as before, and a branch on
them can be checked to cover every member (tests/test_states.py)."""

from enum import Enum


class StrEnum(str, Enum):
    """A str enum that prints and formats as its value, on Python 3.10 as on 3.11+ (enum.StrEnum is 3.11+)."""

    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, spec: str) -> str:
        return str.__format__(str.__str__(self), spec)


class Status(StrEnum):
    """A backend's verdict on one config."""

    SUPPORTED = "supported"
    KNOWN_BUG = "known-bug"
    """It runs, and a known bug bites when the data meet its conditions (an advisory at risk)."""
    DEPENDS = "depends"
    OUTSIDE_RULES = "outside-rules"
    """A version the rules do not model decides it, so nothing is claimed."""
    UNSUPPORTED = "unsupported"
    API_MISMATCH = "api-mismatch"
    WRONG_RESULTS = "wrong-results"
    NOT_INSTALLED = "not-installed"


class Effect(StrEnum):
    """What a finding does to a backend, most severe first."""

    UNSUPPORTED = "unsupported"
    API_MISMATCH = "api-mismatch"
    WRONG_RESULTS = "wrong-results"
    SLOW = "slow"
    INFO = "info"


class Surface(StrEnum):
    """How a blocking finding shows: the framework refuses and falls back (dispatch), the call fails (runtime), or
    never (silent)."""

    DISPATCH = "dispatch"
    RUNTIME = "runtime"
    SILENT = "silent"


class Evidence(StrEnum):
    """Where a rule's fact was read: the upstream source, an observed run, or inferred (its notes say why)."""

    SOURCE = "source"
    OBSERVED = "observed"
    INFERRED = "inferred"


class Outcome(StrEnum):
    """What a run on a GPU showed (verify, stress, the recorded observations)."""

    OK = "ok"
    REJECTED = "rejected"
    API_MISMATCH = "api-mismatch"
    WRONG_RESULTS = "wrong-results"
    CRASHED = "crashed"
    NOT_INSTALLED = "not-installed"
    OUT_OF_MEMORY = "out-of-memory"
    SKIPPED = "skipped"


class InstallKind(StrEnum):
    """What is wrong with an installed compiled extension: no code for the GPU, torch symbols it needs that torch does
    not export, or a file that cannot be read."""

    ARCH = "arch"
    ABI = "abi"
    UNREADABLE = "unreadable"


class Severity(StrEnum):
    """How bad an install finding is: it fails (error), or it runs with a cost or cannot be judged (warning)."""

    ERROR = "error"
    WARNING = "warning"


BLOCKING_EFFECTS = (Effect.UNSUPPORTED, Effect.API_MISMATCH, Effect.WRONG_RESULTS)
"""The effects that stop a backend, most severe first; each is also the status it gives."""
STATUS_OF_EFFECT = {Effect.UNSUPPORTED: Status.UNSUPPORTED, Effect.API_MISMATCH: Status.API_MISMATCH,
                    Effect.WRONG_RESULTS: Status.WRONG_RESULTS}
BLOCKING_STATUSES = (Status.UNSUPPORTED, Status.API_MISMATCH, Status.WRONG_RESULTS)
"""The statuses of a backend that does not run the config."""
FIXED = (*BLOCKING_STATUSES, Status.KNOWN_BUG)
"""The statuses whose verdict carries fix plans: a refusal's, or a known bug's way out."""
RUNS = {Status.SUPPORTED: True, Status.KNOWN_BUG: True, Status.DEPENDS: None, Status.OUTSIDE_RULES: None,
        Status.UNSUPPORTED: False, Status.API_MISMATCH: False, Status.WRONG_RESULTS: False,
        Status.NOT_INSTALLED: False}
"""Whether a backend with this status runs the config: yes, maybe (facts or releases the rules do not know), no."""
