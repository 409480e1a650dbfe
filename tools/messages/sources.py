"""What the generator reads: per library, the repository or wheels, the releases and the paths in them."""
from __future__ import annotations

import os
import re

CACHE = os.environ.get("MESSAGES_CACHE", "/work/cache")
MIRROR = os.environ.get("MESSAGES_MIRROR", "/work/.mirror")

FA_TAGS = ["v1.0.9", "v2.0.9", "v2.1.2", "v2.2.5", "v2.3.6", "v2.4.2", "v2.5.9", "v2.6.3", "v2.7.4", "v2.8.3"]
FA4_TAGS = ["fa4-v4.0.0.beta0", "fa4-v4.0.0.beta5", "fa4-v4.0.0.beta10", "fa4-v4.0.0.beta15",
            "fa4-v4.0.0.beta20", "fa4-v4.0.0.beta27"]
TE_TAGS = ["v1.0", "v1.3", "v1.6", "v1.9", "v1.11", "v1.13", "v2.0", "v2.2", "v2.4", "v2.6", "v2.8", "v2.10",
           "v2.12", "v2.14", "v2.16", "v2.18"]
CUDNN_FE_TAGS = ["v1.0.0", "v1.2.0", "v1.4.0", "v1.6.0", "v1.8.0", "v1.10.0", "v1.12.0", "v1.14.0", "v1.16.0",
                 "v1.18.0", "v1.20.0", "v1.23.0"]
XFORMERS_TAGS = ["v0.0.23", "v0.0.25", "v0.0.27", "v0.0.28.post3", "v0.0.29", "v0.0.30", "v0.0.32", "v0.0.35"]

_TORCH_FUNCS = re.compile(r"^(scaled_dot_product_attention|multi_head_attention_forward|_in_projection.*|"
                          r"_mha_shape_check|_canonical_mask|_none_or_dtype)$")
_ATTN_FUNCS = re.compile(r"(flash|flex|sdpa|attn|attention|cudnn|xformers)", re.I)
_ATTN_TEXT = re.compile(r"(attention|attn|flash|flex|sdpa|fa3|fa4|flashinfer|flashmla|head.?dim|head.?size|"
                        r"kv.?cache|backend|triton|cudnn|sliding|window|softcap|mla)", re.I)

_MEGATRON_TEXT = re.compile(r"(attention|attn|\bflash|sdpa|head.?dim|kv.?channels|window|(?-i:\bTE\b)|transformer.?engine|"
                            r"fp8|context.?parallel|\bcp\b|cp.comm|\bmla\b|multi.latent|NVTE_)", re.I)
"""Megatron's config and argument checks that reach attention: backends, TransformerEngine, fp8, head sizes, windows
and context parallelism."""
_TRAIN_TEXT = re.compile(r"(attention|attn|\bflash(?![ _-]?(optim|ckpt|checkpoint|adamw))|\bflex[ _]?att|sdpa|\bsdp_|"
                         r"xformers|\beager\b|\bfa[234]\b|head.?dim|head.?size|sliding|window|softcap|kv.?cache|varlen|"
                         r"packing|padding.?free|capability|bfloat16)", re.I)
"""What of a training framework's checks is about attention: the implementation chosen, packing (which needs a
varlen kernel), head sizes, windows, and the GPU features (capability, bf16) the kernels depend on."""
_TRITON_DOT = re.compile(r"\b(first|second) input\b|\bdot\b|min_dot_size|input_precision|fp8e4b15|gfx942", re.I)
"""Of triton's language checks, those of tl.dot: the matmuls of attention kernels written in Triton (FlexAttention's,
SageAttention 1's, flash-linear-attention's), whose operand shapes and dtypes the checks state."""
_GPU_DTYPE_TEXT = re.compile(r"bfloat16|compute capability", re.I)
"""A serving engine's check that the GPU takes the model's dtype (bf16 needs sm80): the attention kernels' dtype."""
_TGI_TEXT = re.compile(_ATTN_TEXT.pattern + r"|capability", re.I)
"""TGI's model registry turns its flash-attention models off by the GPU's capability, in words that name no attention."""
_VLLM_PLATFORM_TEXT = re.compile(_ATTN_TEXT.pattern + "|" + _GPU_DTYPE_TEXT.pattern, re.I)
_KV_CACHE_MEMORY_TEXT = re.compile(r"cache blocks|KV cache|max_model_len|max seq len|gpu_memory_utilization|"
                                   r"num_gpu_blocks", re.I)
