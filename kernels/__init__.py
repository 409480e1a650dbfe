"""Runners that call the real attention backends on a GPU (imported only by verify and bench, never by the engine).

- `spec`: what a config asks the runners to build (layout, masks, lengths), without torch.
- `data`: inputs in the config's layout, masks, the float64 reference (torch).
- `runners`: one runner per backend id, one interface (`installed`, `probe`, `bench`).
- `timing`: CUDA-event timing on rotating input sets, CUDA graph capture, peak memory, statistics (bench).
- `worker` / `supervisor`: probes run in a worker process; the parent enforces a timeout per probe and restarts
  the worker after a crash, a timeout or a CUDA error.
- `outcomes`: the outcome classes and how an exception maps to one.
"""

from .outcomes import OUTCOMES, TOLERANCES

__all__ = ["OUTCOMES", "TOLERANCES"]
