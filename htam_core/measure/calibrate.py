"""Calibration of the timing events' own latency, measured per device and per method, and its subtraction.

An event pair around one kernel measures more than the kernel: the start event's timestamp is taken before
the kernel is dispatched and the end event's after its completion is seen, so ``end - start`` holds the
dispatch and completion latency on top of the kernel's device time (what CUPTI's kernel record reports). On an
H200 that was a constant 1.9-3.3 µs (typically 2.5-2.8 µs) for every graph-timed kernel from 1.5 µs to 3 ms
(bench/results/timing-agreement-h200-2026-12-01.md): negligible at 100 µs, +46 % at 6 µs.

The calibration measures that latency with a null kernel (a fill of one small wave of blocks over every SM,
:func:`null_numel`; its own duration is subtracted, so only the latency is left) in the *same* structure as the
real trials: ``flush L2; start event; null kernel; end event``, inside a captured graph for ``cuda-graph`` and
eagerly on the stream for ``events-async-flush``. Its overhead is ``median(event interval) - median(CUPTI
duration of the null kernel)`` under the same flush sequence (:func:`overhead_ms`); each trial of the timer then
reports ``event interval - overhead`` (:func:`subtract`), never less than the events' resolution. The figure is
cached per (device, method) for the process and is reported with every timing ("event overhead 2.6 µs
subtracted"), so a reader can undo it.

Idea source: the usual "null-kernel" calibration of a timing harness (e.g. the empty-kernel launch-latency
measurement of NVIDIA's CUDA samples and of Volkov and Demmel's microbenchmarks), applied to CUDA events.
:func:`overhead_ms`, :func:`subtract` and :func:`describe` are pure; :func:`calibrate` needs torch and CUDA.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from htam_core.measure import cupti
from htam_core.measure.flush import flush_l2, flush_op_names
from htam_core.measure.method import METHOD_EVENTS, METHOD_GRAPH

__all__ = ["EVENT_RESOLUTION_MS", "CALIBRATION_TRIALS", "Calibration", "overhead_ms", "subtract", "describe",
           "null_numel", "calibrate"]

#: Resolution of ``cudaEventElapsedTime``, ms ("around 0.5 microseconds", CUDA Runtime API reference): no
#: corrected trial is reported below it.
EVENT_RESOLUTION_MS = 0.0005
#: Event-timed trials of the null kernel (each ~0.1 ms: the flush dominates).
CALIBRATION_TRIALS = 200
#: CUPTI calls of the null kernel.
CALIBRATION_CUPTI_CALLS = 20


@dataclass(frozen=True)
class Calibration:
    """The event latency of one method on one device.

    Attributes:
        method: the timing method it applies to (``cuda-graph`` or ``events-async-flush``).
        overhead_ms: what is subtracted from every trial, ms (0 when not measured).
        event_ms: median event interval around the null kernel, ms (``None``: not measured).
        kernel_ms: median CUPTI duration of the null kernel, ms (``None``: not measured).
        note: why nothing is subtracted, when nothing is.
    """

    method: str
    overhead_ms: float
    event_ms: float | None = None
    kernel_ms: float | None = None
    note: str = ""


def overhead_ms(event_ms: Sequence[float], kernel_ms: Sequence[float]) -> float:
    """The events' own latency: ``median(event_ms) - median(kernel_ms)``, floored at 0 (ms).

    Args:
        event_ms: event intervals around the null kernel, ms. kernel_ms: CUPTI durations of the same kernel, ms.

    Raises:
        ValueError: either sequence is empty.
    """
    if not event_ms or not kernel_ms:
        raise ValueError("an overhead needs event intervals and CUPTI durations of the null kernel")
    return max(0.0, statistics.median(event_ms) - statistics.median(kernel_ms))


def subtract(times_ms: Sequence[float], overhead: float) -> list[float]:
    """Every trial minus ``overhead`` (ms), none below :data:`EVENT_RESOLUTION_MS`.

    Raises:
        ValueError: ``overhead`` is negative.
    """
    if overhead < 0:
        raise ValueError(f"an event overhead cannot be negative, got {overhead!r} ms")
    return [max(EVENT_RESOLUTION_MS, t - overhead) for t in times_ms]


def describe(cal: Calibration | None) -> str:
    """One line for reports: ``"event overhead 2.6 µs subtracted (null kernel: events 3.8 µs, CUPTI 1.2 µs)"``."""
    if cal is None:
        return "event overhead not subtracted"
    if cal.overhead_ms <= 0 or cal.event_ms is None or cal.kernel_ms is None:
        return f"event overhead not subtracted ({cal.note or 'measured as 0'})"
    return (f"event overhead {cal.overhead_ms * 1000:.2f} µs subtracted (null kernel: events "
            f"{cal.event_ms * 1000:.2f} µs, CUPTI {cal.kernel_ms * 1000:.2f} µs)")


_CACHE: dict[tuple[int, str], Calibration] = {}


def null_numel() -> int:
    """Elements of the null kernel's fill: one wave of small blocks on every SM (2048 per SM), so that its
    dispatch and completion span the whole device as a real kernel's do, while its own duration stays ~1 µs."""
    import torch

    return 2048 * torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count


