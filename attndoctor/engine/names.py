"""The closed set of names a condition may read, their types, and the functions it may call."""

from ..environment import PACKAGES
from ..fields import BOOL, DERIVED_FACTS, FACTS, INT, NUM, STR, TABLE

VER = "version"
"""Types of names: INT, NUM, STR, BOOL as the config table spells them, and versions of packages."""

VARIABLES: dict[str, tuple[str, tuple[str, ...] | None, str]] = {
    # config
    **{f.name: (f.type, f.choices, f.doc) for f in TABLE if f.fact},
    **{name: (kind, choices, doc) for name, kind, choices, doc in DERIVED_FACTS},
    # environment
    "sm": (INT, None, "GPU compute capability (90 = Hopper)"),
    "gpu": (STR, None, "GPU name"),
    "cudnn_compiled": (VER, None, "cuDNN version torch was compiled against"),
    "flash_attn_4_beta": (INT, None, "which flash-attn 4 beta (4.0.0b27 is 27): versions read every beta as 4.0.0"),
    "flash_attn_local": (BOOL, None, "the flash-attn version carries a local label (2.8.3+cu128): versions drop it"),
    "cutlass_dsl_dev": (BOOL, None, "the nvidia-cutlass-dsl version is a development or pre-release build (4.6.0.dev0 "
                        "that flash-attn 4 betas 20 to 26 pin): versions read it as its release"),
    **{p: (VER, None, f"{p} version") for p in PACKAGES},
}
CONFIG_VARIABLES = frozenset((*FACTS, *(d[0] for d in DERIVED_FACTS)))

FUNCTIONS: dict[str, tuple[tuple[str, ...], str, str]] = {
    # name: (argument types, result type, doc); "lit" = a text literal argument
    "env": (("lit",), STR, "an environment variable's value, '' when unset"),
    "api": (("lit",), BOOL, "an API fact read from a package's source"),
    "installed": (("lit",), BOOL, "whether a package is installed"),
    "max": ((NUM, NUM), NUM, "the larger of two numbers"),
    "min": ((NUM, NUM), NUM, "the smaller of two numbers"),
}
