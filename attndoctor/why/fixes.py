"""The fixes `why` offers: a rule's checked fix, a message's own advice, or one that follows the kind of problem."""

from __future__ import annotations

import functools
import re
from typing import Any, Iterable, Mapping, Sequence


FIX_BY_TOPIC = {
    "install-missing": "install {library} (a build for this torch, CUDA and Python), or let another backend take the call",
    "install-abi": "reinstall {library} built for the installed torch, CUDA and C++ ABI, or pin (downgrade) {library} "
                   "to the release whose published build matches them",
    "install-arch": "install a build of {library} that includes this GPU's architecture",
    "version-mismatch": "install the release of {library} that the message asks for (the versions it names)",
    "gpu-arch": "run on a GPU {library} supports, or let another backend take the call",
    # torch/nn/functional.py@v2.5.0 scaled_dot_product_attention(..., enable_gqa=False)
    "gqa": "give key and value as many heads as the query (repeat_interleave them by num_heads // num_kv_heads, as "
           "transformers' repeat_kv does), or call a kernel that takes grouped-query attention (scaled_dot_product_attention "
           "with enable_gqa=True from torch 2.5, flash-attn 2)",
    "shared-memory": "use smaller tiles (block sizes, num_stages) or a smaller head dim, or a GPU with more shared memory",
    "oom": "make the call need less memory: a smaller batch or sequence per step; SDPA's math path and eager attention "
           "build the whole score matrix, its flash and memory-efficient kernels do not",
}


BF16 = re.compile(r"\b(?:bfloat16|bf16)\b", re.I)
BF16_ON_OLDER_GPU = ("use float16 instead of bfloat16 on this GPU (bfloat16 kernels need compute capability 8.0 or "
                     "newer): --dtype half for vLLM, torch_dtype=torch.float16 in from_pretrained, or the program's "
                     "dtype or precision setting")
"""A message that refuses bfloat16 for the GPU's architecture: the fix is the half type every older GPU runs."""

MIXED_DTYPES = re.compile(r"same dtype|dtype\(\)\s*==\s*\w+\.dtype\(\)|dtypes? (?:must|should) (?:match|be the same)|"
                          r"query\.dtype\b.{0,40}?\bkey\.dtype", re.I)
MIXED_DTYPES_FIX = ("cast query, key and value to one dtype before the call (key.to(query.dtype), value.to(query.dtype)): "
                    "the calling code mixes them (a float32 RoPE, norm or cache beside a half-precision model, autocast "
                    "around part of it); where that code is a package's (a node, an extension, model code), a later "
                    "release of it may cast them, and an app's precision switch (ComfyUI: --force-fp16) keeps them one "
                    "dtype")
"""A check that q, k and v share a dtype: no dtype the backend takes fixes it, one dtype for the three does."""


UNCHANGEABLE = frozenset({"other", "numerics", "oom", "hang", "cuda-driver"})
"""Kinds of problem that are not a setting one changes to what a check accepts."""


ADVICE = re.compile(r"(?:^|(?<=[.!:;]\s)|(?<=[\s,])(?=(?:please|make sure to|you (?:\w+ )?need to)\s))((?:please\s+|you can\s+|"
                    r"you may\s+|you (?:\w+ )?need to\s+)?(?:use|set|try|make sure|consider|install|upgrade|reinstall|"
                    r"pass|specify|enable|disable|switch to|downgrade|update|call|increase|decrease|reduce|lower|create|"
                    r"recreate|rebuild)\b(?:[^.!]|\.(?=[\w`'\"(]))"
                    r"{8,200}[.!]?|this warning can be removed (?:by|using)(?:[^.!]|\.(?=[\w`'\"(])){8,200}[.!]?)", re.I)