"""A serving engine's check that the attention's KV cache fits the GPU memory left after the weights (no memory for
the cache blocks, a max_model_len longer than the cache holds): the sizing users change with gpu_memory_utilization."""
_VLLM_WORKER_TEXT = re.compile(_GPU_DTYPE_TEXT.pattern + "|" + _KV_CACHE_MEMORY_TEXT.pattern, re.I)
_SGLANG_FA4 = re.compile(r"^sglang/(jit_kernel/flash_att(n|ention)|kernels/ops/attention/flash_attn)/cute/[^/]+\.py$")
"""SGLang's own copy of flash-attn 4 (cute/), which SGLang's FA4 backend runs instead of the flash-attn-4 package."""
_TRITON_RESOURCES = re.compile(r"out of resource|shared memory|hardware limit|num_warps|num_stages", re.I)
"""What of triton 1.x/2.0's one-file compiler (code_gen.py, compiler.py) reaches attention users: a kernel's tiles
that do not fit the GPU, not the language's own compile errors."""
_SERVING_CONFIG_TEXT = re.compile(r"(attention|\battn\b|flash.?attn|flex|sdpa|\bFA ?[234]\b|flashmla|head.?(dim|size)|"
                                  r"kv.?cache.?(dtype|layout|scal)|kv-cache-dtype|store kv cache|"
                                  r"(fp8|fp4|nvfp4|int8|E2M1\)) KV cache|sliding.?window|softcap|\bMLA\b|cascade|"
                                  r"trtllm_(mha|mla))", re.I)
"""What of a serving engine's configuration and start-up code is about attention: backends, head sizes, the KV
cache's dtype and layout, sliding windows, MLA (not distributed executors, MoE, all2all or structured-output
backends)."""

_VLLM_MODELS = r"^vllm/model_executor/models/[^/]+\.py$"
_SGLANG_MODELS = r"^sglang/srt/models/[^/]+\.py$"
_SERVING_MODEL_TEXT = re.compile(r"^(?!.*(\bmoe|expert|a2a|all-to-all|linear.?backend|offload))"
                                 r".*(backend|flash.?att|\bflex|sdpa|xformers|\bFA ?[234]\b|flashinfer|flashmla|"
                                 r"sliding.?window|softcap|head.?(dim|size)|kv.?cache|\bMLA\b)", re.I | re.S)
"""What of a serving engine's model files is about its attention kernels: a backend a model or its vision tower does
not take, a sliding window on some layers only, head sizes, the KV cache. Not "attention" alone: those files keep
transformers' own checks word for word ("Attention mask should be of size ..."), which are transformers', and
their mixture-of-experts runners are "backends" too."""

_GGML_FA_TEXT = re.compile(r"flash|fattn|FLASH_ATTN|\bFA\b", re.I)
"""What of llama.cpp's context, graph and argument code is about its flash attention (turned off for a model, a LoRA
or a GPU; required by a quantized V cache)."""

_CUDA_TEXT = re.compile(r"(CUDA|cuda|nvcc|compute capability|compiled|sm_\d|arch|capability)")
"""What of torch's CUDA set-up and extension builder reaches attention users: torch without CUDA, a GPU torch was
not built for, the CUDA version an extension (flash-attn, TransformerEngine) is compiled against."""

_HF_MODELS = (r"^transformers/models/(llama|mistral|mixtral|qwen2|qwen2_moe|qwen2_vl|qwen2_5_vl|qwen3|qwen3_moe|gemma|"
              r"gemma2|gemma3|phi|phi3|starcoder2|falcon|gpt_neox|gpt2|whisper|wav2vec2|bert|clip|siglip|olmo|"
              r"cohere|mllama|llava|deepseek_v3|idefics2|jamba|bart|t5)/modeling_[^/]+\.py$")
"""The model families most threads run; their modeling files print the attention-implementation warnings
(SDPA falling back for output_attentions, sliding windows not implemented for sdpa)."""

# Each source: library, repo (upstream, for citation), how to read it, and which paths count.
# `library` may be a function of the path where one repository holds several libraries.


def fa_library(path: str, ref: str = "") -> str | None:
    """FA4 releases are the fa4-* tags; FA2 and FA3 (hopper/) releases are the v2.x tags."""
    if ref.startswith("fa4-"):
        return "flash-attn-4" if path.startswith("flash_attn/cute/") else None
    if path.startswith("flash_attn/cute/"):
        return None
    if path.startswith("hopper/"):
        return "flash-attn-3"
    return "flash-attn"


