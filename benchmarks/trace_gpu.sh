#!/usr/bin/env bash
# On a GPU machine, from the repository root: `attndoctor trace` on a small Hugging Face Llama (sdpa, flex_attention,
# eager; CLI and API), a planted pytorch#196678 NaN located with --numerics, and the recorder's overhead on a
# training step with and without --numerics (interleaved, medians). Details under $OUT; a short table last.
set -u
OUT=${OUT:-trace-gpu-out}
. benchmarks/device_env.sh
OUT=$(cd "$OUT" && pwd)
export OUT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -c "import torch, transformers; print('torch', torch.__version__, 'cudnn', torch.backends.cudnn.version(), 'transformers', transformers.__version__)" | tee -a "$OUT/gpu.txt"
timeout 560 python3 benchmarks/trace_gpu.py all --reps "${REPS:-12}" --steps "${STEPS:-20}" 2> "$OUT/stderr.txt"
echo "exit $?"; tail -3 "$OUT/stderr.txt"