"""A sentence of a message that tells the user what to do ("Please set your attention to `eager` ..."), or its clause
that starts with "please", "make sure to" or "you (likely) need to" ("..., for a more memory efficient implementation
make sure to upgrade flash-attn library.", "... you likely need to create a new block mask."); a dot inside a name or a
version (`tokenizer.padding_side`, 2.6.1) does not end it."""
BACKEND_FIXES = {
    ("shared-memory", "flex-attention"): "pass smaller tiles to flex_attention: kernel_options={'BLOCK_M': 32, "
    "'BLOCK_N': 32, 'num_stages': 1} (or compile it with mode='max-autotune' so autotuning picks tiles that fit), or use "
    "a GPU with more shared memory per block",
    # torch/nn/attention/flex_attention.py@v2.9.1:1690 says so when it runs uncompiled
    ("oom", "flex-attention"): "compile it: torch.compile(flex_attention); called without torch.compile, flex_attention "
    "runs an unfused implementation that materializes the full scores matrix",
}
"""Fixes that only one backend's users can apply, by kind of problem and backend."""
PRINTED_BY_ANY_KERNEL = frozenset({"triton"})
"""Libraries whose messages every kernel built with them prints (FlexAttention's, FlexPrefill's, lmdeploy's): a
backend's own fix leads only where the text's frames show that backend; elsewhere the fix for any kernel does."""


def fixed_value(fix: Any) -> bool:
    """Whether a rule's fix reads the same whatever the config (a literal, not an expression of the user's facts)."""
    from ..engine.partial import free_names

    return fix.value_node is None or not free_names(fix.value_node)


def module_package(groups: Mapping[str, str]) -> str:
    """The top-level package of the module a message names (its `module` group), or '': a compiled extension's
    package without the extension's suffix (flash_attn_2_cuda is flash_attn's)."""
    return re.sub(r"(?<=\w)(?:_\d+)?_(?:cuda|C)$", "", groups.get("module", "").split(".")[0])


def own_fix(text: str, groups: Mapping[str, str], kernel: str = "") -> str:
    """A catalogue fix with <package> named, the package of the module the message names, and <kernel package>, the
    package of the backend the message is about (`kernel`)."""
    text = text.replace("<package>", module_package(groups) or "the package") if "<package>" in text else text
    return text.replace("<kernel package>", kernel or "the package that provides the kernel")


def kernel_package(backends: Sequence[str], packages: Mapping[str, str] | None) -> str:
    """The package the first of `backends` comes in: its own (flash-attn, transformer-engine), torch for torch's own
    backends; '' when no backend is known."""
    return next(((packages or {}).get(b) or "torch" for b in backends if b in (packages or {})), "")


def distinct(fixes: Iterable[Any]) -> tuple[str, ...]:
    """Each fix once, however many rules carry it (with or without a note); of several upgrades of one package, the
    highest (it meets every rule that asked for less)."""
    from packaging.version import InvalidVersion, Version

    def rank(fix: Any) -> Any:
        try:
            return Version(str(fix.to))
        except InvalidVersion:
            return None

    seen: dict[tuple[Any, ...], Any] = {}
    for fix in fixes:
        key = ("upgrade", fix.target) if fix.kind == "upgrade" and rank(fix) is not None else tuple(fix[:3])
        if key not in seen or key[0] == "upgrade" and len(key) == 2 and rank(fix) > rank(seen[key]):
            seen[key] = fix
    return tuple(dict.fromkeys(f.describe() for f in seen.values()))


def own_advice(lines: Sequence[str], number: int) -> tuple[str, ...]:
    """What the message itself tells the user to do, from its line and the next (a message's advice often wraps)."""
    text = " ".join(line.strip() for line in lines[max(0, number - 1):number + 1])
    return tuple(f"as the message says: {m.group(1).strip()}" for m in ADVICE.finditer(text))[:2]


def cut_advice(entry: Any, lines: Sequence[str], number: int, generic: str) -> tuple[str, ...]:
    """`generic` (a fix by the message's kind) with the advice of an index message's whole wording where the paste
    stops before it (FlashInfer's "Buffer overflow when allocating memory for batch_prefill_tmp_v" of "... Increase
    the workspace buffer size."): first where `generic` only points at the library's check, else after it."""
    if not getattr(entry, "indexed", False) or not entry.template:
        return (generic,)
    shown = " ".join(lines[max(0, number - 1):number + 1]).lower()
    from .index import words_of

    words = words_of(entry.template, "...")
    cut = tuple(f"the whole message goes on: {m.group(1).strip()}" for m in ADVICE.finditer(words)
                if m.group(1).strip()[:24].lower() not in shown)[:1]
    return (*cut, generic) if generic.startswith("see ") else (generic, *cut)


