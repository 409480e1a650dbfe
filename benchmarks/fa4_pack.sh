#!/usr/bin/env bash
# Here, from the repository root: download flash-attn-4 ${FA4:-4.0.0b36} and what it needs as cp312 manylinux wheels
# and lay them out for benchmarks/fa4_gpu.sh: the CuTe-DSL library wheel (libs-cu13, or with LIBS=base the one
# libs-base wheel of a runtime before 4.6, Python packages and CUDA 12 libraries together) unpacked, xz-compressed and
# split in 28 MiB parts, so that each of .fa4a/, .fa4b/ and .fa4c/ fits beside the working tree in one call.
# DSL= the runtime's version, QUACK= a quack-kernels pin (an early beta needs the quack of its time). Add the three
# folders to .git/info/exclude.
set -eu
FA4=${FA4:-4.0.0b36}; DSL=${DSL:-4.8.1}; LIBS=${LIBS:-cu13}
W=$(mktemp -d)
get() { python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 -d "$W" "$@"; }
parts=("nvidia-cutlass-dsl-libs-$LIBS==$DSL")
[ "$LIBS" = base ] || parts+=("nvidia-cutlass-dsl-libs-base==$DSL" "nvidia-cutlass-dsl-libs-core==$DSL")
get "flash-attn-4==$FA4" "nvidia-cutlass-dsl==$DSL" "${parts[@]}" "quack-kernels${QUACK:+==$QUACK}" apache-tvm-ffi \
  torch-c-dlpack-ext
mkdir -p "$W/libs" && (cd "$W/libs" && python3 -m zipfile -e "$W"/nvidia_cutlass_dsl_libs_"$LIBS"-*.whl .)
rm "$W"/nvidia_cutlass_dsl_libs_"$LIBS"-*.whl
tar cf - -C "$W/libs" . | xz -T0 -9 > "$W/libs.tar.xz"
rm -rf .fa4a .fa4b .fa4c && mkdir .fa4a .fa4b .fa4c
split -b 28M "$W/libs.tar.xz" "$W/libs.part."
mv "$W/libs.part.aa" .fa4a/ && mv "$W/libs.part.ab" .fa4b/ && mv "$W"/*.whl .fa4c/
for part in "$W"/libs.part.a[c-z]; do if [ -e "$part" ]; then mv "$part" .fa4c/; fi; done
du -sh .fa4a .fa4b .fa4c
