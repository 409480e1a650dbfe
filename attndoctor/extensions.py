"""The compiled extensions attndoctor inspects: the distributions that ship each, the files to read, and how to
build it for another GPU."""

from __future__ import annotations

from typing import NamedTuple


class Target(NamedTuple):
    """A package whose compiled extensions are inspected: the distributions that ship it and its shared objects."""

    key: str
    label: str
    dists: tuple[str, ...]
    pattern: str
    """A regular expression over the file's path inside site-packages."""
    pip: str
    arch_hint: str
    """How to build it for another GPU; {sm} and {cc} (12.0) are filled in."""


TARGETS: tuple[Target, ...] = (
    Target("flash_attn", "flash-attn", ("flash-attn", "flash_attn"), r"(^|/)flash_attn_2_cuda[^/]*\.so$",
           "flash-attn",
           # FLASH_ATTN_CUDA_ARCHS: Dao-AILab/flash-attention setup.py (semicolon-separated, e.g. "80;90;120")
           "FLASH_ATTN_CUDA_ARCHS={sm} pip install --no-build-isolation --no-cache-dir flash-attn"),
    Target("flash_attn_3", "flash-attn 3", ("flash-attn-3", "flash_attn_3", "flashattn-hopper"),
           r"(^|/)(flash_attn_3[^/]*\.so|flash_attn_3/_C[^/]*\.so|flashattn_hopper[^/]*\.so)$",
           "flash-attn-3",
           "build it from the flash-attention repository's hopper/ folder with TORCH_CUDA_ARCH_LIST={cc}"),
    Target("flash_attn_4", "flash-attn 4", ("flash-attn-4",), r"\.so$", "flash-attn-4",
           "flash-attn 4 compiles its kernels at run time (CuTe DSL): upgrade it to a release that supports sm{sm}"),
    Target("te", "TransformerEngine",
           ("transformer-engine", "transformer_engine", "transformer-engine-cu12", "transformer_engine_cu12",
            "transformer-engine-cu13", "transformer_engine_cu13", "transformer-engine-torch",
            "transformer_engine_torch"),
           r"(^|/)(lib)?transformer_engine[^/]*\.so(\.[0-9.]+)?$", "transformer-engine[pytorch]",
           # NVTE_CUDA_ARCHS: NVIDIA/TransformerEngine build_tools/utils.py cuda_archs()
           "NVTE_CUDA_ARCHS={sm} pip install --no-build-isolation 'transformer-engine[pytorch]'"),
    Target("cudnn_frontend", "cudnn-frontend", ("nvidia-cudnn-frontend", "nvidia_cudnn_frontend"),
           r"(^|/)cudnn/_compiled_module[^/]*\.so$", "nvidia-cudnn-frontend",
           "pip install --force-reinstall nvidia-cudnn-frontend (a release whose wheel supports sm{sm})"),
    Target("xformers", "xformers", ("xformers",), r"(^|/)xformers/_C[^/]*\.so$", "xformers",
           "TORCH_CUDA_ARCH_LIST={cc} pip install --no-build-isolation -v -U "
           "git+https://github.com/facebookresearch/xformers.git@main#egg=xformers"),
    Target("torch", "PyTorch", ("torch",), r"(^|/)torch/lib/libtorch_cuda\.so$", "torch",
           "install a torch build whose CUDA supports sm{sm} (see https://pytorch.org/get-started/locally/)"),
)
"""Inspected packages; torch's own libtorch_cuda.so is there for reference (its ABI is what the others need)."""