VERSIONED = re.compile(r"\b(CUDA|nvcc|PyTorch|torch|cuDNN|flash[-_ ]?attn(?:ention)?|transformers|triton|xformers|vLLM|"
                       r"TransformerEngine|Transformer Engine|driver)\b[^.;:\d(]{0,24}?(?:>=|>|==|<=|<|\bv|\()?\s*(\d+\.\d+(?:\.\d+)*)\)?",
                       re.I)
"""A package named with a version in a message ("only supported on CUDA 11.6 and above", "requires torch>=2.1")."""
OLD_RELEASE = re.compile(r"\b(?P<package>[A-Za-z][\w\-]*[A-Za-z0-9])(?: version| release)?\s+(?:is|was) (?:not new enough|too old|"
                         r"outdated)\b", re.I)
"""A message that calls a package's installed release too old ("sageattention is not new enough", "flash_attn version
is too old"): its fix is that package's upgrade."""
VERSIONED_LABELS = {"cuda": "the CUDA toolkit (nvcc -V shows its version)", "nvcc": "the CUDA toolkit (nvcc -V shows its version)",
                    "driver": "the NVIDIA driver"}


INSTALLABLE = re.compile(r"\b(?:xformers|flash[-_]attn(?:_interface)?|transformer[-_]engine|triton|kernels|"
                         r"nvidia-cudnn-frontend|cudnn[-_]frontend|flashinfer|sageattention|deepspeed)\b(?![-/])", re.I)
"""A package an install message names (diffusers saying xformers is missing: install xformers, not diffusers); not a
part of a hub repository's name (`kernels-community/flash-attn` names flash-attn, not kernels)."""


def own_requirement(requires: Sequence[str]) -> str:
    """A backend's own package: the first it requires past torch (flash_attn for flash-attn-2, cudnn_frontend for
    cudnn-fe); '' for torch's own backends."""
    return next((r for r in requires if r != "torch"), "")


@functools.lru_cache(maxsize=64)
def package_of(requires: tuple[str, ...]) -> str:
    """The package a backend comes in, as pip names it (flash-attn for flash-attn-2)."""
    from ..environment import PACKAGE_LABELS, PIP_NAMES

    own = own_requirement(requires)
    return PIP_NAMES.get(own, PACKAGE_LABELS.get(own, own)).split("[")[0] if own else ""


def backend_package(backends: Sequence[str], packages: Mapping[str, str] | None) -> str:
    """The package of the first of `backends` that comes in one of its own (`packages`: backend -> package_of), ''
    when none does."""
    return next((packages[b] for b in backends if (packages or {}).get(b)), "")


_SHIPPED = re.compile(r"(?P<path>[\w.\-/\\:]*?)(?P<file>[A-Za-z_][\w.\-]*?)\.(?:so|pyd|dll)\b")
_TORCH_LIBRARY = re.compile(r"^lib(?:torch|c10|caffe2|shm)\w*$|^(?:torch|c10)\w*$")


def shipped_by(text: str) -> str:
    """The package whose compiled file a loader message names: its folder under site-packages, else the folder the
    file lies in where that is a Python package's name, else the file's own name (flash_attn_2_cuda is flash-attn's,
    libtorch_cuda torch's)."""
    found = _SHIPPED.search(text)
    if not found:
        return ""
    folders = [f for f in re.split(r"[/\\]", found.group("path")) if f]
    stem = found.group("file").split(".")[0]
    after = [folders[i + 1] for i, f in enumerate(folders[:-1]) if f in ("site-packages", "dist-packages")]
    parent = folders[-1] if folders else ""
    if after:
        name = after[0]
    elif _TORCH_LIBRARY.match(stem):
        name = "torch"
    elif stem.startswith("flash_attn"):
        name = "flash_attn"
    elif re.fullmatch(r"[a-z][a-z0-9_]*", parent) and parent not in ("lib", "lib64", "bin", "root", "tmp", "opt", "usr"):
        name = parent
    else:
        name = stem.removeprefix("lib")
    return name.lower().replace("_", "-")


