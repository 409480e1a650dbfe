"""A planted runner that causes a real CUDA error (a device-side assert from an out-of-bounds gather)."""

from __future__ import annotations

from attndoctor_kernels.outcomes import classify_exception, error_text
from attndoctor_kernels.runners.base import Probe, Runner


class DeviceAssert(Runner):
    backend = "gpu-device-assert"

    def installed(self) -> tuple[bool, str]:
        return True, "planted"

    def probe(self, request, context):  # noqa: ANN001
        import torch

        try:
            x = torch.zeros(4, device="cuda")
            index = torch.tensor([1 << 20], device="cuda")
            y = x[index]
            torch.cuda.synchronize()
            float(y.sum())
        except Exception as exc:  # noqa: BLE001
            outcome, restart = classify_exception(exc)
            return Probe(self.backend, outcome, phase="forward", error=error_text(exc), restart=restart)
        return Probe(self.backend, "ok", phase="done")


RUNNERS = {"gpu-device-assert": DeviceAssert()}