SOURCES = [
    {
        "name": "flash-attention", "repo": "Dao-AILab/flash-attention", "git": "Dao-AILab+flash-attention",
        "refs": FA_TAGS + FA4_TAGS, "library": fa_library,
        "include": [r"^setup\.py$", r"^hopper/setup\.py$", r"^csrc/flash_attn/flash_api\.cpp$", r"^csrc/flash_attn/fmha_api\.cpp$", r"^csrc/flash_attn_ck/[^/]+\.cpp$", r"^flash_attn/[^/]+\.py$", r"^hopper/[^/]+\.(cpp|py)$",
                    r"^flash_attn/cute/[^/]+\.py$", r"^flash_attn/(ops/triton|layers)/rotary\.py$"],
    },
    {
        "name": "flash-attn-4-wheels", "repo": "Dao-AILab/flash-attention", "wheels": "flash-attn-4-*",
        "library": lambda p, ref="": "flash-attn-4", "include": [r"^flash_attn/cute/[^/]+\.py$"],
    },
    {
        "name": "transformer-engine", "repo": "NVIDIA/TransformerEngine", "git": "NVIDIA+TransformerEngine",
        "refs": TE_TAGS, "library": lambda p, ref="": "transformer-engine",
        "include": [r"^transformer_engine/pytorch/attention/.*\.py$", r"^transformer_engine/pytorch/attention\.py$",
                    r"^transformer_engine/pytorch/dot_product_attention/.*\.py$",
                    r"^transformer_engine/common/fused_attn/[^/]+\.(cpp|cu|h)$",
                    r"^transformer_engine/pytorch/utils\.py$", r"^transformer_engine/common/__init__\.py$",
                    r"^transformer_engine/pytorch/__init__\.py$"],
    },
    {
        "name": "cudnn-frontend", "repo": "NVIDIA/cudnn-frontend", "git": "NVIDIA+cudnn-frontend",
        "refs": CUDNN_FE_TAGS, "library": lambda p, ref="": "cudnn-frontend",
        "include": [r"^include/cudnn_frontend/.*\.h$", r"^python/cudnn/[^/]+\.py$", r"^include/cudnn_frontend[^/]*\.h$"],
    },
    {
        "name": "cudnn-frontend-wheels", "repo": "NVIDIA/cudnn-frontend", "wheels": "nvidia-cudnn-frontend-*",
        "library": lambda p, ref="": "cudnn-frontend",
        "include": [r"(^|/)include/cudnn_frontend/.*\.h$", r"^cudnn/[^/]+\.py$"],
    },
    {
        "name": "xformers", "repo": "facebookresearch/xformers", "git": "facebookresearch+xformers",
        "refs": XFORMERS_TAGS, "library": lambda p, ref="": "xformers",
        # the C++ of its memory-efficient kernels: what a bare TORCH_CHECK there prints is pasted as is
        # _cpp_lib.py: the extension built for another torch, CUDA or Python ("xFormers was built for: ...")
        "include": [r"^xformers/ops/fmha/[^/]+\.py$", r"^xformers/csrc/attention/(?!.*/(autogen|instances)/).+\.(cu|cuh|h|cpp)$",
                    r"^xformers/_cpp_lib\.py$"],
    },
    {
        "name": "llamafactory", "repo": "hiyouga/LLaMA-Factory", "git": "hiyouga+LLaMA-Factory",
        "refs": ["v0.8.3", "v0.9.1", "v0.9.3", "v0.9.5"], "library": lambda p, ref="": "llamafactory",
        "include": [r"^src/llamafactory/model/model_utils/(attention|packing|longlora|visual)\.py$",
                    r"^src/llamafactory/hparams/(model_args|parser|finetuning_args)\.py$"],
        "text": {r"^src/llamafactory/hparams/": _ATTN_TEXT},
    },
    {
        "name": "megatron", "repo": "NVIDIA/Megatron-LM", "git": "NVIDIA+Megatron-LM",
        "refs": ["core_v0.8.0", "core_v0.10.0", "core_v0.13.0", "core_v0.15.0", "core_v0.19.0"],
        "library": lambda p, ref="": "megatron",
        "include": [r"^megatron/core/transformer/(attention|dot_product_attention|multi_latent_attention)\.py$",
                    r"^megatron/core/(extensions|transformer/custom_layers)/transformer_engine\.py$",
                    r"^megatron/core/transformer/transformer_config\.py$", r"^megatron/training/arguments\.py$",
                    r"^megatron/core/models/common/language_module/language_module\.py$",
                    r"^megatron/legacy/model/transformer\.py$"],
        "text": {r"^megatron/(core/transformer/transformer_config|training/arguments|core/models/common/)": _MEGATRON_TEXT},
        # --flash-attention-version is the major version chosen (2, 3 or 4), not the installed flash-attn's version
        "not_facts": frozenset({"flash_attention_version"}),
    },
    {
        "name": "ms-swift", "repo": "modelscope/ms-swift", "git": "modelscope+ms-swift",
        "refs": ["v2.4.2", "v3.2.2", "v3.9.3", "v4.5.2"], "library": lambda p, ref="": "ms-swift",
        "include": [r"^swift/llm/(utils/(argument|model|utils)|sft|rlhf)\.py$", r"^swift/(llm/)?(argument|arguments)/.*\.py$",
                    r"^swift/(llm/)?model/(patcher|utils|register)\.py$", r"^swift/(llm/)?(train|pipelines/train)/(sft|rlhf)\.py$",
                    r"^swift/(llm/)?template/base\.py$", r"^swift/megatron/(argument|arguments|trainers)/[^/]+\.py$",
                    r"^swift/megatron/model/utils\.py$", r"^swift/(trainers/)?sequence_parallel/[^/]+\.py$",
                    r"^swift/tuners/longlora/llama\.py$"],
        "text": {r"^swift/": _TRAIN_TEXT},
    },
    {
        "name": "unsloth-wheels", "repo": "unslothai/unsloth", "wheels": "unsloth-2*", "prints": True,
        "library": lambda p, ref="": "unsloth",
        "include": [r"^unsloth/(__init__|_gpu_init|import_fixes|trainer|context_parallel)\.py$",
                    r"^unsloth/models/[^/]+\.py$", r"^unsloth/kernels/(flex_attention|utils)\.py$",
                    r"^unsloth/utils/[^/]+\.py$"],
        "text": {r"^unsloth/": _TRAIN_TEXT},
    },
    {
        "name": "axolotl", "repo": "axolotl-ai-cloud/axolotl", "git": "axolotl-ai-cloud+axolotl",
        "refs": ["v0.6.0", "v0.9.2", "v0.13.0", "v0.18.0"], "library": lambda p, ref="": "axolotl",
        "include": [r"^src/axolotl/utils/(config|schemas)/.*\.py$", r"^src/axolotl/monkeypatch/(.*/)?[^/]*(attn|attention)[^/]*(/.*)?\.py$",
                    r"^src/axolotl/(loaders/patch_manager|utils/models)\.py$"],
        "text": {r"^src/axolotl/": _TRAIN_TEXT},
    },
    {
        "name": "sageattention", "repo": "thu-ml/SageAttention", "git": "thu-ml+SageAttention",
        "refs": ["v2.0.1", "v2.2.0"], "library": lambda p, ref="": "sageattention",
        # setup.py: what a build from source prints (most Windows and ComfyUI installs build it)
        "include": [r"^sageattention/[^/]+\.py$", r"^csrc/[^/]+\.(cpp|cu|h)$", r"^setup\.py$"],
    },
    {
        # the 1.x releases (Triton kernels) are on PyPI only: the repository's tags start at 2.0
        "name": "sageattention-wheels", "repo": "thu-ml/SageAttention", "wheels": "sageattention-*",
        "library": lambda p, ref="": "sageattention", "include": [r"^sageattention/.*\.py$"],
    },
    {
        # Hugging Face's kernel hub client, through which transformers loads kernels-community/flash-attn and others:
        # why a hub kernel has no build for this machine (each build variant's reason=...), and its loading errors
        "name": "kernels-wheels", "repo": "huggingface/kernels", "wheels": "kernels-*", "reasons": True,
        "library": lambda p, ref="": "kernels",
        "include": [r"^kernels/(?!benchmark|cli/)[^/]+\.py$", r"^kernels/layer/[^/]+\.py$"],
    },
    {
        # neighborhood attention: its Python checks (0.17 on: natten/utils/checks.py, backends/) and its extension's
        # TORCH_CHECKs, through CHECK_CONTIGUOUS/CHECK_CUDA (csrc/include/natten/helpers.h)
        "name": "natten", "repo": "SHI-Labs/NATTEN", "git": "SHI-Labs+NATTEN",
        "refs": ["v0.14.6", "v0.15.1", "v0.17.5", "v0.20.1", "v0.21.6"], "library": lambda p, ref="": "natten",
        "check_macros": True,
        "include": [r"^src/natten/(?!flops|profiler|profiling_utils/|autotuner/)[^/]+\.py$",
                    r"^src/natten/(utils|backends|backends/configs|backends/configs/[^/]+|token_permute)/[^/]+\.py$",
                    r"^src/natten/csrc/[^/]+\.(h|cpp)$", r"^src/natten/csrc/cuda/[^/]+\.(cu|cuh)$",
                    r"^csrc/include/natten/(pytorch/)?helpers\.h$", r"^csrc/src/[^/]+\.(cu|cpp)$",
                    r"^csrc/src/pytorch/[^/]+\.(cu|cpp)$"],
    },
    {
        "name": "tgi", "repo": "huggingface/text-generation-inference", "git": "huggingface+text-generation-inference",
        "refs": ["v0.9.0", "v1.0.3", "v1.4.5", "v2.0.4", "v2.4.1", "v3.3.7"], "library": lambda p, ref="": "tgi",
        "include": [r"^server/text_generation_server/utils/(flash_attn|flash_attn_triton|paged_attention|"
                    r"import_utils)\.py$", r"^server/text_generation_server/layers/attention/[^/]+\.py$",
                    r"^server/text_generation_server/models/__init__\.py$"],
        "text": {r"^server/text_generation_server/(models/__init__|utils/import_utils)\.py$": _TGI_TEXT},
    },
    {
        "name": "torch-wheels", "repo": "pytorch/pytorch", "wheels": "torch-*",
        "library": lambda p, ref="": "inductor" if p.startswith("torch/_inductor/") else "pytorch",
        "include": [r"^torch/include/ATen/native/transformers/.*\.h$", r"^torch/nn/attention/[^/]+\.py$",
                    r"^torch/nn/attention/experimental/[^/]+\.py$",
                    r"^torch/nn/functional\.py$", r"^torch/_higher_order_ops/flex_attention\.py$",
                    r"^torch/nested/_internal/sdpa\.py$", r"^torch/_inductor/kernel/flex/[^/]+\.py$",
                    r"^torch/_inductor/kernel/flex_(attention|decoding)\.py$",
                    r"^torch/_inductor/select_algorithm\.py$", r"^torch/_inductor/autotune_process\.py$",
                    r"^torch/cuda/__init__\.py$", r"^torch/utils/cpp_extension\.py$"],
        "scope": {r"^torch/nn/functional\.py$": _TORCH_FUNCS},
        "text": {r"^torch/(cuda/__init__|utils/cpp_extension)\.py$": _CUDA_TEXT},
    },
    {
        "name": "pytorch-debian-source", "repo": "pytorch/pytorch", "tarballs": "debsrc/pytorch_*.orig.tar.xz",
        "library": lambda p, ref="": "pytorch", "check_macros": True,
        "include": [r"^aten/src/ATen/native/transformers/.*\.(cpp|cu|h|hip)$",
                    r"^aten/src/ATen/native/nested/.*(sdp|attention|transformer).*\.(cpp|cu|h)$"],
    },
    {
        "name": "transformers-wheels", "repo": "huggingface/transformers", "wheels": "transformers-*",
        "library": lambda p, ref="": "transformers",
        "include": [r"^transformers/integrations/[^/]*(attention|attn)[^/]*\.py$",
                    r"^transformers/modeling_flash_attention_utils\.py$", r"^transformers/utils/import_utils\.py$",
                    r"^transformers/modeling_utils\.py$", r"^transformers/masking_utils\.py$",
                    r"^transformers/configuration_utils\.py$", _HF_MODELS],
        "scope": {r"^transformers/(utils/import_utils|modeling_utils|masking_utils|configuration_utils)\.py$":
                  _ATTN_FUNCS},
        "text": {_HF_MODELS: _ATTN_TEXT},
    },
    {
        # JAX's cuDNN attention (jax.nn.dot_product_attention(implementation="cudnn") builds a cuDNN SDPA graph) and
        # its Pallas GPU attention kernels; pure-Python wheels
        "name": "jax-wheels", "repo": "jax-ml/jax", "wheels": "jax-*", "library": lambda p, ref="": "jax",
        "include": [r"^jax/_src/cudnn/fused_attention_stablehlo\.py$", r"^jax/_src/nn/functions\.py$",
                    r"^jax/experimental/pallas/ops/gpu/(attention|attention_mgpu|decode_attention|"
                    r"paged_attention)\.py$"],
        "scope": {r"^jax/_src/nn/functions\.py$": _ATTN_FUNCS},
    },
    {
        "name": "diffusers-wheels", "repo": "huggingface/diffusers", "wheels": "diffusers-*",
        "library": lambda p, ref="": "diffusers",
        "include": [r"^diffusers/models/attention_dispatch\.py$", r"^diffusers/models/attention_processor\.py$",
                    r"^diffusers/models/attention\.py$"],
    },
    {
        "name": "vllm-wheels", "repo": "vllm-project/vllm", "wheels": "vllm-*", "library": lambda p, ref="": "vllm",
        "include": [r"^vllm/attention/selector\.py$", r"^vllm/platforms/cuda\.py$",
                    r"^vllm/attention/backends/[^/]+\.py$", r"^vllm/v1/attention/backends/[^/]+\.py$",
                    r"^vllm/v1/attention/backends/mla/[^/]+\.py$", r"^vllm/v1/attention/selector\.py$",
                    r"^vllm/attention/layer\.py$", r"^vllm/platforms/interface\.py$",
                    r"^vllm/attention/utils/fa_utils\.py$", r"^vllm/vllm_flash_attn/[^/]+\.py$",
                    r"^vllm/attention/ops/[^/]+\.py$", r"^vllm/v1/attention/ops/[^/]+\.py$",
                    r"^vllm/model_executor/layers/attention/[^/]+\.py$",
                    r"^vllm/config(/[^/]+)?\.py$", r"^vllm/engine/arg_utils\.py$",
                    r"^vllm/(v1/)?worker/(gpu_)?worker\.py$", r"^vllm/v1/core/kv_cache_utils\.py$", _VLLM_MODELS],
        "text": {r"^vllm/platforms/(cuda|interface)\.py$": _VLLM_PLATFORM_TEXT,
                 _VLLM_MODELS: _SERVING_MODEL_TEXT,
                 r"^vllm/(v1/)?worker/(gpu_)?worker\.py$": _VLLM_WORKER_TEXT,
                 r"^vllm/v1/core/kv_cache_utils\.py$": _KV_CACHE_MEMORY_TEXT,
                 r"^vllm/(config(/[^/]+)?|engine/arg_utils)\.py$": _SERVING_CONFIG_TEXT},
    },
    {
        "name": "sglang-wheels", "repo": "sgl-project/sglang", "wheels": "sglang-*", "library": lambda p, ref="": "sglang",
        "include": [r"^sglang/srt/layers/attention/[^/]+\.py$", r"^sglang/srt/server_args\.py$", _SGLANG_FA4.pattern,
                    r"^sglang/srt/layers/attention/(?!(fla|linear|mamba)/).+/[^/]+\.py$",
                    r"^sglang/srt/model_executor/model_runner\.py$", _SGLANG_MODELS],
        "vendored": {_SGLANG_FA4.pattern: "flash-attn-4"},
        "text": {r"^sglang/srt/server_args\.py$": _ATTN_TEXT,
                 _SGLANG_MODELS: _SERVING_MODEL_TEXT,
                 r"^sglang/srt/model_executor/model_runner\.py$": _SERVING_CONFIG_TEXT},
    },
    {
        "name": "flashinfer-0.1", "repo": "flashinfer-ai/flashinfer", "git": "flashinfer-ai+flashinfer",
        "refs": ["v0.1.0", "v0.1.3", "v0.1.6"], "library": lambda p, ref="": "flashinfer", "stringizing": True,
        # 0.1.x is on no package index (flashinfer-python starts at 0.2.0): its tags, with the torch bindings under
        # python/csrc/ and the Python API under python/flashinfer/
        "include": [r"^python/flashinfer/(__init__|prefill|decode|cascade|sparse|page|utils)\.py$",
                    r"^python/csrc/[^/]*(prefill|decode|attention|cascade|page)[^/]*\.(cu|cuh|h|cpp)$",
                    r"^include/flashinfer/(utils\.cuh|attention/.+\.(cuh|h))$"],
    },
    {
        "name": "flashinfer-wheels", "repo": "flashinfer-ai/flashinfer", "wheels": "flashinfer-python-*",
        "library": lambda p, ref="": "flashinfer", "stringizing": True,
        "include": [r"^flashinfer/(__init__|prefill|decode|mla|pod|cascade|sparse|page|attention|utils|xqa|aot|"
                    r"compilation_context|cuda_utils)\.py$",
                    r"^flashinfer/jit/(__init__|core|env|cpp_ext|utils|cubin_loader|attention)\.py$",
                    r"^flashinfer/jit/attention/[^/]+\.py$", r"^flashinfer/cudnn/(decode|prefill|utils)\.py$",
                    r"^flashinfer/attention/[^/]+\.py$", r"^flashinfer/attention/cute_dsl/[^/]+\.py$",
                    # the C++ sources: in the sdists at the root, in the wheels under flashinfer/data/
                    r"^(flashinfer/data/)?csrc/[^/]*(prefill|decode|attention|mla|pod|cascade|page|fmha|xqa|sdpa)"
                    r"[^/]*\.(cu|cuh|h|cpp)$", r"^(flashinfer/data/)?csrc/xqa/[^/]+\.(cu|cuh|h|cpp)$",
                    r"^(flashinfer/data/)?include/flashinfer/(utils\.cuh|allocator\.h|attention/.+\.(cuh|h)|"
                    r"trtllm/fmha/.+\.(cuh|h))$"],
    },
    {
        # llama.cpp (ggml) as llama-cpp-python's source distributions vendor it under vendor/llama.cpp (commits
        # 9c77ec1d 0.2.79, 1d1ccce6 0.2.90, 74d73dc8 0.3.2, 7841fc72 0.3.8, 4227c9be 0.3.16, 7c158fbb 0.3.26,
        # 0c1e5709 0.3.36): its CUDA flash attention (fattn*) and what the context prints when it turns flash
        # attention on or off; Ollama builds the same files
        "name": "llama-cpp-sdists", "repo": "abetlen/llama-cpp-python", "wheels": "llama-cpp-python-*",
        "library": lambda p, ref="": "llama-cpp", "check_macros": True,
        # ggml.h: how the release's GGML_ASSERT prints (before ggml_abort: "GGML_ASSERT: file:line: cond")
        "include": [r"^vendor/llama\.cpp/(ggml/include/)?ggml\.h$",
                    r"^vendor/llama\.cpp/(ggml/src/)?ggml-cuda/fattn[^/]*\.(cu|cuh)$",
                    r"^vendor/llama\.cpp/(src/)?llama(-context|-graph|-model)?\.cpp$",
                    r"^vendor/llama\.cpp/common/(arg|common)\.cpp$"],
        "text": {r"/(llama(-context|-graph|-model)?|arg|common)\.cpp$|/ggml\.h$": _GGML_FA_TEXT},
    },
    {
        "name": "triton-wheels", "repo": "triton-lang/triton", "wheels": "triton-*", "library": lambda p, ref="": "triton",
        "include": [r"^triton/runtime/[^/]+\.py$", r"^triton/compiler/compiler\.py$", r"^triton/compiler\.py$",
                    r"^triton/language/semantic\.py$",
                    r"^triton/code_gen\.py$"],
        "text": {r"^triton/(compiler|code_gen)\.py$": _TRITON_RESOURCES, r"^triton/language/semantic\.py$": _TRITON_DOT},
    },
]