_FRAME = re.compile(r"^\s*(?:\[[^\]]*\]:?\s*)*(?:\.{3})?.*?File \"(?P<path>[^\"]+)\", line \d+")
_FRAME_PACKAGE = re.compile(r"(?:[/\\](?:site|dist)-packages|[/\\]custom_nodes|[/\\]extensions)[/\\](?P<package>[^/\\]+)[/\\]")
CALLED = frozenset({"torch", "flash_attn", "flash_attn_interface", "hopper", "xformers", "transformer_engine",
                    "sageattention", "flashinfer", "triton", "einops", "accelerate", "cudnn", "nvidia", "spas_sage_attn",
                    "vllm_flash_attn", "natten", "importlib", "functools"})
"""Packages a traceback passes through on the way to the failing attention call (the called libraries, wrappers):
not the code that made the call."""


_APP = re.compile(r"[/\\](?P<package>stable-diffusion-webui[\w.\-]*|ComfyUI|Fooocus|text-generation-webui)[/\\]", re.I)
"""The apps people run attention through from a folder of their own, not as an installed package."""


def _frame_paths(lines: Sequence[str]) -> list[str]:
    """The file of each traceback frame the lines show, outermost first."""
    return [found["path"] for found in map(_FRAME.match, lines) if found]


def _frame_package(path: str) -> str:
    """What a traceback frame's file lies in under site-packages, an app's plugin folder or an app's own folder (a
    lone module's file name included, see LONE); '' for any other file."""
    found = _FRAME_PACKAGE.search(path) or _APP.search(path)
    return found["package"] if found else ""


LONE = (".py", ".egg", ".pth")
"""Endings of what lies directly in site-packages without being a package of its own."""


def caller_package(lines: Sequence[str]) -> str:
    """The package whose code made the failing call: the innermost traceback frame outside the called libraries,
    when that frame lies in an installed package, an app's plugin folder (custom_nodes, extensions) or an app's own
    folder (ComfyUI, stable-diffusion-webui); '' when it is the program's own code or no frame is shown."""
    for path in reversed(_frame_paths(lines)):
        package = _frame_package(path)
        if package.split(".")[0].lower() not in CALLED:
            return "" if package.endswith(LONE) else package
    return ""


def another_install(hit: Any, ruled_out: Sequence[str]) -> tuple[str, str] | None:
    """(cause, fix) for a message about a module whose every modelled cause the versions given rule out (no
    torch.nn.attention.flex_attention in the torch 2.5 given): the program imports another install than the one given."""
    module = module_package(hit.groups)
    if not ruled_out or not module:
        return None
    return (f"the program imports another {module} than the one given",
            f"check which {module} the program imports (python -c \"import {module}; print({module}.__version__, "
            f"{module}.__file__)\") and reinstall {module} in the environment that runs it: a second install, or a "
            "package whose install replaced it, explains the message")


UNNAMED_EXTENSION_FIX = (
    "reinstall the package whose compiled extension the program was importing (the traceback's last import names it; in "
    "attention code most often flash-attn or xformers) built for the installed torch, CUDA and C++ ABI, or pin it to "
    "the release whose published build matches them")
"""The fix for a loader's message that names no file: the line alone cannot say whose extension it is."""


def raising_package(lines: Sequence[str], before: int) -> str:
    """The package whose code raised the error on line `before` (1-based): the innermost traceback frame above it, when
    that frame lies in an installed package or an app's folder; '' for the program's own code or no frame."""
    frames = _frame_paths(lines[:max(0, before - 1)])
    package = _frame_package(frames[-1]) if frames else ""
    return "" if package.endswith(LONE) else package


