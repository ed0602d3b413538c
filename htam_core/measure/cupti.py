"""The CUPTI cross-check: the device time of the kernels a launcher launches, from ``torch.profiler``.

``torch.profiler`` with ``ProfilerActivity.CUDA`` records CUPTI activity: every kernel, memcpy and memset with
its device start and end. :func:`device_ops` runs a sequence of calls under the profiler and returns those
operations in device-time order; :func:`per_call_ms` cuts the sequence ``flush, call, flush, call, ...`` into
calls by position (the flush's own operation count is measured once) and sums each call's durations. That
sum is the kernel's own device time, with neither launch gaps nor host time in it: the truth the timer is
checked against (:func:`check_agreement`).

Runs in a worker process with torch and CUDA; :func:`check_agreement` is pure.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from htam_core.measure.stats import LAUNCH_BOUND_MS

__all__ = ["AGREEMENT_TOL", "ABS_SLACK_MS", "CALIBRATED_SLACK_MS", "DeviceOp", "device_ops", "per_call_ms", "Agreement", "check_agreement", "median_or_none"]

#: Largest relative difference between the timer and CUPTI that is accepted (10 %).
AGREEMENT_TOL = 0.10
#: A difference up to this is accepted whatever its relative size, ms (4 µs): the launch and completion
#: latency of an event pair around one launch, which CUPTI's kernel records leave out. Measured on an H200
#: (bench/results/timing-agreement-*): 1.9-2.8 µs with the events inside a graph, 2.6-3.5 µs around a replay.
#: The timer subtracts its calibrated share of it (:mod:`htam_core.measure.calibrate`) before this check, so the
#: slack now covers the calibration's residual and a timer whose calibration could not run (CUPTI unavailable).
#: The errors this check exists for (events timing the host's launcher, work on side streams) are 20 µs and more.
ABS_SLACK_MS = 0.004
#: The slack when the timer's event overhead was calibrated and subtracted, ms (1 µs): what is left is the
#: calibration's residual, 0.2-0.4 µs on every kernel of 5 µs and more in the H200 agreement table, so a
#: 10-40 µs kernel off by more than 10 % is refused too (with the 4 µs slack it was not).
CALIBRATED_SLACK_MS = 0.001


@dataclass(frozen=True)
class DeviceOp:
    """One device operation CUPTI saw: ``name``, ``start_us`` and ``dur_us`` (microseconds)."""

    name: str
    start_us: float
    dur_us: float


def device_ops(calls: Sequence[Callable[[], Any]]) -> list[DeviceOp]:
    """Run ``calls`` in order under ``torch.profiler`` (CUDA activity only), synchronize, and return every
    device operation (kernels, copies, memsets; not user annotations) sorted by device start time.

    Raises:
        RuntimeError: from the calls or CUDA.
    """
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for c in calls:
            c()
        torch.cuda.synchronize()
    ops = [DeviceOp(e.name, float(e.time_range.start), float(e.time_range.end - e.time_range.start))
           for e in prof.events()
           if e.device_type == DeviceType.CUDA and not getattr(e, "is_user_annotation", False)]
    return sorted(ops, key=lambda o: o.start_us)


def per_call_ms(ops: Sequence[DeviceOp], calls: int, flush_ops: int) -> list[float] | None:
    """Per-call device time (ms) from the operations of ``calls`` repetitions of ``flush, call``.

    Args:
        ops: :func:`device_ops` of the sequence, in device order.
        calls: repetitions; flush_ops: device operations one flush launches (0 without flushes).

    Returns:
        One sum of durations per call, or ``None`` when the operations do not split evenly (work on other
        streams interleaved, or a launcher whose operation count varies from call to call).
    """
    if calls <= 0 or len(ops) % calls:
        return None
    per = len(ops) // calls
    if per <= flush_ops:
        return None
    out = []
    for i in range(calls):
        chunk = ops[i * per:(i + 1) * per]
        out.append(sum(o.dur_us for o in chunk[flush_ops:]) / 1000.0)
    return out


@dataclass(frozen=True)
class Agreement:
    """The timer checked against CUPTI.

    Attributes:
        ok: ``True`` agree within :data:`AGREEMENT_TOL`, ``False`` disagree, ``None`` not checked.
        relative: ``timer / cupti - 1``, or ``None``.
        message: the refusal or the note (empty when they agree).
    """

    ok: bool | None
    relative: float | None
    message: str = ""


def check_agreement(timer_ms: float | None, cupti_ms: float | None, *, tol: float = AGREEMENT_TOL,
                    slack_ms: float = ABS_SLACK_MS) -> Agreement:
    """Compare a timer's median with CUPTI's per-call device time.

    They disagree when the difference exceeds both ``tol`` (relative) and ``slack_ms`` (absolute:
    :data:`ABS_SLACK_MS` for raw events, :data:`CALIBRATED_SLACK_MS` once the event overhead was subtracted). A kernel
    whose CUPTI time is under :data:`~htam_core.measure.stats.LAUNCH_BOUND_MS` is not refused (a
    launch-bound kernel's event interval always holds the launch latency); the note says so.

    Args:
        timer_ms, cupti_ms: medians in ms (``None`` = not measured).
        tol: accepted relative difference; slack_ms: accepted absolute difference, ms.
    """
    if timer_ms is None or cupti_ms is None or cupti_ms <= 0:
        return Agreement(None, None, "not cross-checked: CUPTI gave no per-call device time")
    rel = timer_ms / cupti_ms - 1.0
    if abs(rel) <= tol or abs(timer_ms - cupti_ms) <= slack_ms:
        return Agreement(True, rel)
    said = f"timer and CUPTI disagree ({timer_ms:.4g} ms vs {cupti_ms:.4g} ms, {rel:+.0%})"
    if cupti_ms < LAUNCH_BOUND_MS:
        return Agreement(True, rel, f"{said}: launch-bound kernel (< {LAUNCH_BOUND_MS * 1000:.0f} µs), where the "
                                    "events hold the launch latency; kept, flagged launch-bound")
    return Agreement(False, rel, f"not measured: {said}")


def median_or_none(xs: Sequence[float] | None) -> float | None:
    """Median of ``xs``, or ``None`` for ``None``/empty."""
    return statistics.median(xs) if xs else None
