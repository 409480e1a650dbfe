#!/usr/bin/env bash
# Compare FlexAttention's sources and SDPA's warning texts between torch wheels, so a new release is a rerun and a diff.
#
# Usage: tools/currency/torch_flex_diff.sh CACHE OLD NEW      e.g.  /work/cache/torch 2.14.0 2.15.0
# Downloads torch==OLD and torch==NEW into CACHE (pip download --no-deps) unless present, unpacks only
# torch/nn/attention, torch/_inductor/kernel/flex, torch/_inductor/{heuristics,template_heuristics}, exc.py and the
# dist-info METADATA, prints `diff -r` of them, the Triton and cuDNN pins, and the SDPA texts of
# torch/lib/libtorch_cuda.so (strings) that one release has and the other has not.
set -euo pipefail
cache=$1 old=$2 new=$3
mkdir -p "$cache"
for v in "$old" "$new"; do
  ls "$cache"/torch-"$v"-*.whl >/dev/null 2>&1 || pip download -q --no-deps -d "$cache" "torch==$v"
  wheel=$(ls "$cache"/torch-"$v"-*.whl | head -1)
  if [ ! -d "$cache/x$v/torch/_inductor/kernel/flex" ]; then
    unzip -q -o "$wheel" 'torch/nn/attention/*' 'torch/_inductor/kernel/flex/*' \
      'torch/_inductor/heuristics/*' 'torch/_inductor/template_heuristics/*' 'torch/_inductor/exc.py' \
      "torch-$v.dist-info/METADATA" -d "$cache/x$v" || true
  fi
  if [ ! -s "$cache/sdpa_texts_$v.txt" ]; then
    unzip -p "$wheel" torch/lib/libtorch_cuda.so | strings -n 8 \
      | grep -E 'Flash attention|Mem [Ee]fficient|cuDNN|cudnn SDPA|head_dim|FA4|check_[a-z0-9_]+$' \
      | grep -vE '^_Z|^\*N|^N[0-9]|^St[0-9]' | sort -u > "$cache/sdpa_texts_$v.txt"
  fi
done
parts="torch/nn/attention torch/_inductor/kernel/flex torch/_inductor/heuristics"
parts="$parts torch/_inductor/template_heuristics torch/_inductor/exc.py"
for part in $parts; do
  if [ -e "$cache/x$old/$part" ] || [ -e "$cache/x$new/$part" ]; then
    diff -r "$cache/x$old/$part" "$cache/x$new/$part" || true
  fi
done
for v in "$old" "$new"; do
  echo "== torch $v pins"
  grep -iE '^Requires-Dist: (triton|nvidia-cudnn)' "$cache/x$v/torch-$v.dist-info/METADATA" || true
done
echo "== SDPA texts only in $old"
comm -23 "$cache/sdpa_texts_$old.txt" "$cache/sdpa_texts_$new.txt"
echo "== SDPA texts only in $new"
comm -13 "$cache/sdpa_texts_$old.txt" "$cache/sdpa_texts_$new.txt"