_REQUIRED_SWITCH = re.compile(r"^(?:self\.)?(?:config|args|cfg|\w+_config|\w+_args)\.(?P<name>[a-z][a-z0-9_]*)$")
"""An assert that a framework's config switch is on (Megatron: `config.attention_softmax_in_fp32`), whose fix is to
turn it on; argparse makes `--attention-softmax-in-fp32` that attribute."""


NOT_THE_KERNELS = frozenset({"torch", "importlib", "functools", "einops", "accelerate"})
"""Frames that make the failing call without holding its kernel (torch's op dispatch runs other packages' kernels)."""


def imports_itself(groups: Mapping[str, str], lines: Sequence[str],
                   line: int) -> tuple[tuple[str, ...], str, tuple[str, ...]] | None:
    """(topics, cause, fixes) where a package's own code imported its missing submodule (`No module named
    'vllm.vllm_flash_attn.fa_utils'` raised in vllm's frame): its install lacks a file its release has, not a release
    another program expects; None where the importing frame is another package's, the program's or not shown."""
    package, module = groups.get("package") or "", groups.get("module") or ""
    if not package or not module.startswith(package + ".") or raising_package(lines, line).split(".")[0] != package:
        return None
    return (("install-missing",),
            f"{package}'s own code imports {module}, which this install of {package} does not hold: the install is "
            "incomplete or mixes files of two releases",
            (f"reinstall {package} cleanly (pip install --force-reinstall --no-deps {package}==<the version it reports>, "
             "or rebuild the image without cached layers): its own files import a module the installed copy lacks",))


def arch_rebuild_fix(entry: Any, lines: Sequence[str], line: int) -> tuple[str, ...]:
    """For a message that a binary holds no code for this GPU: rebuild the package whose traceback frame raised it,
    where one did; none for the program's own frame, torch's or no frame."""
    if getattr(entry, "install", "") != "arch":
        return ()
    package = raising_package(lines, line).split(".")[0].replace("_", "-").lower()
    if not package or package in NOT_THE_KERNELS:
        return ()
    return (f"reinstall {package} built for this GPU's architecture (the error rose in {package}'s code): a release "
            f"or wheel whose build includes this GPU's sm, or build {package} from source with it listed "
            "(TORCH_CUDA_ARCH_LIST)",)


NOT_YET = re.compile(r"\b(?:not|n't)\b(?:[^.!]|\.(?=\d)){0,80}\byet\b|\bcurrently (?:not supported|unsupported|"
                     r"(?:does|do)(?: not|n't) support)\b|\bnot currently supported\b|\b(?:is|are) not implemented\b|"
                     r"\brequest (?:the )?support\b", re.I)
"""A message that says its library does not support something yet ("... does not support Flash Attention 2.0 yet",
"... is currently not supported with ...", "... are not implemented for TritonAttentionImpl", "... open an issue to
request support for this architecture", "Please request the support"); not a standing limit ("currently only
supports FP16 and BF16")."""


HUB_NO_BUILD_FIX = (
    "the hub kernel the program loads (the repository the message names) has no build for this machine's torch, CUDA, "
    "C++ ABI, OS or GPU architecture (the build variants say which): run a torch release it has builds for, install the "
    "library itself (pip install flash-attn, for kernels-community/flash-attn) so that the framework does not fetch the "
    "hub kernel, or use another attention implementation (attn_implementation=\"sdpa\" in transformers)")
"""The kernels hub (huggingface/kernels) refuses a kernel repository's builds one by one for this machine."""


LLAMA_CPP_FA_OFF_FIX = (
    "turn llama.cpp's flash attention off: -fa off for llama-server and llama-cli (builds before its on/off/auto "
    "switch: leave -fa out), OLLAMA_FLASH_ATTENTION=0 for Ollama, flash_attn=False in llama-cpp-python's Llama(...); "
    "a later build may take the case (Ollama and llama-cpp-python bundle their own llama.cpp)")
