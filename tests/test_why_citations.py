"""The error catalogue's patterns find the messages as the libraries really print them (texts from the cited source or issue)."""

from __future__ import annotations

import re

import pytest

from attndoctor.why.catalogue import load_catalogue

# (entry id, where the text comes from, the real text, groups the match must give)
REAL_TEXTS = [
    ("PY-NONE-XFORMERS-ATTN-BIAS", "unslothai/unsloth#1617 (the SFT trainer, xformers not importing)",
     "When I am using either the unsloth trainer or the SFTTrainer, I get the error 'NoneType' object has no attribute "
     "'attn_bias'", {"name": "attn_bias"}),
    ("GGML-FA-KERNEL-ABORT", "ggml-org/llama.cpp#24400 (Tesla T4 on Kaggle, head size 512)",
     "Loading model... |/kaggle/working/llama.cpp/ggml/src/ggml-cuda/fattn.cu:110: fatal error", {"line": "110"}),
    ("GGML-FA-KERNEL-ABORT", "ggml-org/llama.cpp#24403 (gdb's backtrace, the abort's message not pasted)",
     "#6  0x00007ff35c609b33 in ggml_cuda_flash_attn_ext(ggml_backend_cuda_context&, ggml_tensor*) () from "
     "bin/libggml-cuda.so.0", {}),
    ("FACT-GGML-FATTN-CASE-FRAME", "ollama/ollama#15403 (the backtrace's frame, mangled)",
     "/tmp/daniel_ollama_test/lib/ollama/cuda_v12/libggml-cuda.so(_Z34ggml_cuda_flash_attn_ext_tile_caseILi512ELi512EEvR25"
     "ggml_backend_cuda_contextP11ggml_tensor+0x31a)[0x7f7d757fd3ca]", {"hdim": "512", "hdim_v": "512"}),
    ("GGML-FA-KERNEL-ABORT", "ollama/ollama#15403 (gemma4 on a GPU below compute capability 7.5)",
     "/ml/backend/ggml/ggml/src/ggml-cuda/template-instances/../fattn-tile.cuh:1247: fatal error", {"line": "1247"}),
    ("PY-NAME-FLASH-ATTN-NOT-DEFINED", "studio-dots-ai/dots.ocr#164 (Windows, CPU: no flash-attn)",
     "Error during processing: name '_flash_supports_window_size' is not defined",
     {"name": "_flash_supports_window_size"}),
    ("HIP-MATRIX-BUILTIN-NEEDS-TARGET-FEATURE", "llvm/llvm-project clang/test/SemaOpenCL (an MFMA builtin for a GPU without it)",
     "error: '__builtin_amdgcn_mfma_f32_32x32x1f32' needs target feature mai-insts",
     {"builtin": "__builtin_amdgcn_mfma_f32_32x32x1f32", "feature": "mai-insts"}),
    ("GGML-FA-UNSUPPORTED-KV-TYPE", "ggml-org/llama.cpp#8864 (test-backend-ops on the HIP backend)",
     "Unsupported KV type combination for head_size 64.\nBy default only f16 KV cache is supported.", {"hdim": "64"}),
    ("FA-UNPAD-INPUT-RETURN-COUNT", "Vchitect/DCM#17 (the call spans lines; the error follows its first)",
     "x_unpad, indices, cu_seqlens, max_s, used_seqlens_in_batch = unpad_input(\n"
     "ValueError: not enough values to unpack (expected 5, got 4)", {"wanted": "5"}),
    ("PY-NO-MODULE-SUBMODULE", "luka-group/mDPO#11 (transformers 4.32.1)",
     "ModuleNotFoundError: No module named 'transformers.cache_utils'",
     {"module": "transformers.cache_utils", "package": "transformers"}),
    ("PY-NO-MODULE-SUBMODULE", "ustc-time-series/Time-R1#1",
     "from transformers.modeling_flash_attention_utils import _flash_attention_forward\n"
     "ModuleNotFoundError: No module named 'transformers.modeling_flash_attention_utils'",
     {"module": "transformers.modeling_flash_attention_utils", "package": "transformers"}),
    ("GGML-NO-DEVICE-CODE", "mozilla-ai/llamafile#434 (a GPU of arch 600)",
     "ggml-cuda.cu:1412: ERROR: CUDA kernel vec_dot_q4_K_q8_1_impl_vmmq has no device code compatible with CUDA arch "
     "600. ggml-cuda.cu was compiled for: 500,600,700,800,900", {"kernel": "vec_dot_q4_K_q8_1_impl_vmmq", "arch": "600"}),
    ("GGML-NO-DEVICE-CODE", "ggml-org/llama.cpp#11615 (Volta, before the fix of the kernel selection)",
     "/home/ggml/work/llama.cpp/ggml/src/ggml-cuda/template-instances/../fattn-mma-f16.cuh:453: ERROR: CUDA kernel "
     "flash_attn_ext_f16_process_tile has no device code compatible with CUDA arch 700. ggml-cuda.cu was compiled for: "
     "700", {"kernel": "flash_attn_ext_f16_process_tile", "arch": "700"}),
    ("MPS-SDPA-MATMUL-SHAPES", "pytorch/pytorch#147443 (5-D inputs to SDPA on MPS)",
     'loc("mps_matmul"("(mpsFileLoc): /AppleInternal/Library/BuildRoots/b11baf73-9ee0-11ef-b7b4-7aebe1f78c73/Library/'
     'Caches/com.apple.xbs/Sources/MetalPerformanceShadersGraph/mpsgraph/MetalPerformanceShadersGraph/Core/Files/'
     'MPSGraphUtilities.mm":43:0)): error: incompatible dimensions', {}),
    ("TGI-FLASH-ATTENTION-OFF", "huggingface/text-generation-inference#714 (TGI 0.9.3 on H100s)",
     "NotImplementedError: Sharded Llama requires Flash Attention enabled models.", {"model": "Sharded Llama"}),
    ("TGI-FLASH-ATTENTION-OFF", "huggingface/text-generation-inference#1138 (an A800, StarCoder)",
     "NotImplementedError: Sharded Santacoder requires Flash Attention enabled models.",
     {"model": "Sharded Santacoder"}),
    ("CUTE-SM90-NO-GMMA-FP8-KV", "flashinfer-ai/flashinfer#1068 (FP8 query and KV cache, head dim 64)",
     'flashinfer/data/cutlass/include/cute/arch/mma_sm90.hpp(6108): error: static assertion failed with "MajorB must be '
     'GMMA::Major::K for this config."', {}),
    ("CUTE-SM90-NO-GMMA-FP8-KV", "flashinfer-ai/flashinfer#1304 (a bf16 query with an FP8 KV cache in vLLM's prefill)",
     'static_assert(sizeof(ElementA) == 0, "No eligible GMMA operator for request configuration.");', {}),
    ("TRITON-MMA-TO-MMA-LAYOUT", "ModelTC/LightLLM#222 (a V100, triton 2.1.0)",
     "python: /project/lib/Analysis/Allocation.cpp:40: std::pair<llvm::SmallVector<unsigned int>, llvm::SmallVector<"
     "unsigned int> > mlir::triton::getCvtOrder(mlir::Attribute, mlir::Attribute): Assertion `!(srcMmaLayout && "
     "dstMmaLayout) && \"Unexpected mma -> mma layout conversion\"'", {}),
    ("TRITON-MMA-TO-MMA-LAYOUT", "triton-lang/triton#2367 (an H100 with ENABLE_MMA_V3=1, a 2023 main build)",
     "python: /home/sam/triton/lib/Analysis/Allocation.cpp:42: std::pair<llvm::SmallVector<unsigned int>,\n "
     "llvm::SmallVector<unsigned int> > mlir::triton::getCvtOrder(mlir::Attribute, mlir::Attribute): \nAssertion "
     "`!(srcMmaLayout && dstMmaLayout) && \"Unexpected mma -> mma layout conversion\"' failed.", {}),
    ("CUBLAS-HANDLE-ALLOC-FAILED", "QwenLM/Qwen3#873 (solved on one GPU with enough free memory)",
     "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`", {}),
    ("CUBLAS-HANDLE-ALLOC-FAILED", "DeepMotionAIResearch/DenseMatchingBenchmark#20",
     "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`\nException raised from "
     "createCublasHandle at /opt/conda/conda-bld/pytorch_1595629403081/work/aten/src/ATen/cuda/CublasHandlePool.cpp:8 "
     "(most recent call first):", {}),
    ("CUBLAS-BF16-NOT-SUPPORTED", "numz/ComfyUI-SeedVR2_VideoUpscaler#314 (SDPA's math path in bfloat16)",
     "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmStridedBatchedEx(handle, opa, opb, "
     "(int)m, (int)n, (int)k, (void*)&falpha, a, CUDA_R_16BF, (int)lda, stridea, b, CUDA_R_16BF, (int)ldb, strideb, "
     "(void*)&fbeta, c, CUDA_R_16BF, (int)ldc, stridec, (int)num_batches, compute_type, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`",
     {"call": "cublasGemmStridedBatchedEx"}),
    ("CUBLAS-BF16-NOT-SUPPORTED", "pytorch/pytorch#57773 (a P100, CUDA 11.3)",
     "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmStridedBatchedExFix(handle, opa, "
     "opb,\n(int)m, (int)n, (int)k, (void*)&falpha, a, CUDA_R_16BF, (int)lda, stridea, b, CUDA_R_16BF, (int)ldb, "
     "strideb, (void*)&fbeta, c,\nCUDA_R_16BF, (int)ldc, stridec, (int)num_batches, CUDA_R_32F, "
     "CUBLAS_GEMM_DEFAULT_TENSOR_OP)", {"call": "cublasGemmStridedBatchedExFix"}),
    ("BUILD-COMPILER-COMMAND-FAILED", "Dao-AILab/flash-attention#298 (no ninja: the distutils backend runs nvcc itself)",
     "error: command '/opt/conda/bin/nvcc' failed with exit code 255", {"command": "/opt/conda/bin/nvcc"}),
    ("BUILD-COMPILER-COMMAND-FAILED", "Dao-AILab/flash-attention#639 (a cluster's CUDA 11.7 module)",
     "error: command '/opt/linux/centos/8.x/x86_64/pkgs/cuda/11.7/bin/nvcc' failed with exit code 1",
     {"command": "/opt/linux/centos/8.x/x86_64/pkgs/cuda/11.7/bin/nvcc"}),
    ("TORCH-WINDOWS-DLL-NOT-LOADED", "AUTOMATIC1111/stable-diffusion-webui#7198 (--reinstall-torch)",
     'OSError: [WinError 126] The specified module could not be found. Error loading "C:\\Users\\User\\\\AI\\stable-'
     'diffusion-webui\\venv\\lib\\site-packages\\torch\\lib\\cudnn_cnn_infer64_8.dll" or one of its dependencies.',
     {"winerror": "126", "dll": "cudnn_cnn_infer64_8.dll"}),
    ("TORCH-WINDOWS-DLL-NOT-LOADED", "erprogs/CViT#16 (a Chinese Windows; the CUDA environment set up again)",
     'OSError: [WinError 127] \u627e\u4e0d\u5230\u6307\u5b9a\u7684\u7a0b\u5e8f\u3002 Error loading "E:\\BIANCHENG\\'
     'Anaconda\\envs\\pytorch\\lib\\sitepackages\\torch\\lib\\cudnn_adv_infer64_8.dll" or one of its dependencies.',
     {"winerror": "127", "dll": "cudnn_adv_infer64_8.dll"}),
    ("TORCH-WINDOWS-DLL-NOT-LOADED", "nagadomi/nunif#701 (install the latest Visual C++ Redistributable)",
     '[WinError 1114] A dynamic link library (DLL) initialization routine failed. Error loading "...\\c10.dll" or one of '
     'its dependencies.', {"winerror": "1114", "dll": "c10.dll"}),
    ("TORCH-WINDOWS-DLL-NOT-LOADED", "vladmandic/sdnext#2332 (a paste that lost the path's opening quote)",
     'OSError: [WinError 126] The specified module cannot be found. Error loading ...stable\\automatic\\venv\\lib\\'
     'site-packages\\torch\\lib\\cudnn_cnn_infer64_8.dll" or one of its dependencies.',
     {"winerror": "126", "dll": "cudnn_cnn_infer64_8.dll"}),
    ("LOADER-CUDA-DRIVER-SYMBOL-MISSING", "sgl-project/sglang#8131 (sgl-kernel built with green contexts, a CUDA 12.4 "
     "driver)", "ImportError: /opt/conda/lib/python3.10/site-packages/sgl_kernel/common_ops.abi3.so: undefined symbol: "
     "cuGreenCtxStreamCreate", {"symbol": "cuGreenCtxStreamCreate"}),
    ("LOADER-CUDA-DRIVER-SYMBOL-MISSING", "sgl-project/sglang#8432 (driver 535)", "ImportError: /usr/local/lib/"
     "python3.11/site-packages/sgl_kernel/common_ops.abi3.so: undefined symbol: cuGreenCtxDestroy",
     {"symbol": "cuGreenCtxDestroy"}),
    ("NVCC-UNSUPPORTED-HOST-COMPILER", "Eyeline-Labs/FlashDepth#2 (a gcc newer than the CUDA toolkit supports)",
     "/usr/local/cuda/include/crt/host_config.h:143:2: error: #error -- unsupported GNU version! gcc versions later than "
     "12 are not supported! The nvcc flag '-allow-unsupported-compiler' can be used to override this version check; "
     "however, using an unsupported host compiler may cause compilation failure or incorrect run time execution. Use at "
     "your own risk.", {"compiler": "GNU"}),
    ("PTXAS-UNKNOWN-GPU-NAME", "ModelTC/LightLLM#176 (triton 2.0.0's ptxas on an RTX 4090; triton 2.1.0 fixed it)",
     "ptxas fatal   : Value 'sm_89' is not defined for option 'gpu-name'", {"arch": "sm_89"}),
    ("PTXAS-UNKNOWN-GPU-NAME", "gpustack/gpustack#4372 (GB10)",
     "ptxas fatal   : Value 'sm_121a' is not defined for option 'gpu-name'", {"arch": "sm_121a"}),
    ("TRITON-LIBCUDA-NOT-FOUND", "state-spaces/mamba#123 (triton's launcher linked with -lcuda)",
     "/usr/bin/ld: cannot find -lcuda\ncollect2: error: ld returned 1 exit status", {}),
    ("TRITON-LIBCUDA-NOT-FOUND", "HannesStark/boltzgen#2 (only libcuda.so.1 on the system)",
     "/usr/bin/ld: cannot find -lcuda: No such file or directory", {}),
    ("TE-BUILD-CUDNN-NOT-FOUND", "NVIDIA/TransformerEngine#954 (building TransformerEngine in a conda environment)",
     "CMake Error at cmake/FindCUDNN.cmake:19 (find_library):\n  Could not find cudnn_LIBRARY using the following names: "
     "cudnn, libcudnn.so.", {}),
    ("TE-BUILD-CUDNN-NOT-FOUND", "NVIDIA/TransformerEngine#516",
     "Could NOT find CUDNN (missing: CUDNN_INCLUDE_DIR CUDNN_LIBRARY)", {}),
    ("CUDNN-SUBLIBRARY-NOT-LOADED", "neuralgcm/neuralgcm#148 (JAX with a cuDNN 9.5.1 archive on LD_LIBRARY_PATH)",
     "Unable to load any of {libcudnn_engines_precompiled.so.9.5.1, libcudnn_engines_precompiled.so.9.5, "
     "libcudnn_engines_precompiled.so.9, libcudnn_engines_precompiled.so}",
     {"sublibrary": "libcudnn_engines_precompiled", "cudnn_version": "9.5.1"}),
    ("CUDNN-SUBLIBRARY-NOT-LOADED", "disler/always-on-ai-assistant#3 (fixed by installing libcudnn9-cuda-12)",
     "Error running on Linux: Unable to load any of {libcudnn_ops.so.9.1.0, libcudnn_ops.so.9.1, libcudnn_ops.so.9, "
     "libcudnn_ops.so}", {"sublibrary": "libcudnn_ops", "cudnn_version": "9.1.0"}),
    ("CUDNN-SUBLIBRARY-NOT-LOADED", "daswer123/xtts-finetune-webui#18 (the line after the one above)",
     "Invalid handle. Cannot load symbol cudnnCreateTensorDescriptor", {}),
    ("CUDNN-NVRTC-NOT-LOADED", "cocktailpeanut/fluxgym#208 (cuDNN 9 under sd-scripts' Flux training)",
     "[2024-10-26 12:00:35] [INFO] 0%|          | 0/22 [00:00<?, ?it/s]Could not load library libnvrtc.so.12. Error: "
     "libnvrtc.so.12: cannot open shared object file: No such file or directory",
     {"library": "libnvrtc.so.12", "nvrtc": "libnvrtc.so.12"}),
    ("CUDNN-NVRTC-NOT-LOADED", "vladmandic/sdnext#539 (cuDNN 8 with torch 2.0)",
     "Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so: cannot open shared object file: No such file "
     "or directory", {"library": "libcudnn_cnn_infer.so.8", "nvrtc": "libnvrtc.so"}),
    ("CUDNN-8-LIBRARY-NOT-LOADED", "jianchang512/stt#76 (fixed by apt install libcudnn8)",
     "Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open shared object file: "
     "No such file or directory", {"library": "libcudnn_ops_infer.so.8", "missing": "libcudnn_ops_infer.so.8"}),
    ("CUDNN-8-LIBRARY-NOT-LOADED", "TinyLLaVA/TinyLLaVA_Factory#134",
     "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file: No such file "
     "or directory", {"library": "libcudnn_cnn_infer.so.8", "missing": "libcuda.so"}),
    ("CUDNN-8-LIBRARY-NOT-LOADED", "AlexeyAB/darknet#8601",
     "Could not load library libcudnn_ops_infer.so.8. Error: libcublas.so.11: cannot open shared object file: No such "
     "file or directory", {"library": "libcudnn_ops_infer.so.8", "missing": "libcublas.so.11"}),
    ("BUILD-EXTENSION-COMPILE-FAILED", "lich99/ChatGLM-finetune-LoRA#17 (fixed by moving from gcc 4.8.5 to gcc 9)",
     "subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.", {}),
    ("BUILD-EXTENSION-COMPILE-FAILED", "ArcticHare105/SPIN#12",
     "```subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.```", {}),
    ("NVCC-SECOND-INPUT-FILE", "Ph0rk0z/SageAttention2#8 (spaces in the build paths on Windows)",
     "nvcc fatal   : A single input file is required for a non-link phase when an outputfile is specified", {}),
    ("XFORMERS-BUILD-METADATA-MISSING", "facebookresearch/xformers#804",
     "FileNotFoundError: [Errno 2] No such file or directory: '/opt/conda/lib/python3.10/site-packages/xformers/"
     "cpp_lib.json'", {"path": "/opt/conda/lib/python3.10/site-packages/xformers/cpp_lib.json"}),
    ("TRITON-LDCONFIG-NOT-FOUND", "triton-lang/triton#2878 (a micromamba environment)",
     "FileNotFoundError: [Errno 2] No such file or directory: 'ldconfig'", {"ldconfig": "ldconfig"}),
    ("TRITON-LDCONFIG-NOT-FOUND", "sgl-project/sglang#1226 (the issue's title)",
     "No such file or directory: '/sbin/ldconfig'", {"ldconfig": "/sbin/ldconfig"}),
    ("PYTORCH-ATTENTION-OP-NOT-ON-DEVICE", "intel/torch-xpu-ops#3143",
     "NotImplementedError: The operator 'aten::_scaled_dot_product_efficient_attention_backward' is not currently "
     "implemented for the XPU device.", {"op": "scaled_dot_product_efficient_attention_backward", "device": "XPU"}),
    ("MPS-NDARRAY-TOO-LARGE", "pytorch/pytorch#143859",
     "/AppleInternal/Library/BuildRoots/b11baf73-9ee0-11ef-b7b4-7aebe1f78c73/Library/Caches/com.apple.xbs/Sources/"
     "MetalPerformanceShaders/MPSCore/Types/MPSNDArray.mm:850: failed assertion `[MPSNDArray initWithDevice:descriptor:"
     "isTextureBacked:] Error: total bytes of NDArray > 2**32'", {}),
    ("MPS-NDARRAY-TOO-LARGE", "pytorch/pytorch#84039",
     "AppleInternal/Library/BuildRoots/20d6c351-ee94-11ec-bcaf-7247572f23b4/Library/Caches/com.apple.xbs/Sources/"
     "MetalPerformanceShaders/MPSCore/Types/MPSNDArray.mm:705: failed assertion '[MPSNDArray initWithDevice:descriptor:] "
     "Error: product of dimension sizes > 2**31 '", {}),
    ("PTXAS-UNKNOWN-GPU-NAME", "fishaudio/fish-speech#907 (RTX 5090)",
     "subprocess.CalledProcessError: Command '['/home/eason/anaconda3/envs/fish-speech/lib/python3.10/site-packages/triton/"
     "backends/nvidia/bin/ptxas', '-lineinfo', '-v', '--gpu-name=sm_120', '/tmp/tmpdy7phawp.ptx', '-o', "
     "'/tmp/tmpdy7phawp.ptx.o']' returned non-zero exit status 255.", {"bundled_arch": "sm_120"}),
    ("MPS-NDARRAY-TOO-LARGE", "kijai/ComfyUI-SUPIR#210 (SUPIR's cross-attention on Apple Silicon)",
     "Invalid buffer size: 19.38 GiB", {"size": "19.38 GiB"}),
    ("PIP-UNINSTALLED-TORCH", "facebookresearch/xformers#752 (pip install xformers==0.0.19 over torch 2.0.1+cu118)",
     "  Attempting uninstall: torch\n    Found existing installation: torch 2.0.1+cu118\n    Uninstalling "
     "torch-2.0.1+cu118:\n      Successfully uninstalled torch-2.0.1+cu118", {"torch_version": "2.0.1+cu118"}),
    ("PIP-UNINSTALLED-TORCH", "deeplearning-wisc/dream-ood#7 (pip install xformers==0.0.13 over torch 1.11.0)",
     "    Found existing installation: torch 1.11.0\n    Uninstalling torch-1.11.0:\n      Successfully uninstalled "
     "torch-1.11.0", {"torch_version": "1.11.0"}),
    ("BUILD-COMPILER-NO-CXX17", "NVIDIA/TransformerEngine#1270 (pip install TransformerEngine@stable with gcc 7.5.0)",
     "      /tmp/pip-req-build-hfgbdcj5/transformer_engine/common/util/cuda_driver.cpp:9:10: fatal error: filesystem: "
     "No such file or directory\n       #include <filesystem>", {}),
    ("BUILD-COMPILER-NO-CXX17", "NVIDIA/TransformerEngine#887 (a build compiled with -std=gnu++1y)",
     "/**/TransformerEngine/transformer_engine/common/util/cuda_runtime.cpp:7:22: fatal error: filesystem: No such "
     "file or directory", {}),
    ("TORCH-OP-NO-KERNEL-FOR-DEVICE", "facebookresearch/xformers#630 (an xformers build whose op lists no CUDA "
     "kernel)", "NotImplementedError: Could not run 'xformers::efficient_attention_forward_cutlass' with arguments "
     "from the 'CUDA' backend. This could be because the operator doesn't exist for this backend, or was omitted "
     "during the selective/custom build process (if using custom build).",
     {"op": "xformers::efficient_attention_forward_cutlass", "dispatch": "CUDA"}),
    ("TORCH-OP-NO-KERNEL-FOR-DEVICE", "Comfy-Org/ComfyUI#3818 (xformers' CK kernels, ROCm builds)",
     "Could not run 'xformers::efficient_attention_forward_ck' with arguments from the 'CUDA' backend.",
     {"op": "xformers::efficient_attention_forward_ck", "dispatch": "CUDA"}),
    ("PY-ATTENTION-MODULE-NO-ATTRIBUTE", "OpenGVLab/OmniQuant#104 (its quantized Llama layer copies "
     "org_module.rotary_emb)", "AttributeError: 'LlamaAttention' object has no attribute 'rotary_emb'",
     {"owner": "LlamaAttention", "name": "rotary_emb"}),
    ("PY-ATTENTION-MODULE-NO-ATTRIBUTE", "thunlp/InfLLM#58 (patch_hf reads self_attn.rotary_emb)",
     "AttributeError: 'MistralAttention' object has no attribute 'rotary_emb'",
     {"owner": "MistralAttention", "name": "rotary_emb"}),
    ("BUILD-NINJA-MISSING", "pytorch/pytorch torch/utils/cpp_extension.py@wheel:torch-2.9.1:2305, NX-AI/xlstm#76 "
     "(its kernels built at import)", "RuntimeError: Ninja is required to load C++ extensions", {}),
    ("BUILD-NINJA-MISSING", "pytorch/pytorch torch/utils/cpp_extension.py@wheel:torch-2.9.1:2305",
     "RuntimeError: Ninja is required to load C++ extensions (pip install ninja to get it)", {}),
    ("LOADER-SYSTEM-LIBRARY-TOO-OLD", "Dao-AILab/flash-attention#1708 (flash-attn 2.7.4.post1 wheel on CentOS 8, "
     "glibc 2.28)", "ImportError: /lib64/libc.so.6: version `GLIBC_2.32' not found (required by venvs/conda/openrlhf/"
     "lib/python3.12/site-packages/flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so)",
     {"symbol_version": "GLIBC_2.32", "system_library": "libc.so.6"}),
    ("LOADER-SYSTEM-LIBRARY-TOO-OLD", "a project's installation notes quoting flash-attn 2.7.0.post2 from pip "
     "(a conda environment's libstdc++ older than the one the extension was built with)",
     "ImportError: /envs/protevo/bin/torch/lib/python3.10/site-packages/torch/lib/../../../../libstdc++.so.6: version "
     "`GLIBCXX_3.4.32' not found (required by /envs/protevo/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-"
     "x86_64-linux-gnu.so)", {"symbol_version": "GLIBCXX_3.4.32", "system_library": "libstdc++.so.6"}),
    ("BUILD-EXTENSION-COMPILE-FAILED", "Dao-AILab/flash-attention#279, #1921 (pip building flash-attn from source)",
     "RuntimeError: Error compiling objects for extension", {}),
    ("BUILD-EXTENSION-COMPILE-FAILED", "pytorch/pytorch torch/utils/cpp_extension.py@wheel:torch-2.9.1:2289 (a JIT build, "
     "torch.utils.cpp_extension.load)", "RuntimeError: Error building extension 'fused_attn_kernel'",
     {"extension": "fused_attn_kernel"}),
    ("NVCC-UNSUPPORTED-GPU-ARCH", "mit-han-lab/Block-Sparse-Attention#15 (an sm120 build with an older nvcc)",
     "nvcc fatal   : Unsupported gpu architecture 'compute_120'", {"arch": "compute_120"}),
    ("NVCC-UNSUPPORTED-GPU-ARCH", "flashinfer-ai/flashinfer#1658 (FlashInfer 0.3.1's JIT build for an H800)",
     "nvcc fatal : Unsupported gpu architecture 'compute_90a'", {"arch": "compute_90a"}),
    ("BUILD-COMPILER-OUT-OF-MEMORY", "Dao-AILab/flash-attention#1549 ('That Killed is because compilation ran out "
     "of memory')", "g++: fatal error: Killed signal terminated program cc1plus", {}),
    ("BUILD-COMPILER-OUT-OF-MEMORY", "nvcc's front end killed the same way",
     "nvcc error   : 'cicc' died due to signal 9 (Kill signal)", {}),
    ("BUILD-CUDA-TOOLKIT-NOT-FOUND", "pytorch/pytorch torch/utils/cpp_extension.py@wheel:torch-2.9.1:2986 "
     "(_join_cuda_home), Dao-AILab/flash-attention#1264 (flash-attn 2.6.3 built with pip, no nvcc)",
     "OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root.", {}),
    ("BUILD-CUDA-TOOLKIT-NOT-FOUND", "thu-ml/SageAttention setup.py@v2.2.0:74",
     "RuntimeError: Cannot find CUDA_HOME. CUDA must be available to build the package.", {}),
    ("BUILD-CUDA-TOOLKIT-NOT-FOUND", "pytorch/pytorch torch/utils/cpp_extension.py@wheel:torch-2.9.1:225 (Windows)",
     "CUDA was not found on the system, please set the CUDA_HOME or the CUDA_PATH\nenvironment variable or add NVCC "
     "to your system PATH. The extension compilation will fail.", {}),
    ("BUILD-CUDA-TOOLKIT-NOT-FOUND", "Dao-AILab/flash-attention setup.py@v2.8.3:107, Dao-AILab/flash-attention#948",
     "setup.py:78: UserWarning: flash_attn was requested, but nvcc was not found.  Are you sure your environment has "
     "nvcc available?", {}),
    ("FACT-THD-LAYOUT", "NVIDIA/TransformerEngine transformer_engine/pytorch/attention/dot_product_attention/"
     "utils.py@v2.8:711", "Disabling FlashAttention as it does not support context parallelism with attention bias "
     "for THD format", {}),
    ("FACT-THD-LAYOUT", "NVIDIA/cudnn-frontend include/cudnn_frontend/node/sdpa_support_surface.h@v1.20.0:347",
     "cudnnGraphNotSupportedError: THD (ragged offset) is only supported in Hopper and above", {}),
    ("TORCH-OP-SCHEMA-ARGUMENT-COUNT", "pytorch/pytorch torch/csrc/jit/python/pybind_utils.h@wheel:torch-2.13.0:995, "
     "flash-attn 2.7.0's op called with 2.6's arguments",
     "RuntimeError: flash_attn::_flash_attn_forward() is missing value for argument 'window_size_left'. Declaration: "
     "flash_attn::_flash_attn_forward(Tensor q, Tensor k, Tensor v, float dropout_p, float softmax_scale, bool causal, "
     "SymInt window_size_left, SymInt window_size_right, float softcap, Tensor? alibi_slopes, bool return_softmax)",
     {"op": "flash_attn::_flash_attn_forward", "argument": "window_size_left"}),
    ("OPEN-CLIP-BATCH-FIRST-TEXT-MASK", "lllyasviel/ControlNet#708 (open-clip-torch 2.26.1)",
     "RuntimeError: The shape of the 2D attn_mask is torch.Size([77, 77]), but should be (4, 4)", {"batch": "4"}),
    ("XFORMERS-KERNEL-NOT-BUILT-FOR-ARCH",
     "facebookresearch/xformers xformers/csrc/attention/cuda/fmha/kernel_forward.h@v0.0.16:874-877 (an sm80 kernel "
     "from a build made for sm75)", "FATAL: this function is for sm80, but was built for sm750",
     {"low": "80", "built": "750"}),
    ("PIP-WHEEL-NOT-SUPPORTED",
     "pypa/pip src/pip/_internal/resolution/resolvelib/factory.py@23.2.1:137 (a cp37 wheel offered to Python 3.8)",
     "ERROR: xformers-0.0.14.dev0-cp37-cp37m-linux_x86_64.whl is not a supported wheel on this platform.",
     {"module": "xformers", "python_tag": "cp37"}),
    ("PY-NAME-XFORMERS-NOT-DEFINED",
     "AUTOMATIC1111/stable-diffusion-webui#1994 (--force-enable-xformers without xformers)",
     "    out = xformers.ops.memory_efficient_attention(q1, k1, v)\nNameError: name 'xformers' is not defined",
     {"name": "xformers"}),
    ("MEM-EFF-KERNEL-NOT-BUILT-FOR-ARCH",
     "pytorch/pytorch aten/src/ATen/native/transformers/cuda/mem_eff_attention/kernels/cutlassF_f32_aligned.cu:83 "
     "(Debian source pytorch 2.6.0+dfsg), the sm80 kernel run from a build without sm80 code",
     "FATAL: kernel `fmha_cutlassF_f32_aligned_64x64_rf_sm80` is for sm80-sm100, but was built for sm50",
     {"kernel": "fmha_cutlassF_f32_aligned_64x64_rf_sm80", "built": "50"}),
    ("TE-FA-VERSION-WARNING",
     "TE transformer_engine/pytorch/attention/dot_product_attention/backends.py@v2.3:99 with the range "
     "utils.py _get_supported_versions builds ('>= ' min ', <= ' max), as printed in training logs",
     "[WARNING  | transformer_engine.pytorch.dot_product_attention.utils]: Supported flash-attn versions are "
     ">= 2.1.1, <= 2.8.0.post2. Found flash-attn 2.8.3.",
     {"flash_attn": "2.8.3"}),
    ("TE-FA-VERSION-WARNING", "same format, a .post release found",
     "Supported flash-attn versions are >= 2.1.1, <= 2.7.4.post1. Found flash-attn 2.8.0.post2.",
     {"flash_attn": "2.8.0.post2"}),
    ("FA-DTYPE", "Dao-AILab/flash-attention hopper/flash_api.cpp@v2.7.0:484",
     "RuntimeError: FlashAttention-3 only support fp16, bf16, or fp8 e4m3 data type", {}),
    ("FA-DTYPE", "Dao-AILab/flash-attention hopper/flash_api.cpp@v2.8.3:684",
     "RuntimeError: FlashAttention on Ampere/Ada cards only supports fp16 and bf16 data type", {}),
    ("FA-DTYPE", "Dao-AILab/flash-attention hopper/flash_api.cpp@v2.8.3:681",
     "RuntimeError: FlashAttention only supports fp16, bf16, and fp8_e4m3 data type", {}),
    ("SDPA-CUDNN-HEAD-DIM",
     "pytorch/pytorch aten/src/ATen/native/transformers/cuda/sdp_utils.cpp@001f694a check_cudnn_tensor_shapes "
     "(head_dim_limit 192 for d_qk 192 / d_v 128 on sm90)",
     "UserWarning: head_dim should be no more than 192", {}),
    ("SDPA-SAME-NUM-HEADS",
     "pytorch/pytorch aten/src/ATen/native/transformers/sdp_utils_cpp.h@v2.13.0:367 check_batch_size_and_num_heads_dense",
     "UserWarning: Both fused kernels require key and value to have the same num_heads and batch_size but got: "
     "Key sizes: [1, 8, 128, 64], Value sizes: [1, 4, 128, 64]", {}),
    ("SDPA-SAME-NUM-HEADS", "pytorch/pytorch aten/src/ATen/native/transformers/sdp_utils_cpp.h@v2.13.0:439",
     "UserWarning: For dense input, both fused kernels require query, key and value to have the same num_heads. "
     "Query.sizes(): [1, 8, 128, 64]", {}),
    ("TORCH-ARCH-NOT-COMPATIBLE", "pytorch/pytorch#150733 (title; the device name carries no 'NVIDIA')",
     "GeForce RTX 5090 D with CUDA capability sm_120 is not compatible with the current PyTorch installation.",
     {"sm": "120"}),
    ("TORCH-ARCH-NOT-COMPATIBLE", "lllyasviel/FramePack#702",
     "F:\\tmp\\framepack_cu126_torch26\\system\\python\\lib\\site-packages\\torch\\cuda\\__init__.py:235: UserWarning:\n"
     "NVIDIA GeForce RTX 5080 with CUDA capability sm_120 is not compatible with the current PyTorch installation.",
     {"sm": "120", "gpu": "GeForce RTX 5080"}),
    ("TORCH-ARCH-NOT-COMPATIBLE", "torch/cuda/__init__.py@v2.13.0:427 _check_cubins (a device name with dashes)",
     "NVIDIA A100-SXM4-80GB with CUDA capability sm_80 is not compatible with the current PyTorch installation.",
     {"sm": "80"}),
    ("SDPA-CUDNN-GRAD-OUT-STRIDE", "pytorch/pytorch#134001, pytorch/pytorch#138581 (torch 2.5.0)",
     "UserWarning: cuDNN SDPA backward got grad_output.strides() != output.strides(), attempting to materialize a "
     "grad_output with matching strides... (Triggered internally at ../aten/src/ATen/native/cudnn/MHA.cpp:667.)", {}),
    ("SDPA-CUDNN-GRAD-OUT-STRIDE", "pytorch/pytorch aten/src/ATen/native/cudnn/MHA.cpp@02a4a0fe run_cudnn_SDP_bprop",
     "cuDNN SDPA backward got grad_output.strides() != output.strides(), attempting to materialize a grad_output "
     "with matching strides.Consider upgrading cuDNN v9.5.1+ to avoid this warning.", {}),
    ("VLLM-CANNOT-USE-FA2", "vllm-project/vllm vllm/attention/selector.py@68941ee0 which_attn_to_use",
     "INFO 06-01 10:00:00 selector.py:150] Cannot use FlashAttention-2 backend for block size not divisible by 16.",
     {}),
    ("VLLM-USING-BACKEND", "vllm-project/vllm vllm/attention/selector.py@68941ee0 get_attn_backend",
     "INFO 06-01 10:00:00 selector.py:64] Using Flashinfer backend.", {"vllm_backend": "Flashinfer"}),
    ("CUDNN-FE-NO-PLANS-BUILT", "NVIDIA/TransformerEngine#651 (TE 1.2.1, cudnn-frontend plans.h@v1.0.0:269)",
     "fused_attn_f16_arbitrary_seqlen.cu:227 in function operator(): cuDNN Error: [cudnn_frontend] Error: No "
     "execution plans built successfully.. For more information, enable cuDNN error logging by setting "
     "CUDNN_LOGERR_DBG=1 and CUDNN_LOGDEST_DBG=stderr in the environment.", {}),
    ("CUDNN-LOGERR-HINT", "NVIDIA/TransformerEngine#651", "cuDNN Error: [cudnn_frontend] Error: No execution plans "
     "built successfully.. For more information, enable cuDNN error logging by setting CUDNN_LOGERR_DBG=1 and "
     "CUDNN_LOGDEST_DBG=stderr in the environment.", {}),
    ("CUDNN-FE-ERROR-IN-TE-BWD", "NVIDIA/TransformerEngine#1591 (title)",
     "How to debug `tex.fused_attn_bwd` getting `cuDNN Error: [cudnn_frontend] Error: No execution plans support "
     "the graph`", {}),
    ("VLLM-SOFTCAP-BUILD", "vllm-project/vllm#25502 (title)",
     "[Bug]: This flash attention build does not support tanh softcapping: gemma-2-2b-it on H100 NVL", {}),
    ("TE-NO-BACKEND", "NVIDIA/TransformerEngine#1821",
     "ValueError: No dot product attention backend is available for the provided inputs. Please run with "
     "NVTE_DEBUG=1 NVTE_DEBUG_LEVEL=2 to find out the reasons for disabling all backends.", {}),
    ("FA3-LAUNCH-SMEM-INVALID-ARGUMENT", "sgl-project/sglang#10711",
     "CUDA error (/sgl-kernel/build/_deps/repo-flash-attention-src/hopper/flash_fwd_launch_template.h:190): invalid "
     "argument", {"where": "190"}),
    ("FA3-LAUNCH-SMEM-INVALID-ARGUMENT", "loscrossos/crossOS_acceleritor#2 (a Windows path)",
     "CUDA error (C:/a/xformers/xformers/third_party/flash-attention/hopper\\flash_fwd_launch_template.h:180): "
     "invalid argument", {"where": "180"}),
    ("VLLM-FLASH-ATTN-PACKAGE-NOT-FOUND-04", "vllm 0.4.0 wheel vllm/attention/selector.py:46-47, as mudler/LocalAI#1995 "
     "logged it", "INFO 04-10 23:35:40 selector.py:51] Cannot use FlashAttention because the package is not found. "
     "Please install it for better performance.", {}),
    ("VLLM-FLASH-ATTN-PACKAGE-NOT-FOUND-04", "vllm 0.4.1 sdist vllm/attention/selector.py:78-79",
     "Cannot use FlashAttention backend because the flash_attn package is not found. Please install it for better "
     "performance.", {}),
    ("JAX-CUDNN-FLASH-HEAD-DIM", "jax 0.5.0 wheel jax/_src/cudnn/fused_attention_stablehlo.py:356 (its spelling)",
     "NotImplementedError: The head dim must be <= 128 and a mutiple of 8, but got 256.", {"hdim": "256"}),
    ("JAX-CUDNN-FLASH-HEAD-DIM", "keras-team/keras#21333 (jax 0.7 spelling)",
     "The head dim must be <= 128 and a multiple of 8, but got 256.", {"hdim": "256", "limit": "128"}),
    ("NVCC-BUILD-COMPILE-ERROR", "Dao-AILab/flash-attention#343 (nvcc 11.6)",
     "$SRC_DIR/third_party/flash-attention/csrc/flash_attn/src/flash_fwd_launch_template.h(68): error: expression must "
     "have a constant value", {"package": "flash_attn"}),
    ("NVCC-BUILD-COMPILE-ERROR", "Dao-AILab/flash-attention#21 (gcc 7.5)",
     "/mnt/ceph/users/dberenberg/gustaf_stuff/repos/flash-attention/csrc/flash_attn/src/fmha_fprop_fp16_kernel.sm80.cu:62"
     ":385: internal compiler error: in maybe_undo_parenthesized_ref, at cp/semantics.c:1740", {"package": "flash_attn"}),
    ("NVCC-BUILD-COMPILE-ERROR", "thu-ml/SageAttention#246",
     '92 errors detected in the compilation of "csrc/qattn/qk_int_sv_f16_cuda_sm80.cu".', {}),
    ("FA1-BWD-HDIM-ABOVE-64-NEEDS-SM80", "Dao-AILab/flash-attention csrc/flash_attn/fmha_api.cpp@v0.2.1:391 (no "
     "message: TORCH_CHECK prints its condition)", "    _, _, _, softmax_d = flash_attn_cuda.bwd(\n"
     "RuntimeError: Expected is_sm80 to be true, but got false.", {}),
    ("FA1-EXPECTED-IS-SM", "Dao-AILab/flash-attention csrc/flash_attn/fmha_api.cpp@v1.0.9:211 (no message)",
     "RuntimeError: Expected is_sm90 || is_sm8x || is_sm75 to be true, but got false.",
     {"check": "is_sm90 || is_sm8x || is_sm75"}),
    ("XFORMERS-NO-SUCH-OPERATOR", "facebookresearch/xformers xformers/ops/common.py and ops/fmha/flash.py@sdist:"
     "xformers-0.0.16:14,193 (get_operator(\"xformers_flash\", \"flash_fwd\") in a build without _C_flashattention)",
     "RuntimeError: No such operator xformers_flash::flash_fwd - did you forget to build xformers with `python setup.py "
     "develop`?", {"library": "xformers_flash", "op": "flash_fwd"}),
    ("PYBIND-ATTENTION-KERNEL-ARGUMENTS", "axolotl-ai-cloud/axolotl#514 (flash_attn_cuda.varlen_fwd)",
     "TypeError: varlen_fwd(): incompatible function arguments. The following argument types are supported:",
     {"name": "varlen_fwd"}),
    ("PYBIND-ATTENTION-KERNEL-ARGUMENTS", "Dao-AILab/flash-attention#263 (flash-attn 1.0.4)",
     "TypeError: fwd_block() : incompatible function arguments. The following argument types are supported:",
     {"name": "fwd_block"}),
    ("PYBIND-OTHER-ATTENTION-KERNEL-ARGUMENTS", "NVIDIA/Megatron-LM#1802 (TransformerEngine's fused_attn_fwd)",
     "TypeError: fused_attn_fwd(): incompatible function arguments. The following argument types are supported:",
     {"name": "fused_attn_fwd"}),
    ("XFORMERS-NO-OPERATOR-FOUND", "Comfy-Org/ComfyUI-Manager#135",
     "NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:", {}),
    ("SAGEATTENTION-KERNEL-NOT-AVAILABLE", "thu-ml/SageAttention sageattention/core.py@v2.2.0:723",
     "AssertionError: SM89 kernel is not available. Make sure you GPUs with compute capability 8.9.", {}),
    ("SDPA-MASK-WITH-IS-CAUSAL", "vllm-project/vllm#11169",
     "RuntimeError: _scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True", {}),
    ("ONNX-EXPORT-SDPA-OPSET", "pytorch/pytorch#106612 (torch 2.0, opset 17)",
     "UnsupportedOperatorError: Exporting the operator 'aten::scaled_dot_product_attention' to ONNX opset version 17 "
     "is not supported. Please feel free to request support or submit a pull request on PyTorch GitHub.",
     {"opset": "17"}),
    ("ONNX-EXPORT-SDPA-OPSET", "huggingface/setfit#560 (torch 2.4.1, opset 12)",
     "UnsupportedOperatorError: Exporting the operator 'aten::scaled_dot_product_attention' to ONNX opset version 12 "
     "is not supported. Support for this operator was added in version 14, try exporting with this version.",
     {"opset": "12"}),
    ("FA-TRITON-OPS-NEED-TORCH-26", "Dao-AILab/flash-attention#2037 (flash-attn 2.8.3 wheel for torch 2.5)",
     "AttributeError: module 'torch.library' has no attribute 'wrap_triton'", {}),
    ("FA-TRITON-OPS-NEED-TORCH-26", "flash_attn/utils/library.py@sdist:flash_attn-2.8.3:7 imported on torch 2.5.1 "
     "(Python's ImportError wording)", "ImportError: cannot import name 'set_wrap_triton_enabled' from "
     "'torch._library.triton' (/usr/lib/python3/site-packages/torch/_library/triton.py)", {}),
    ("TE-PYTORCH-SUBMODULE-NOT-IMPORTED", "huggingface/peft#3081 (transformer_engine[core] only)",
     "E       AttributeError: module 'transformer_engine' has no attribute 'pytorch'", {}),
    ("LOADER-TORCH-SPLIT-CUDA-LIBRARY-MISSING", "MCG-NJU/SparseBEV#83 (mmcv-full 1.6.0 on torch 2.0.0)",
     "ImportError: libtorch_cuda_cu.so: cannot open shared object file: No such file or directory",
     {"lib": "libtorch_cuda_cu.so"}),
    ("TORCH-DRIVER-TOO-OLD", "googlecolab/colabtools#1685",
     "RuntimeError: The NVIDIA driver on your system is too old (found version 10010). Please update your GPU driver "
     "by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx",
     {"found": "10010"}),
    ("PY-ATTENTION-CALL-SIGNATURE", "sipie800/ComfyUI-PuLID-Flux-Enhanced#52",
     "2024-12-21T16:11:02.582951 - !!! Exception during processing !!! forward_orig() got an unexpected keyword "
     "argument 'attn_mask'", {"caller": "forward_orig", "keyword": "attn_mask"}),
    ("PY-ATTENTION-CALL-SIGNATURE", "Shakker-Labs/ComfyUI-IPAdapter-Flux#68",
     "SamplerCustomAdvanced forward_orig_ipa() got an unexpected keyword argument 'attn_mask', May I ask why the wrong "
     "report", {"caller": "forward_orig_ipa"}),
]

