"""The one interface every backend runner has, and the probe flow that the real (torch) runners share.

A runner answers three questions: is my library here (`installed`), what happens when I run this config
(`probe`), and how fast is it (`bench`). Real runners only say how to call their library (`prepare` returns a
`Call`); the shared flows build the inputs, poison the outputs, run forward and backward under a warnings recorder,
compare with the float64 reference (probe) or time forward and forward+backward on rotating input sets (bench,
through ..timing), and turn any exception into an outcome class.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import time
import traceback
import warnings
import zlib
from dataclasses import dataclass, field
from typing import Any, Mapping

from .. import outcomes
from ..spec import CaseSpec, NotBuilt, case_spec


class NotExpressible(Exception):
    """The backend's public API has no way to say this (no softcap argument, no mask argument): `rejected`, with
    `expressible` false."""


@dataclass
class Probe:
    """What one probe observed; `to_dict` is what the worker sends back."""

    backend: str
    outcome: str
    phase: str = ""
    error: str = ""
    expressible: bool = True
    errors: dict[str, float] = field(default_factory=dict)
    rel_error: float | None = None
    tolerance: float | None = None
    ms: float | None = None
    ms_forward: float | None = None
    ms_backward: float | None = None
    ms_first: float | None = None
    ms_setup: float | None = None
    warnings: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    version: str = ""
    restart: bool = False
    wall_ms: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        for key in ("rel_error",):
            if out[key] is not None and out[key] == float("inf"):
                out[key] = "inf"
        out["errors"] = {k: ("inf" if v == float("inf") else v) for k, v in self.errors.items()}
        return out


class Runner:
    """A backend runner: `installed()` and `probe()`; subclasses for planted test runners override `probe`."""

    backend: str = ""
    module: str = ""
    """The module whose import says the library is here."""
    distributions: tuple[str, ...] = ()
    library_modules: tuple[str, ...] = ()

    def installed(self) -> tuple[bool, str]:
        """(True, version) or (False, why): the library imports (in this worker). Cached once it imports."""
        cached = self.__dict__.get("_installed")
        if cached is not None:
            return cached
        try:
            importlib.import_module(self.module)
        except ImportError as exc:
            return False, f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # noqa: BLE001 - a broken install is "does not import"
            return False, f"{type(exc).__name__}: {exc}"
        self.__dict__["_installed"] = (True, self.version())
        return self.__dict__["_installed"]

    def version(self) -> str:
        for name in self.distributions:
            try:
                return importlib.metadata.version(name)
            except Exception:  # noqa: BLE001
                continue
        return ""

    def probe(self, request: Mapping[str, Any], context: Any) -> Probe:  # pragma: no cover - abstract
        raise NotImplementedError

    def bench(self, request: Mapping[str, Any], context: Any) -> "BenchResult":
        """Time this backend on the request's config; runners that cannot time say so (`skipped`)."""
        return BenchResult(self.backend, outcomes.SKIPPED, phase="setup", error="this runner does not time")


@dataclass
class BenchResult:
    """What one timed backend measured; `to_dict` is what the worker sends back. `forward` and `train` (forward
    plus backward, timed as one region) are timing.summarize() dicts; `mem_peak` is torch.cuda.max_memory_allocated()
    during the backend's setup (`prepare`: preallocated outputs, workspaces) and its first call (forward, plus
    backward when training) over what the inputs took before it, in bytes (None off CUDA)."""

    backend: str
    outcome: str
    phase: str = ""
    error: str = ""
    version: str = ""
    mode: str = ""  # graph | eager
    mode_note: str = ""
    sets: int = 0
    forward: dict[str, float] | None = None
    train: dict[str, float] | None = None
    mem_peak: int | None = None
    set_bytes: int | None = None
    details: dict[str, Any] = field(default_factory=dict)
    restart: bool = False
    wall_ms: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Call:
    """One prepared library call. `forward()` returns the output in `out_format` (heads, dim last) for query
    rows `out_rows` ('q'); `backward(out)` leaves the gradients where `grads()` finds them."""

    forward: Any
    out_format: str
    dout: Any = None
    backward_fn: Any = None
    grads_fn: Any = None
    reset_fn: Any = None
    details: dict[str, Any] = field(default_factory=dict)

    def backward(self, out: Any) -> None:
        if self.backward_fn is not None:
            self.backward_fn(out)
        else:
            out.backward(self.dout)

    def grads(self) -> tuple[Any, ...]:
        return self.grads_fn()

    def reset(self) -> None:
        if self.reset_fn is not None:
            self.reset_fn()