"""llama.cpp's CUDA flash attention refuses a head size, GQA ratio, KV type or GPU with an abort or a log line, and
its context turns it off for a model, a LoRA or a V head size it does not take (common/arg.cpp -fa [on|off|auto],
ollama envconfig OLLAMA_FLASH_ATTENTION, llama-cpp-python Llama(flash_attn=...))."""
LLAMA_CPP_FELL_BACK = re.compile(r"forcing off|converting K and V to f16 instead \(slow\)")
"""llama.cpp's words where it works around what flash attention cannot do and goes on."""
LLAMA_CPP_FELL_BACK_FIX = (
    "nothing fails here: llama.cpp went on ({what}); where the run still stops, the cause is a later message; "
    "to keep flash attention for this case, upgrade to a build that takes it (for K/V types, a build with them in "
    "GGML_CUDA_FA_QUANTS or -DGGML_CUDA_FA_ALL_QUANTS=ON), else pass -fa off (Ollama: OLLAMA_FLASH_ATTENTION=0) to "
    "say so")
"""What llama.cpp logs when it turns flash attention off for a model (`... - forcing off`) or converts a K/V type
its vector kernel lacks to f16 (fattn.cu: "Add ... to GGML_CUDA_FA_QUANTS to compile it")."""
LLAMA_CPP_V_CACHE_FIX = (
    "turn llama.cpp's flash attention on, which a quantized V cache needs (-fa on; Ollama: OLLAMA_FLASH_ATTENTION=1), "
    "or keep the V cache in f16: --cache-type-v f16 (Ollama: unset OLLAMA_KV_CACHE_TYPE) where flash attention "
    "cannot run for this model or GPU")
"""llama.cpp keeps a quantized V cache only with flash attention (llama-context.cpp: ggml_is_quantized(type_v) and
flash attention disabled is refused)."""


def generic_fix(entry: Any, topics: Sequence[str], backends: Sequence[str] = (), text: str = "",
                packages: Mapping[str, str] | None = None, framed: Sequence[str] = ()) -> str:
    """A fix for a library message no rule models, from what kind of problem it is."""
    from .index import LABELS

    library = LABELS.get(entry.library, entry.library)
    kernel = backend_package(backends, packages)
    if entry.library == "loader":  # the loader prints it for any extension: the fix is the package's that ships it
        library = shipped_by(text) or kernel
        if not library and list(topics[:1]) == ["install-abi"]:
            return UNNAMED_EXTENSION_FIX
        library = library or "the package that ships the file the message names"
    if topics and topics[0].startswith("install-") and entry.library != "loader":
        # a missing package is the one the message names (diffusers: xformers is not installed); a broken one, that of
        # the backend the message is about ("Your Flash Attention 2 installation seems to be broken. Using Xformers")
        named = INSTALLABLE.search(text)
        first, second = (named and named.group(0), kernel) if topics[0] == "install-missing" else (kernel, named and named.group(0))
        library = first or second or library
    if entry.library == "kernels" and topics[:1] and topics[0] in ("install-arch", "version-mismatch"):
        return HUB_NO_BUILD_FIX
    if entry.library == "llama-cpp":
        if "type_v" in (entry.note or ""):
            return LLAMA_CPP_V_CACHE_FIX
        fell_back = LLAMA_CPP_FELL_BACK.search(entry.template)
        return LLAMA_CPP_FELL_BACK_FIX.format(what=fell_back.group(0)) if fell_back else LLAMA_CPP_FA_OFF_FIX
    if entry.library == "cuda" and list(topics) == ["other"]:
        # the runtime reports a fault of whichever kernel ran, often at a later call
        if kernel:
            return (f"rerun with CUDA_LAUNCH_BLOCKING=1 to see which kernel faults; if it is {kernel}'s, upgrade "
                    f"{kernel} (its tracker names the shapes a release fixed) or let another backend take the call")
        return ("rerun with CUDA_LAUNCH_BLOCKING=1 so that the traceback stops at the kernel that fails (the runtime "
                "reports it at a later call otherwise); then upgrade that kernel's package (its tracker names the "
                "shapes and GPUs a release fixed) or let another backend take the call")
    if NOT_YET.search(text) and entry.library not in ("text", "python", "loader", "cuda", "pip"):
        return (f"upgrade {library}: the message says the support is not there yet, so a later release may add it; "
                "until then use another attention implementation for this model")
    older = OLD_RELEASE.search(text) if "version-mismatch" in topics else None
    if older and older["package"].lower() not in ("it", "this", "gpu", "device", "driver", "version", "release"):
        package = VERSIONED_LABELS.get(older["package"].lower(), older["package"])
        return f"upgrade {package}: the message says the installed release is too old for this call"
    named = VERSIONED.search(text) if "version-mismatch" in topics else None
    if named and named.group(1).lower() == "cudnn" and getattr(entry, "indexed", False) and cudnn_bound_fix(
            entry.note or "", None):
        named = None  # the check's own bound names the release, and the matcher offers that fix first
    if named:
        package = VERSIONED_LABELS.get(named.group(1).lower(), named.group(1))
        return f"install {package} at the version the message asks for ({named.group(0).strip()})"
    if {"dtype", "gpu-arch"} <= set(topics) and BF16.search(text):
        return BF16_ON_OLDER_GPU
    if list(topics[:1]) == ["dtype"] and (MIXED_DTYPES.search(entry.note or "") or MIXED_DTYPES.search(text)):
        return MIXED_DTYPES_FIX
    switch = _REQUIRED_SWITCH.match(entry.note or "") if getattr(entry, "asserted", False) else None
    if switch:
        return (f"set {switch['name']}=True in {library}'s configuration (its check requires `{entry.note}`); where "
                f"the program takes it from the command line: --{switch['name'].replace('_', '-')}")
    # the first kind is what the message is about ("unsupported head_dim ... (>192 requires sm80/90)" is a head dim)
    topic = topics[0] if topics else ""
    for backend in backends:
        if (topic, backend) in BACKEND_FIXES:
            if entry.library not in PRINTED_BY_ANY_KERNEL or backend in framed or topic not in FIX_BY_TOPIC:
                return BACKEND_FIXES[topic, backend]
            return f"{FIX_BY_TOPIC[topic].format(library=library)}; if the kernel is {backend}'s: {BACKEND_FIXES[topic, backend]}"
    if topic in FIX_BY_TOPIC:
        return FIX_BY_TOPIC[topic].format(library=library)
    if topics and topics[0] not in UNCHANGEABLE:
        return f"change the {topics[0].replace('-', ' ')} to what {library} accepts (its check: {entry.note or 'see the message'})"
    if not entry.source:
        return (f"look the message's words up in the source or tracker of {library}: the check that prints it says "
                "what it accepts")
    return f"see {library}'s check behind the message ({entry.source[0]})"


