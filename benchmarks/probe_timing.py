"""Where `attndoctor check` spends its time on a GPU machine: each probe step alone, then the whole probe.

Run on the GPU machine from the repository root: python benchmarks/probe_timing.py [--runs 3]
Prints one table (median wall ms per step) and writes every run to $OUT/probe_timing.json when OUT is set.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def python(code: str) -> Callable[[], Any]:
    return lambda: subprocess.run([sys.executable, "-c", code], capture_output=True, check=False)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    from attndoctor.probe import probe
    from attndoctor.probe.api import probe_api
    from attndoctor.probe.cudnn_lib import probe_cudnn_library
    from attndoctor.probe.nvml import probe_nvml
    from attndoctor.probe.packages import check_import, package_versions
    from attndoctor.probe.torch_info import probe_torch

    versions = package_versions().versions
    steps: dict[str, Callable[[], Any]] = {
        "python -c pass": python("pass"),
        "python -c 'import torch'": python("import torch"),
        "torch: import + cuda.is_available (NVML check)": python(
            "import os; os.environ['PYTORCH_NVML_BASED_CUDA_CHECK']='1'; import torch; torch.cuda.is_available()"),
        "torch: + cudnn.version()": python("import torch; torch.backends.cudnn.version()"),
        "torch: + device capability (CUDA context)": python(
            "import torch; torch.cuda.get_device_capability(0)"),
        "step nvml": probe_nvml,
        "step package versions": package_versions,
        "step torch (no device query)": lambda: probe_torch(30, installed_version=versions.get("torch"),
                                                            query_device=False),
        "step torch (device query)": lambda: probe_torch(30, installed_version=versions.get("torch")),
        "step cudnn library (ctypes)": lambda: probe_cudnn_library(30),
        "step api (source read)": lambda: probe_api(versions),
        "step import cudnn (cudnn-frontend)": lambda: check_import("cudnn_frontend", "cudnn", 30),
        "whole probe()": lambda: probe(timeout=30),
        "attndoctor check (process)": lambda: subprocess.run([sys.executable, "-m", "attndoctor", "check"],
                                                              capture_output=True, check=False),
    }
    runs: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(args.runs):
        for name, fn in steps.items():
            runs[name].append(timed(fn))
    out = os.environ.get("OUT")
    if out:
        Path(out, "probe_timing.json").write_text(json.dumps(runs, indent=1))
    print(f"{'step (median of ' + str(args.runs) + ')':50} {'ms':>8}   runs")
    for name, values in runs.items():
        print(f"{name:50} {statistics.median(values):8.0f}   {', '.join(f'{v:.0f}' for v in values)}")


if __name__ == "__main__":
    main()