class KernelRunner(Runner):
    """The shared probe flow for runners that call a real attention kernel through torch."""

    def check(self, spec: CaseSpec, device: Any) -> None:
        """Raise NotExpressible or NotBuilt for configs this backend's API cannot take."""

    def prepare(self, case: Any, layout: Any) -> Call:  # pragma: no cover - abstract
        raise NotImplementedError

    def context_manager(self, spec: CaseSpec) -> Any:
        """A context every call (forward, backward, timing) runs in (SDPA's backend choice, say)."""
        import contextlib

        return contextlib.nullcontext()

    def probe(self, request: Mapping[str, Any], context: Any) -> Probe:
        start = time.perf_counter()
        result = self._probe(request, context)
        result.wall_ms = (time.perf_counter() - start) * 1000.0
        return result

    def _probe(self, request: Mapping[str, Any], context: Any) -> Probe:
        ok, version = self.installed()
        if not ok:
            return Probe(self.backend, outcomes.NOT_INSTALLED, phase="import", error=version)
        try:
            spec = case_spec(request["config"])
            self.check(spec, context.device)
        except NotBuilt as exc:
            return Probe(self.backend, outcomes.SKIPPED, phase="setup", error=str(exc), version=version)
        except NotExpressible as exc:
            return Probe(self.backend, outcomes.REJECTED, phase="setup", error=str(exc), expressible=False,
                         version=version)
        except ValueError as exc:
            return Probe(self.backend, outcomes.SKIPPED, phase="setup", error=str(exc), version=version)
        import torch

        from .. import data, stress

        regime = str(request.get("regime") or "")
        if regime:
            why = stress.applicable(regime, spec, self.backend)
            if why:
                return Probe(self.backend, outcomes.SKIPPED, phase="setup", error=f"regime {regime}: {why}",
                             version=version)

        result = Probe(self.backend, outcomes.OK, version=version, tolerance=outcomes.TOLERANCES.get(spec.dtype))
        phase = "inputs"
        recorded: list[warnings.WarningMessage] = []
        try:
            t_setup = time.perf_counter()
            case = context.case(spec, int(request.get("seed", 0)), regime)
            if spec.compares:
                phase = "reference"
                reference = data.compute_reference(case, train=spec.train)
                context.synchronize()
            result.ms_setup = (time.perf_counter() - t_setup) * 1000.0
            phase = "inputs"
            layout = data.build_layout(case, requires_grad=spec.train)
            with warnings.catch_warnings(record=True) as recorded:
                warnings.simplefilter("always")
                with self.context_manager(spec):
                    phase = "setup"
                    call = self.prepare(case, layout)
                    if regime == "grad-out-strides" and call.dout is not None:
                        call.dout = stress.odd_strides(call.dout)
                    result.details.update(call.details)
                    outputs = data.nbytes_of(case.q) * spec.hdim_v // max(1, spec.hdim)
                    data.poison_allocator(case.device, outputs + (data.nbytes_of(case.q, case.k, case.v)
                                                                   if spec.train else 0))
                    phase = "forward"
                    t_first = time.perf_counter()
                    out = call.forward()
                    if spec.train:
                        phase = "backward"
                        call.backward(out)
                    context.synchronize()
                    result.ms_first = (time.perf_counter() - t_first) * 1000.0
            result.details.update(call.details)
            phase = "compare"
            got = data.canonical(case, out.detach(), call.out_format, "q")
            rows_q, rows_kv = case.q_rows, case.kv_rows
            if case.empty_rows is not None:
                result.details["masked_rows"] = stress.convention(got, case, case.empty_rows)
            if spec.compares:
                result.errors["out"] = data.relative_error(got, reference["out"], rows_q)
            elif not data.finite(got, rows_q):
                result.errors["out"] = float("inf")
            if spec.train:
                grads = call.grads()
                names = ("dq", "dk", "dv")
                floor = data.gradient_floor(reference) if spec.compares else 0.0
                for name, (g, fmt, which), rows in zip(names, grads, (rows_q, rows_kv, rows_kv)):
                    g = None if g is None else data.canonical(case, g.detach(), fmt, which)
                    if spec.compares:
                        result.errors[name] = data.relative_error(g, reference[name], rows, floor)
                    elif g is None or not data.finite(g, rows):
                        result.errors[name] = float("inf")
            worst = max(result.errors.values()) if result.errors else None
            result.rel_error = worst
            if worst is not None and result.tolerance is not None and worst > result.tolerance:
                result.outcome = outcomes.WRONG_RESULTS
                bad = [f"{k} {_fmt(v)}" for k, v in result.errors.items() if v > result.tolerance]
                what = "unwritten or non-finite values" if worst == float("inf") else "error over tolerance"
                result.error = f"{what}: {', '.join(bad)} (tolerance {result.tolerance:g})"
            del out
            phase = "timing"
            repeats = int(request.get("repeats", 0))
            if repeats > 0:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    with self.context_manager(spec):
                        self._time(call, spec, repeats, context, result)
            result.phase = "done"
        except Exception as exc:  # noqa: BLE001 - every failure of the library is an observation
            outcome, restart = outcomes.classify_exception(exc, library_modules=self.library_modules)
            reasons = [str(w.message) for w in recorded]
            result.outcome = outcome
            result.restart = restart
            result.phase = phase
            result.error = outcomes.error_text(exc, reasons if outcome == outcomes.REJECTED else ())
            if outcome == outcomes.CRASHED and not restart:
                result.details["traceback"] = "".join(traceback.format_exception(exc)[-6:])[-2000:]
            if outcome == outcomes.OUT_OF_MEMORY:
                context.free()
        finally:
            result.warnings = list(dict.fromkeys(" ".join(str(w.message).split())[:300] for w in recorded))[:12]
            if not result.restart:
                try:
                    context.release()
                except Exception:  # noqa: BLE001 - releasing memory is best effort
                    pass
        return result

    def _time(self, call: Call, spec: CaseSpec, repeats: int, context: Any, result: Probe) -> None:
        fwd, bwd = [], []
        for _ in range(repeats):
            call.reset()
            t0 = context.event()
            out = call.forward()
            t1 = context.event()
            if spec.train:
                call.backward(out)
                t2 = context.event()
            context.synchronize()
            fwd.append(context.elapsed(t0, t1))
            if spec.train:
                bwd.append(context.elapsed(t1, t2))
            del out
        result.ms_forward = _median(fwd)
        result.ms_backward = _median(bwd) if bwd else None
        result.ms = result.ms_forward + (result.ms_backward or 0.0)


    # ---------------------------------------------------------------- bench

    def bench(self, request: Mapping[str, Any], context: Any) -> BenchResult:
        start = time.perf_counter()
        result = self._bench(request, context)
        result.wall_ms = (time.perf_counter() - start) * 1000.0
        return result

    def _bench(self, request: Mapping[str, Any], context: Any) -> BenchResult:
        """Forward (and forward+backward when training) timed on rotating input sets, CUDA graphs where the calls
        can be captured, peak memory of one call; the output of the first call is checked to be finite."""
        ok, version = self.installed()
        if not ok:
            return BenchResult(self.backend, outcomes.NOT_INSTALLED, phase="import", error=version)
        try:
            spec = case_spec(request["config"])
            self.check(spec, context.device)
        except (NotBuilt, ValueError) as exc:
            return BenchResult(self.backend, outcomes.SKIPPED, phase="setup", error=str(exc), version=version)
        except NotExpressible as exc:
            return BenchResult(self.backend, outcomes.REJECTED, phase="setup", error=str(exc), version=version)
        from .. import data, timing

        options = dict(request.get("options") or {})
        min_runs = max(1, int(options.get("runs", 20)))
        max_runs = max(min_runs, int(options.get("max_runs", 100)))
        budget = float(options.get("budget_ms", 100.0))
        graphs = str(options.get("graphs", "auto"))
        seed = int(request.get("seed", 0))
        device = context.device
        result = BenchResult(self.backend, outcomes.OK, version=version)
        phase = "inputs"
        sets: list[tuple[Any, Any, Call]] = []
        try:
            drop = getattr(context, "drop_case", None)
            if drop is not None:
                drop()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with self.context_manager(spec):
                    def new_inputs(i: int) -> tuple[Any, Any]:
                        case = data.make_case(spec, device, zlib.crc32(f"{seed}:{i}".encode()) & 0x7FFFFFFF)
                        return case, data.build_layout(case, requires_grad=spec.train)

                    def new_set(i: int) -> tuple[Any, Any, Call]:
                        case, layout = new_inputs(i)
                        return case, layout, self.prepare(case, layout)

                    case0, layout0 = new_inputs(0)
                    phase = "setup"
                    mark = timing.memory_mark(device)
                    call0 = self.prepare(case0, layout0)
                    sets.append((case0, layout0, call0))
                    out_bytes = data.nbytes_of(case0.dout)
                    in_bytes = data.nbytes_of(*layout0.leaves)
                    set_bytes = in_bytes + out_bytes + ((in_bytes + out_bytes) if spec.train else 0)
                    n = int(options.get("sets") or 0) or timing.input_sets_needed(set_bytes, timing.l2_bytes(device))
                    phase = "forward"
                    out = call0.forward()
                    if spec.train:
                        phase = "backward"
                        call0.backward(out)
                    result.mem_peak = timing.memory_peak_since(device, mark)
                    phase = "inputs"
                    sets.extend(new_set(i) for i in range(1, n))
                    result.sets, result.set_bytes = n, set_bytes
                    timing.synchronize(device)
                    got = data.canonical(case0, out.detach(), call0.out_format, "q")
                    if not data.finite(got, case0.q_rows):
                        result.outcome, result.phase = outcomes.WRONG_RESULTS, "check"
                        result.error = "the output holds NaN or inf on rows that have keys to attend to"
                        return result
                    del out, got
                    call0.reset()
                    forwards = [c.forward for _, _, c in sets]
                    trains = [(lambda c=c: c.backward(c.forward())) for _, _, c in sets]
                    resets = [c.reset for _, _, c in sets]
                    phase = "capture"
                    mode, note = "eager", "not a CUDA device"
                    fwd_calls, train_calls, train_resets = forwards, trains, resets
                    if graphs == "off":
                        note = "CUDA graphs off"
                    elif timing.is_cuda(device):
                        try:
                            fwd_calls = timing.capture(forwards, device).calls
                            if spec.train:
                                train_calls = timing.capture(trains, device, resets=resets).calls
                                train_resets = []
                            mode, note = "graph", ""
                        except Exception as exc:  # noqa: BLE001 - fall back to eager, say why
                            timing.synchronize(device)  # a sticky CUDA error raises here: crashed, restart
                            fwd_calls, train_calls, train_resets = forwards, trains, resets
                            for reset in resets:
                                reset()
                            note = "CUDA graph capture failed, timed eagerly: " + outcomes.error_text(exc, limit=300)
                    result.mode, result.mode_note = mode, note
                    phase = "timing forward"
                    result.forward = timing.summarize(timing.time_calls(
                        fwd_calls, device, min_runs=min_runs, max_runs=max_runs, budget_ms=budget))
                    if spec.train:
                        phase = "timing forward+backward"
                        result.train = timing.summarize(timing.time_calls(
                            train_calls, device, resets=train_resets, min_runs=min_runs, max_runs=max_runs,
                            budget_ms=budget))
            result.phase = "done"
        except Exception as exc:  # noqa: BLE001 - every failure of the library is an observation
            outcome, restart = outcomes.classify_exception(exc, library_modules=self.library_modules)
            result.outcome, result.restart, result.phase = outcome, restart, phase
            result.error = outcomes.error_text(exc)
            if outcome == outcomes.CRASHED and not restart:
                result.details["traceback"] = "".join(traceback.format_exception(exc)[-6:])[-2000:]
        finally:
            sets.clear()
            if not result.restart:
                try:
                    context.free()
                except Exception:  # noqa: BLE001 - best effort
                    pass
        return result