SDPA = ["sdpa-flash", "sdpa-efficient", "sdpa-cudnn", "sdpa-math"]
"""Every backend of PyTorch's scaled_dot_product_attention."""
TRAINING = ("megatron", "ms-swift", "unsloth", "axolotl")
"""Training frameworks: every backend their message names counts (a check may list several implementations)."""
FRAMEWORKS = ("transformers", "vllm", "sglang", "diffusers", "tgi")
"""Model and serving libraries: the first backend their message names counts."""
_STATUS_FIELD = re.compile(r"\b[\w.]+ ?= ?\{[^{}]*\}")
"""`FA2 = {has_flash_attention}` in a start-up banner reports a state, whatever it is; it names no backend in use."""

# Backend ids named by a message's own words, tried before the file's default.
TEXT_BACKENDS = [
    (re.compile(r"\bcuDNN attention|CuDNN attention|cudnn_attention|cuDNN SDPA|cuDNN MHA|\bcuDNN\b", re.I), "sdpa-cudnn",
     {"pytorch"}),
    (re.compile(r"\bflash attention|flash_attention\b|FlashAttention", re.I), "sdpa-flash", {"pytorch"}),
    (re.compile(r"mem(ory)?[ _]eff(icient)?|efficient[ _]attention", re.I), "sdpa-efficient", {"pytorch"}),
    (re.compile(r"\bboth fused kernels\b", re.I), "sdpa-flash,sdpa-efficient", {"pytorch"}),
    (re.compile(r"FlashAttention|flash[_ -]?attn|flash attention", re.I), "te-flash", {"transformer-engine"}),
    (re.compile(r"FusedAttention|fused[_ ]attn|fused attention|cuDNN", re.I), "te-fused", {"transformer-engine"}),
    (re.compile(r"UnfusedDotProductAttention|unfused", re.I), "te-unfused", {"transformer-engine"}),
    (re.compile(r"flash[_ -]?(attention|attn)[_ -]?(v)?3|\bFA[_ -]?(version )?3\b|flash_?attn_hopper", re.I), "flash-attn-3",
     set(FRAMEWORKS)),
    # "Hopper" in a training framework's check names the GPU (fp8, TMA), not the hopper/ build of flash-attn
    (re.compile(r"flash[_ -]?(attention|attn)[_ -]?(v)?3|\bFA[_ -]?(version )?3\b", re.I), "flash-attn-3", set(TRAINING)),
    (re.compile(r"flash[_ -]?(attention|attn)[_ -]?(v)?4|\bFA[_ -]?(version )?4\b", re.I), "flash-attn-4",
     {*FRAMEWORKS, *TRAINING}),
    (re.compile(r"flash[_ -]?(attention|attn)[_ -]?(v)?2|\bFA[_ -]?(version )?2\b", re.I), "flash-attn-2",
     {*FRAMEWORKS, *TRAINING}),
    (re.compile(r"\bflex[_ ]?attention|FlexAttention|FLEX_ATTENTION", re.I), "flex-attention",
     {*FRAMEWORKS, *TRAINING}),
    (re.compile(r"\bsdpa\b|SdpaAttention|scaled_dot_product_attention|native attention", re.I),
     ",".join(SDPA), {"transformers", "diffusers", "ms-swift", "unsloth", "axolotl", "vllm",
                                                       "sglang"}),
    # axolotl's `sdp_attention: true` selects torch's scaled_dot_product_attention
    (re.compile(r"\bsdp_attention\b"), ",".join(SDPA), {"axolotl"}),
    # these frameworks' flash option and the flash-attn package they import are FlashAttention-2 unless a version is
    # named (transformers' "Flash Attention version of Qwen2_5_VL" is its flash_attention_2 path); a gloss in
    # parentheses ("Xformers (Flash Attention)") describes another library
    (re.compile(r"(?<!\()\bflash[_ -]?(attention|attn)(?![_ -]?(v|version|ver)?[ :=]*[34{])", re.I), "flash-attn-2",
     {"ms-swift", "unsloth", "axolotl", "transformers"}),
    (re.compile(r"flash-attn package|flash_attn_with_kvcache|flash[_ ]attn ver[si]*on v2\.", re.I), "flash-attn-2",
     {"megatron"}),
    # Megatron's --attention-backend picks TransformerEngine's backends through NVTE_FLASH_ATTN / NVTE_FUSED_ATTN /
    # NVTE_UNFUSED_ATTN (megatron/core/models/common/language_module/language_module.py)
    (re.compile(r"attention.backend[ =:]*'?flash\b|AttnBackend\.flash|NVTE_FLASH_ATTN\b"), "te-flash", {"megatron"}),
    (re.compile(r"FusedAttention|fused[_ ]attn(ention)?\b|attention.backend[ =:]*'?fused\b|AttnBackend\.fused|"
                r"NVTE_FUSED_ATTN\b", re.I), "te-fused", {"megatron"}),
    (re.compile(r"UnfusedDotProductAttention|\bunfused\b|NVTE_UNFUSED_ATTN\b", re.I), "te-unfused", {"megatron"}),
]