SOURCE_REF = re.compile(r"@[0-9A-Za-z][\w.\-]*|#\d+")
"""A tag or commit (path@tag) or an issue number (repo#N)."""


@pytest.mark.parametrize("entry_id,source,text,groups", REAL_TEXTS,
                         ids=[f"{e}-{i}" for i, (e, *_) in enumerate(REAL_TEXTS)])
def test_the_pattern_finds_the_message_as_the_library_prints_it(entry_id, source, text, groups):
    entry = {e.id: e for e in load_catalogue()}[entry_id]
    match = entry.pattern.search(text)
    assert match, f"{entry_id} misses the real text from {source}"
    for name, value in groups.items():
        assert match.group(name) == value


def test_every_library_message_cites_a_tag_commit_or_issue():
    loose = [e.id for e in load_catalogue()
             if e.kind != "fact" and e.library != "text" and e.verified
             and not any(SOURCE_REF.search(s) for s in e.source)]
    assert not loose, f"verified entries whose source names no tag, commit or issue: {loose}"


def test_an_unverified_entry_says_what_was_tried():
    for entry in load_catalogue():
        if not entry.verified:
            assert len(entry.note) > 40, entry.id


NEAR_MISSES = [
    ("PY-ATTENTION-CALL-SIGNATURE", "TypeError: Trainer.__init__() got an unexpected keyword argument 'tokenizer'"),
    ("PY-ATTENTION-CALL-SIGNATURE", "TypeError: flash_attn_func() got an unexpected keyword argument 'window_size'"),
    ("PY-NONE-XFORMERS-ATTN-BIAS", "AttributeError: 'NoneType' object has no attribute 'attn_bias_type'"),
    ("HIP-MATRIX-BUILTIN-NEEDS-TARGET-FEATURE", "error: '__builtin_amdgcn_s_memrealtime' needs target feature s-memrealtime"),
    ("GGML-FA-UNSUPPORTED-KV-TYPE", "llama_init_from_model: V cache quantization requires flash_attn"),
    ("GGML-FA-KERNEL-ABORT", "/llama.cpp/ggml/src/ggml-cuda/mmq.cuh:3884: fatal error"),
    ("FACT-GGML-FATTN-CASE-FRAME", "libggml-cuda.so(_Z24ggml_cuda_flash_attn_extR25ggml_backend_cuda_contextP11ggml_tensor"
     "+0x1ab3)[0x7fa006e26d13]"),
    ("GGML-FA-KERNEL-ABORT", "#6  0x00007ff35c609b33 in ggml_cuda_flash_attn_ext_vec_f16(ggml_backend_cuda_context&) ()"),
    ("FA-UNPAD-INPUT-RETURN-COUNT", "out, softmax_lse, p, rng_state = _C_flashattention.fwd(\n"
     "ValueError: too many values to unpack (expected 4)"),
    ("FA-UNPAD-INPUT-RETURN-COUNT", "ValueError: too many values to unpack (expected 4)"),
    ("PY-NO-MODULE-SUBMODULE", "ModuleNotFoundError: No module named 'transformers'"),
    ("PY-NO-MODULE-SUBMODULE", "ModuleNotFoundError: No module named 'transformers.x'; 'transformers' is not a package"),
    ("PY-NO-MODULE-SUBMODULE", "ModuleNotFoundError: No module named 'my_transformers.cache_utils'"),
    ("PY-NO-MODULE-SUBMODULE", "ModuleNotFoundError: No module named 'vllm._C'"),
    ("PY-NO-MODULE-SUBMODULE", "ModuleNotFoundError: No module named 'torch.nn.attention.flex_attention'"),
    ("GGML-NO-DEVICE-CODE", "CUDA error: no kernel image is available for execution on the device"),
    ("MPS-SDPA-MATMUL-SHAPES", 'loc("mps_matmul"("(mpsFileLoc): /AppleInternal/Library/BuildRoots/b11baf73/Library/'
     'Caches/com.apple.xbs/Sources/MetalPerformanceShadersGraph/Core/Files/MPSGraphUtilities.mm":43:0)): error: invalid '
     'shape'),
    ("TGI-FLASH-ATTENTION-OFF", "ValueError: Flash decoding requires Flash Attention V2"),
    ("CUTE-SM90-NO-GMMA-FP8-KV", 'cute/arch/mma_sm90.hpp(532): error: static assertion failed with "MajorA must be '
     'GMMA::Major::K for this config."'),
    ("TRITON-MMA-TO-MMA-LAYOUT", "python: /project/lib/Analysis/Allocation.cpp:58: Assertion `srcLayout && dstLayout && "
     "\"Unexpect layout in getScratchConfigForCvtLayout()\"' failed."),
    ("CUBLAS-HANDLE-ALLOC-FAILED", "E tensorflow/stream_executor/cuda/cuda_blas.cc:226] failed to create cublas handle: "
     "CUBLAS_STATUS_ALLOC_FAILED"),
    ("CUBLAS-HANDLE-ALLOC-FAILED", "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling "
     "`cublasSgemm( handle, opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`"),
    ("CUBLAS-BF16-NOT-SUPPORTED", "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmEx( "
     "handle, opa, opb, m, n, k, &falpha, a, CUDA_R_16F, lda, b, CUDA_R_16F, ldb, &fbeta, c, CUDA_R_16F, ldc, "
     "CUDA_R_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`"),
    ("CUBLAS-BF16-NOT-SUPPORTED", "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx( "
     "handle, opa, opb, m, n, k, &falpha, a, CUDA_R_16BF, lda, b, CUDA_R_16BF, ldb, &fbeta, c, CUDA_R_16BF, ldc)`"),
    ("BUILD-COMPILER-COMMAND-FAILED", "error: command 'git' failed with exit code 128"),
    ("BUILD-COMPILER-COMMAND-FAILED", "error: subprocess-exited-with-error"),
    ("TORCH-WINDOWS-DLL-NOT-LOADED", "OSError: [WinError 1114] A dynamic link library (DLL) initialization routine failed"),
    ("TORCH-WINDOWS-DLL-NOT-LOADED", "Could not load library cudnn_ops_infer64_8.dll. Error code 126"),
    ("TORCH-WINDOWS-DLL-NOT-LOADED", "OSError: [WinError 2] The system cannot find the file specified: 'C:\\x\\lib\\bin'"),
    ("LOADER-CUDA-DRIVER-SYMBOL-MISSING", "undefined symbol: cudaGetDriverEntryPointByVersion, version libcudart.so.12"),
    ("LOADER-CUDA-DRIVER-SYMBOL-MISSING", "libtorch_cuda.so: undefined symbol: cublasLtMatmulDescCreate"),
    ("NVCC-UNSUPPORTED-HOST-COMPILER", "nvcc fatal   : Unsupported gpu architecture 'compute_120'"),
    ("PTXAS-UNKNOWN-GPU-NAME", "ptxas error   : Entry function 'kernel' uses too much shared data"),
    ("TRITON-LIBCUDA-NOT-FOUND", "/usr/bin/ld: cannot find -lcudart"),
    ("TE-BUILD-CUDNN-NOT-FOUND", "Could not find cuDNN frontend API at /x/3rdparty/cudnn-frontend/include."),
    ("CUDNN-SUBLIBRARY-NOT-LOADED", "Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: "
     "cannot open shared object file: No such file or directory"),
    ("CUDNN-SUBLIBRARY-NOT-LOADED", "Unable to load any of {libcudart.so.12, libcudart.so}"),
    ("PIP-UNINSTALLED-TORCH", "      Successfully uninstalled torchvision-0.15.2+cu118"),
    ("PIP-UNINSTALLED-TORCH", "Successfully installed torch-2.4.1 xformers-0.0.28.post1"),
    ("BUILD-COMPILER-NO-CXX17", "csrc/flash_attn/src/flash_fwd_kernel.h:7:10: fatal error: cute/tensor.hpp: No such "
     "file or directory"),
    ("TORCH-OP-NO-KERNEL-FOR-DEVICE", "RuntimeError: No such operator xformers::efficient_attention_forward_cutlass"),
    ("PY-ATTENTION-MODULE-NO-ATTRIBUTE", "AttributeError: 'Qwen2FlashAttention2' object has no attribute "
     "'_flash_attention_forward'"),
    ("PY-ATTENTION-MODULE-NO-ATTRIBUTE", "AttributeError: 'LlamaForCausalLM' object has no attribute "
     "'model.layers.0.self_attn.rotary_emb.inv_freq'"),
    ("BUILD-NINJA-MISSING", "Note: Ninja is required to build a CUDA Extension with RDC linking."),
    ("LOADER-SYSTEM-LIBRARY-TOO-OLD", "ImportError: libcudart.so.12: cannot open shared object file: No such file "
     "or directory"),
    ("LOADER-SYSTEM-LIBRARY-TOO-OLD", "version `libcudnn_graph.so.9' not found (required by /x/libtorch_cuda.so)"),
    ("BUILD-EXTENSION-COMPILE-FAILED", "error: command '/usr/local/cuda/bin/nvcc' failed with exit code 1"),
    ("NVCC-UNSUPPORTED-GPU-ARCH", "nvcc fatal   : Unknown option '-compress-mode=size'"),
    ("BUILD-COMPILER-OUT-OF-MEMORY", "g++: fatal error: no input files"),
    ("BUILD-CUDA-TOOLKIT-NOT-FOUND", "No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'"),
    ("BUILD-CUDA-TOOLKIT-NOT-FOUND", "nvcc not found at '/usr/local/cuda/bin/nvcc'. Ensure CUDA path '/usr/local/cuda' is correct."),
    ("FACT-THD-LAYOUT", "Disabling FlashAttention 3 for FP8 KV caching and non-THD"),
    ("FACT-THD-LAYOUT", "ValueError: qkv_format must be {BSHD, SBHD, THD}."),
    ("SDPA-MASK-WITH-IS-CAUSAL", "RuntimeError: _scaled_dot_product_attention: Nested tensors for query / key are not "
     "supported when is_causal=True"),
    ("ONNX-EXPORT-SDPA-OPSET", "UnsupportedOperatorError: Exporting the operator 'aten::softmax' to ONNX opset version "
     "12 is not supported."),
    ("FA-TRITON-OPS-NEED-TORCH-26", "AttributeError: module 'torch.library' has no attribute 'custom_op'"),
    ("TE-PYTORCH-SUBMODULE-NOT-IMPORTED", "AttributeError: module 'transformer_engine' has no attribute 'jax'"),
    ("LOADER-TORCH-SPLIT-CUDA-LIBRARY-MISSING",
     "ImportError: libtorch_cuda.so: cannot open shared object file: No such file or directory"),
    ("PY-MODULE-NO-ATTRIBUTE-ATTENTION", "AttributeError: module 'transformer_engine' has no attribute 'pytorch'"),
    ("PY-MODULE-NO-ATTRIBUTE-ATTENTION", "AttributeError: module 'torch.library' has no attribute 'wrap_triton'"),
    ("PYBIND-ATTENTION-KERNEL-ARGUMENTS", "TypeError: forward(): incompatible function arguments."),
    ("PYBIND-ATTENTION-KERNEL-ARGUMENTS", "TypeError: fused_attn_fwd(): incompatible function arguments."),
    ("PYBIND-OTHER-ATTENTION-KERNEL-ARGUMENTS", "TypeError: varlen_fwd(): incompatible function arguments."),
    ("CUDNN-NVRTC-NOT-LOADED", "ImportError: libnvrtc.so.11.2: cannot open shared object file: No such file or directory"),
    ("CUDNN-8-LIBRARY-NOT-LOADED", "Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so: cannot open "
     "shared object file: No such file or directory"),
    ("CUDNN-8-LIBRARY-NOT-LOADED", "Unable to load any of {libcudnn_ops.so.9.1.0, libcudnn_ops.so.9.1, libcudnn_ops.so.9, "
     "libcudnn_ops.so}"),
    ("LOADER-CUDA-RUNTIME-MISSING", "Could not load library libnvrtc.so.12. Error: libnvrtc.so.12: cannot open shared "
     "object file: No such file or directory"),
    ("BUILD-EXTENSION-COMPILE-FAILED", "subprocess.CalledProcessError: Command '['./ninja', '-v']' returned non-zero exit "
     "status 1."),
    ("NVCC-SECOND-INPUT-FILE", "A single input file is required for '--use-cubin (-use-cubin)'"),
    ("XFORMERS-BUILD-METADATA-MISSING", "FileNotFoundError: [Errno 2] No such file or directory: "
     "'/x/site-packages/flash_attn/cpp_lib.json'"),
    ("TRITON-LDCONFIG-NOT-FOUND", "FileNotFoundError: [Errno 2] No such file or directory: 'ldconfig.real'"),
    ("PYTORCH-ATTENTION-OP-NOT-ON-DEVICE", "NotImplementedError: The operator 'aten::_weight_norm_interface' is not "
     "currently implemented for the MPS device."),
    ("PTXAS-UNKNOWN-GPU-NAME", "subprocess.CalledProcessError: Command '['/x/triton/backends/nvidia/bin/ptxas', '-lineinfo', "
     "'-v', '--gpu-name=sm_90a', '/tmp/a.ptx', '-o', '/tmp/a.ptx.o']' returned non-zero exit status 255."),
    ("XFORMERS-NO-SUCH-OPERATOR", "RuntimeError: No such operator torchvision::nms - did you forget to build "
     "xformers with `python setup.py develop`?"),
]
"""(entry id, a text beside its message that it must leave to another entry or to none)"""


@pytest.mark.parametrize("entry_id,text", NEAR_MISSES, ids=[f"{e}-{i}" for i, (e, _) in enumerate(NEAR_MISSES)])
def test_the_pattern_leaves_the_message_beside_it(entry_id, text):
    entry = {e.id: e for e in load_catalogue()}[entry_id]
    assert not entry.pattern.search(text)