def _median(values: list[float]) -> float:
    values = sorted(values)
    n = len(values)
    return values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2


def _fmt(value: float) -> str:
    return "inf" if value == float("inf") else f"{value:.2e}"


# ---------------------------------------------------------------- tensor conventions shared by runners


def to_bhsd(x: Any, fmt: str) -> Any:
    """A (format) tensor as the (B, H, S, D) view SDPA and cuDNN take."""
    if fmt == "bshd":
        return x.transpose(1, 2)
    if fmt == "sbhd":
        return x.permute(1, 2, 0, 3)
    if fmt == "bhsd":
        return x
    raise ValueError(f"no (B, H, S, D) view of a {fmt} tensor")


def bhsd_to(y: Any, fmt: str) -> Any:
    """The inverse of to_bhsd."""
    if fmt == "bshd":
        return y.transpose(1, 2)
    if fmt == "sbhd":
        return y.permute(2, 0, 1, 3)
    if fmt == "bhsd":
        return y
    raise ValueError(fmt)


def pack_tokens(x_bshd: Any, lens: tuple[int, ...]) -> Any:
    """(B, S, H, D) -> (T, H, D) of the valid tokens (differentiable)."""
    import torch

    return torch.cat([x_bshd[b, :n] for b, n in enumerate(lens)], dim=0)


def autograd_grads(layout: Any) -> Any:
    """grads_fn for runners whose library is an autograd function: the layout's leaf gradients, viewed."""
    def grads() -> tuple[tuple[Any, str, str], ...]:
        dq, dk, dv = layout.grads()
        plan = layout.plan
        return ((dq, plan.q_format, "q"), (dk, plan.kv_format, "kv"), (dv, plan.kv_format, "kv"))
    return grads