def default_backends(library: str, path: str) -> list:
    """A message's backend follows from the file it lives in where its words name none."""
    if library == "flash-attn":
        return ["flash-attn-2"]
    if library in ("flash-attn-3", "flash-attn-4"):
        return [library]
    if library == "transformer-engine" and "/fused_attn/" in path:
        return ["te-fused"]
    if library == "cudnn-frontend" and re.search(r"sdpa|scaled_dot_product", path, re.I):
        return ["cudnn-fe"]
    if library == "pytorch" and "/flash_attn/" in path:
        return ["sdpa-flash"]
    if library == "pytorch" and "/mem_eff_attention/" in path:
        return ["sdpa-efficient"]
    if library == "pytorch" and re.search(r"/transformers/(cuda/|hip/)?sdp_utils(_cpp)?\.(h|cpp)$", path):
        # the shape and dtype checks the fused kernels' selection runs (check_tensor_shapes and its kin)
        return ["sdpa-flash", "sdpa-efficient", "sdpa-cudnn"]
    if library in ("pytorch", "inductor") and re.search(r"flex", path):
        return ["flex-attention"]
    if library == "transformers" and re.search(r"flex_attention", path):
        return ["flex-attention"]
    if library == "transformers" and re.search(r"flash_attention|flash_attn", path):
        return ["flash-attn-2"]
    if library == "transformers" and re.search(r"sdpa_attention", path):
        return list(SDPA)
    if library in ("vllm", "sglang") and re.search(r"flex_attention|torch_flex_backend", path):
        return ["flex-attention"]
    if library == "vllm" and re.search(r"/attention/backends/torch_sdpa\.py$", path) or \
            library == "sglang" and path.endswith("/attention/torch_native_backend.py"):
        return list(SDPA)
    if library == "vllm" and re.search(r"^vllm/(v1/)?attention/backends/flash_attn\.py$", path):
        # this backend calls vllm_flash_attn at version 2 or 3 by GPU (vllm/attention/utils/fa_utils.py@wheel:vllm-0.11.0:36)
        return ["flash-attn-2", "flash-attn-3"]
    if library == "sglang" and path.endswith("/attention/flashattention_backend.py"):
        # sgl_kernel.flash_attn with fa_impl_ver=3 unless FA4 is asked for (flashattention_backend.py@wheel:sglang-0.5.3:307)
        return ["flash-attn-3"]
    if library == "sglang" and _SGLANG_FA4.search(path):
        return ["flash-attn-4"]
    if library == "jax" and path.startswith("jax/_src/cudnn/"):
        return ["cudnn-fe"]
    if library == "flashinfer" and path.startswith("flashinfer/cudnn/"):
        # FlashInfer's cuDNN prefill and decode build cudnn-frontend SDPA graphs (`import cudnn`, `graph.sdpa`)
        return ["cudnn-fe"]
    return []