def calibrate(method: str, *, flush: bool = True, numel: int | None = None) -> Calibration:
    """Measure (once per process, device and method) the event overhead of ``method`` with a null kernel.

    Args:
        method: ``cuda-graph`` (events and null kernel captured into a graph, as the timer's graphs are) or
            ``events-async-flush`` (eager, as the timer's event trials are). Other methods get overhead 0.
        flush: flush the L2 before every trial, as the timer does.
        numel: elements of the null kernel's fill (default :func:`null_numel`; 1 gives a one-block kernel).

    Returns:
        A :class:`Calibration`; overhead 0 with a note when CUPTI or the capture is unavailable.

    Raises:
        RuntimeError: from CUDA (a device fault).
    """
    import torch

    numel = null_numel() if numel is None else numel
    key = (torch.cuda.current_device(), f"{method}:{flush}:{numel}")
    if key in _CACHE:
        return _CACHE[key]
    if method not in (METHOD_GRAPH, METHOD_EVENTS):
        return Calibration(method, 0.0, note=f"no event calibration for {method}")
    scratch = torch.zeros(numel, device="cuda")

    def null() -> None:
        scratch.fill_(1.0)

    graph, call = None, null
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    try:
        if method == METHOD_GRAPH:
            start = torch.cuda.Event(enable_timing=True, external=True)
            end = torch.cuda.Event(enable_timing=True, external=True)
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=side):
                start.record()
                null()
                end.record()
            torch.cuda.synchronize()
            call = graph.replay
        for _ in range(10):  # warm-up
            null()
        torch.cuda.synchronize()
        events: list[float] = []
        for _ in range(CALIBRATION_TRIALS):
            if flush:
                flush_l2()
            if graph is not None:
                graph.replay()
            else:
                start.record()
                null()
                end.record()
            end.synchronize()
            events.append(start.elapsed_time(end))
        seq = [f for _ in range(CALIBRATION_CUPTI_CALLS) for f in ((flush_l2, call) if flush else (call,))]
        try:
            names = flush_op_names() if flush else ()
            per = cupti.per_call_ms(cupti.device_ops(seq), CALIBRATION_CUPTI_CALLS, len(names), names)
        except RuntimeError as exc:  # the profiler could not start (CUPTI in use, or missing)
            torch.cuda.synchronize()  # a device fault re-raises here
            per, no_cupti = None, f"CUPTI unavailable ({str(exc).splitlines()[0][:120] if str(exc) else exc!r})"
        else:
            no_cupti = "CUPTI gave no null-kernel duration"
    except TypeError as exc:  # a torch without external events
        return Calibration(method, 0.0, note=f"null kernel could not be timed ({exc})")
    finally:
        if graph is not None:
            graph.reset()
    if not per:
        cal = Calibration(method, 0.0, statistics.median(events), None, no_cupti)
    else:
        cal = Calibration(method, overhead_ms(events, per), statistics.median(events), statistics.median(per))
    _CACHE[key] = cal
    return cal
