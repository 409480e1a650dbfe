#!/usr/bin/env bash
# Fetches the release wheels and packages the generator reads into the cache folder (default /work/cache/wheels).
set -u
CACHE="${MESSAGES_CACHE:-/work/cache}/wheels"
PIP="${PIP:-pip}"
mkdir -p "$CACHE"
get() {  # name==version [extra pip args]
  local spec="$1"; shift
  local dir="$CACHE/${spec/==/-}"
  ls "$dir"/*.whl "$dir"/*.tar.gz >/dev/null 2>&1 && return 0
  "$PIP" download -q --no-deps -d "$dir" "$@" "$spec" 2>&1 | grep -v "Location" || true
}
linux=(--platform manylinux1_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_31_x86_64 --platform manylinux_2_35_x86_64)
mac=(--platform macosx_11_0_arm64 --only-binary=:all: --python-version 3.11)
for v in 2.1.2 2.3.1 2.5.1 2.7.1 2.9.1 2.11.0; do get "torch==$v" "${mac[@]}"; done
# macOS wheels stop at 2.11; later releases come as the CPU-only Windows wheels
for v in 2.13.0 2.15.0; do get "torch==$v" --platform win_amd64 --only-binary=:all: --python-version 3.11; done
for v in 4.36.2 4.39.3 4.42.4 4.46.3 4.48.3 4.50.3 4.53.3 4.54.1 4.55.4 4.57.6 5.5.4 5.24.0; do get "transformers==$v" --only-binary=:all:; done
for v in 0.30.3 0.33.1 0.35.2 0.37.1 0.42.1; do get "diffusers==$v" --only-binary=:all:; done
for v in 0.4.30 0.4.38 0.5.3 0.6.2 0.7.2 0.8.3 0.10.2 0.12.0; do get "jax==$v" --only-binary=:all: --python-version 3.12; done
# wheels only: building an sdist's metadata would install vLLM's build requirements
# releases before 0.5.5 publish no Python 3.12 wheels; 0.4.0-0.4.2 none for 3.11 either
for v in 0.4.0.post1 0.4.2; do get "vllm==$v" --only-binary=:all: "${linux[@]}" --python-version 3.10; done
for v in 0.4.3 0.5.3.post1; do get "vllm==$v" --only-binary=:all: "${linux[@]}" --python-version 3.11; done
for v in 0.5.5 0.6.6 0.7.3 0.8.5 0.9.2 0.11.2 0.20.2 0.33.0; do get "vllm==$v" --only-binary=:all: "${linux[@]}" --python-version 3.12; done
for v in 0.3.6 0.4.1 0.4.10 0.5.1 0.5.5 0.5.12 0.5.16 0.5.23; do get "sglang==$v" --only-binary=:all:; done
# flashinfer-python 0.2.x and 0.3.x are on PyPI as source distributions only (pip builds their metadata, minutes
# each); later releases are pure-Python wheels
for v in 0.2.0.post2 0.2.5 0.2.8 0.3.1 0.5.3 0.7.2.post1; do get "flashinfer-python==$v"; done
# Hugging Face's kernel hub client (0.17 on ships a compiled helper beside its Python)
for v in 0.4.4 0.8.2 0.10.5 0.12.3 0.15.2 0.17.2; do get "kernels==$v" --only-binary=:all: "${linux[@]}" --python-version 3.12; done
# llama.cpp as llama-cpp-python's source distributions vendor it (0.2.79 is the first with its CUDA flash attention)
for v in 0.2.79 0.2.90 0.3.2 0.3.8 0.3.16 0.3.26 0.3.36; do get "llama-cpp-python==$v" --no-binary :all:; done
# SageAttention 1.x (Triton kernels) is published on PyPI only
for v in 1.0.2 1.0.6; do get "sageattention==$v" --only-binary=:all:; done
for v in 4.0.0b4 4.0.0b12 4.0.0b20 4.0.0b28 4.0.0b36; do get "flash-attn-4==$v" --only-binary=:all:; done
# triton 2.1-3.0 came with torch 2.1-2.4; 2.1.0 publishes no Python 3.12 wheel; 2.0.0 came with torch 2.0, and
# 1.1.1 (Python 3.9 at most) is the 1.x wording ("out of resource: shared memoryRequired: ...")
get "triton==1.1.1" --only-binary=:all: "${linux[@]}" --python-version 3.9
get "triton==2.0.0" --only-binary=:all: "${linux[@]}" --python-version 3.11
get "triton==2.1.0" --only-binary=:all: "${linux[@]}" --python-version 3.11
for v in 2.2.0 2.3.1 3.0.0 3.1.0 3.3.1 3.5.1 3.6.0 3.7.1 3.9.0; do get "triton==$v" --only-binary=:all: "${linux[@]}" --python-version 3.12; done
get "nvidia-cudnn-frontend==1.32.0" --only-binary=:all: "${linux[@]}" --python-version 3.12
for v in 12.1.105 12.4.127 12.9.79; do get "nvidia-cuda-runtime-cu12==$v" "${linux[@]}" --python-version 3.12 --only-binary=:all:; done
# PyTorch's compiled libraries (libtorch_cpu, libtorch_cuda) of each release: only their strings are kept
# (tools/messages/compiled.py reads other releases' wordings of the C++ messages from them); the Linux wheel is
# removed once read, being most of a gigabyte
STRINGS="$CACHE/../strings"
mkdir -p "$STRINGS"
for v in 2.0.1 2.1.2 2.2.2 2.3.1 2.4.1 2.5.1 2.7.1 2.9.1 2.11.0 2.15.0; do  # 2.13.0 is CPU-only on PyPI
  [ -s "$STRINGS/torch-$v.txt.gz" ] && continue
  tmp="$(mktemp -d)"
  "$PIP" download -q --no-deps -d "$tmp" --only-binary=:all: "${linux[@]}" --python-version 3.11 "torch==$v" 2>&1 \
    | grep -v "Location" || true
  (cd "$(dirname "$0")/../.." && python -m tools.messages.compiled "$tmp"/torch-*.whl "$STRINGS/torch-$v.txt.gz")
  rm -rf "$tmp"
done
# PyTorch's C++ attention sources: the Debian source package (trixie), through a private apt list of deb-src lines
APT="$CACHE/../apt"
mkdir -p "$APT/lists/partial" "$APT/cache" "$CACHE/../debsrc" "$CACHE/../deb"
cat > "$APT/src.list" <<'LIST'
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main
LIST
O=(-o "Dir::Etc::SourceList=$APT/src.list" -o Dir::Etc::SourceParts=/dev/null -o "Dir::State::Lists=$APT/lists" -o "Dir::Cache=$APT/cache")
ls "$CACHE/../debsrc"/pytorch_*.orig.tar.xz >/dev/null 2>&1 || {
  apt-get "${O[@]}" update >/dev/null 2>&1
  (cd "$CACHE/../debsrc" && apt-get "${O[@]}" source --download-only pytorch=2.6.0+dfsg-7)
}
ls "$CACHE/../deb"/libc6_*.deb >/dev/null 2>&1 || (cd "$CACHE/../deb" && apt-get download libc6)
# unsloth (training framework): its release wheels carry the source; Megatron-LM, ms-swift and axolotl are read from
# their git snapshots (NVIDIA+Megatron-LM, modelscope+ms-swift, axolotl-ai-cloud+axolotl under $MESSAGES_MIRROR)
for v in 2024.8 2025.3.19 2025.10.12 2026.10.9; do get "unsloth==$v" --only-binary=:all:; done
