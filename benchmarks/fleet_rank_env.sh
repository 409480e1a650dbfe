#!/bin/sh
# Run attndoctor with an environment variable set on some ranks only, to rehearse a heterogeneous fleet:
#   torchrun --nproc-per-node 2 --no-python benchmarks/fleet_rank_env.sh 1 NVTE_FUSED_ATTN=0 fleet --format json
# RANKS is a comma-separated list of ranks (or - for none); NAME=VALUE is exported on those ranks, then
# `python -m attndoctor ARGS...` runs on every rank (PYTHON picks the interpreter, python3 by default).
ranks=$1; assignment=$2; shift 2
case ",$ranks," in
  *",${RANK:-0},"*) export "$assignment" ;;
esac
exec "${PYTHON:-python3}" -m attndoctor "$@"