_CUDNN_BELOW = re.compile(r"(?:(?:get_backend_version|get_compiled_version|backend_version)\(\)\)?|effective_cudnn_ver"
                          r"|\bcudnn_version|\bcudnn_runtime_version|\bCUDNN_VERSION)\s*(<=?)\s*(\d{4,6})\b")
"""A cuDNN version bound in a check's condition, as cudnn-frontend, PyTorch, FlashInfer and TransformerEngine write it
(cuDNN's own version numbers: 8906 is 8.9.6, 91801 is 9.18.1)."""


def cudnn_release(code: int) -> str:
    """cuDNN's version number as its release (CUDNN_VERSION: major * 1000 before 9, major * 10000 from 9 on)."""
    major, rest = divmod(code, 10000) if code >= 90000 else divmod(code, 1000)
    return f"{major}.{rest // 100}.{rest % 100}"


def cudnn_bound_fix(condition: str, given: str | None) -> tuple[str, ...]:
    """The cuDNN release that lifts a check that fails only below it (`detail::get_backend_version() < 91801` and
    other terms, all of which an upgrade leaves in place): upgrade to it; where the cuDNN given is already there, the
    process loaded another one. Nothing for a check an upgrade alone does not lift (a bound beside other
    alternatives, `... || prop_major < 10`) or that fails from a release on (`>= 90000 && d > 256`)."""
    found = _CUDNN_BELOW.findall(condition or "")
    alternatives = re.split(r"\|\||\bor\b", condition or "")
    if not found or condition.lstrip().startswith("!") or (
            len(alternatives) > 1 and not all(_CUDNN_BELOW.search(a) for a in alternatives)):
        return ()
    op, code = max(found, key=lambda f: int(f[1]) + (f[0] == "<="))
    release = cudnn_release(int(code))
    if given:
        from packaging.version import InvalidVersion, Version

        try:
            past = Version(given) > Version(release) if op == "<=" else Version(given) >= Version(release)
        except InvalidVersion:
            past = False
        if past:
            return (f"check which cuDNN the process loads (python -c \"import torch; print(torch.backends.cudnn."
                    f"version())\"): the check fails only {'up to' if op == '<=' else 'below'} cuDNN {release}, not with "
                    f"the {given} given; a second copy (torch's bundled nvidia-cudnn wheel, a system libcudnn) "
                    "shadows it",)
    lift = f"past {release}" if op == "<=" else f"to {release} or later"
    return (f"upgrade cuDNN {lift}: the check behind the message fails only {'up to' if op == '<=' else 'below'} "
            f"{release} (its condition: {' '.join(condition.split())[:160]}); cuDNN comes as the nvidia-cudnn-cu12/cu13 "
            "wheel or with a torch build that bundles a newer one",)