def backends_for(library: str, path: str, template: str, scope: list = ()) -> list:
    """The message's own words name the backend more precisely than the file does."""
    if library == "cudnn-frontend" and re.search(r"\bsdpa|scaled.dot.product", template, re.I):
        return ["cudnn-fe"]
    if library in TRAINING:
        template = _STATUS_FIELD.sub("", template)
    if (library == "pytorch" and "flex" not in path) or library == "transformer-engine" or library in TRAINING:
        found: list = []
        for rx, names, libs in TEXT_BACKENDS:
            if library in libs and rx.search(template):
                for b in names.split(","):
                    if b not in found:
                        found.append(b)
        if found:
            return found
        if library == "pytorch" and scope:
            fn = scope[-1]
            if fn == "validate_sdpa_input":  # what scaled_dot_product_attention checks before it picks a backend
                return list(SDPA)
            for key, b in (("cudnn", "sdpa-cudnn"), ("flash", "sdpa-flash"), ("mem_eff", "sdpa-efficient"),
                           ("efficient_attention", "sdpa-efficient")):
                if key in fn:
                    return [b]
    elif library in FRAMEWORKS:
        for rx, names, libs in TEXT_BACKENDS:
            if library in libs and rx.search(template):
                return names.split(",")
    return default_backends(library, path)
