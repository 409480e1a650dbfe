#!/usr/bin/env bash
# Here, from the repository root: download flash-attn-4 ${FA4:-4.0.0b36} and what it needs as cp312 manylinux wheels
# (quack-kernels at $QUACK where set: an early beta needs the quack of its time; LIBS=base for a runtime before 4.6,
# whose one libs-base wheel holds the Python packages and the CUDA 12 libraries together)
# and lay them out for benchmarks/fa4_gpu.sh: the CUDA 13 CuTe-DSL libraries unpacked, xz-compressed and split in
# 28 MiB parts, so that each of .fa4a/, .fa4b/ and .fa4c/ fits beside the working tree in one call. Add the three
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