def retired_fix(entry: Any) -> tuple[str, ...]:
    """An upgrade where the library's later releases no longer print the message (an index entry's `retired`)."""
    if not entry.retired or entry.kind == "log":
        return ()
    from .index import LABELS, RELEASED_AS

    label = LABELS.get(entry.library, entry.library)
    release = f"the copy in {RELEASED_AS[entry.library]} {entry.retired}" if entry.library in RELEASED_AS else entry.retired
    return (f"upgrade {label} to {release} or later: from {release} on (of the releases read) {label} no "
            "longer prints this message where it did, so the check behind it was lifted or reworded there",)


def _unquoted(text: str) -> str:
    return text.replace("'", "").replace('"', "")


def rule_fixes(rule: Any, pair: tuple[Any, Any] | None) -> tuple[str, ...]:
    """The smallest fix the engine checked for the backend, else the rule's own fixes; an advisory's workaround."""
    out: list[str] = []
    if pair is not None:
        finding, verdict = pair
        if verdict.fix is not None and finding.blocking and finding.applies is True:
            out.append(verdict.fix.describe())
        same = {_unquoted(text) for text in out}  # the engine's checked fix names the value, the rule its literal
        out.extend(f.describe() for f in finding.fixes if _unquoted(f.describe()) not in same)
        if finding.fixed_in:
            out.append("fixed in " + ", ".join(f"{k} {v}" for k, v in finding.fixed_in.items()))
        if finding.workaround:
            out.append(f"workaround: {finding.workaround}")
    else:
        out.extend(f.describe() for f in rule.fixes if fixed_value(f))
        if rule.fixed_in:
            out.append("fixed in " + ", ".join(f"{k} {v}" for k, v in rule.fixed_in.items()))
        if rule.workaround:
            out.append(f"workaround: {rule.workaround}")
    return tuple(dict.fromkeys(out))


CALLER_CANNOT_FIX = frozenset({"install-missing", "install-abi", "install-arch", "cuda-driver", "gpu-arch", "oom", "hang",
                               "numerics", "other"})
"""Kinds of problem the code that made the call did not cause by what it passed (a broken install, the GPU)."""


def with_caller(candidate: Any, caller: str) -> Any:
    """The package that made the failing call is the other side of the problem: for a release mismatch it can move
    to a release written for the installed libraries; for a value the backend refuses (a dtype, a head dim, a mask)
    it chose that value, and a later release of it may pass one the backend takes."""
    topics = set(candidate.topics)
    if not topics - CALLER_CANNOT_FIX or any(caller.lower() in f.lower() for f in candidate.fixes):
        return candidate
    why = ("to a release written for the installed versions (its changelog or requirements say which)"
           if "version-mismatch" in topics else "to a release that passes this backend inputs it accepts, or report "
           "the call there")
    return candidate._replace(fixes=(*candidate.fixes, f"or upgrade {caller}, whose code made the failing call, {why}"))
