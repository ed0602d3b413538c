"""The CUPTI cross-check: the device time of the kernels a launcher launches, from ``torch.profiler``.

``torch.profiler`` with ``ProfilerActivity.CUDA`` records CUPTI activity: every kernel, memcpy and memset with
its device start and end. :func:`device_ops` runs a sequence of calls under the profiler and returns those
operations in device-time order; :func:`per_call_ms` cuts the sequence ``flush, call, flush, call, ...`` into
calls by position (the flush's own operation count and names are measured once, and every call must begin with
them: :func:`split_calls`) and sums each call's durations. That sum is the kernel's own device time, with
neither launch gaps nor host time in it: the truth the timer is checked against (:func:`check_agreement`), on the
same trials (:func:`check_same_trials`: the profiler slows some kernels, so the timer's events are read on the
trials CUPTI recorded).

Runs in a worker process with torch and CUDA; :func:`check_agreement` is pure.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from htam_core.measure.stats import LAUNCH_BOUND_MS

__all__ = ["AGREEMENT_TOL", "ABS_SLACK_MS", "CALIBRATED_SLACK_MS", "DeviceOp", "CuptiPass", "device_ops", "split_calls", "per_call_ms",
           "Agreement", "check_agreement", "check_same_trials", "median_or_none", "reads_above"]

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


def split_calls(ops: Sequence[DeviceOp], calls: int, flush_ops: int,
                flush_names: Sequence[str] = ()) -> list[list[DeviceOp]] | None:
    """Cut the operations of ``calls`` repetitions of ``flush, call`` into one list per repetition, by position.

    Args:
        ops: :func:`device_ops` of the sequence, in device order.
        calls: repetitions; flush_ops: device operations one flush launches (0 without flushes).
        flush_names: the flush's operation names, in order (:func:`htam_core.measure.flush.flush_op_names`);
            when given, every repetition must begin with them, so a cut that drifted (one call launching an extra
            operation and a later one fewer keeps the total divisible) is caught instead of summing a flush as the
            kernel. A kernel that shares the flush's name is still cut right (the check is by position and name).

    Returns:
        Each repetition's operations, its flush included, or ``None`` when they do not split evenly (work on
        other streams interleaved, a launcher whose operation count varies from call to call, a drifted cut) or a
        repetition holds nothing besides its flush.
    """
    if calls <= 0 or len(ops) % calls:
        return None
    per = len(ops) // calls
    if per <= flush_ops:
        return None
    chunks = [list(ops[i * per:(i + 1) * per]) for i in range(calls)]
    want = list(flush_names)
    if want and any([o.name for o in c[:len(want)]] != want for c in chunks):
        return None
    return chunks


def per_call_ms(ops: Sequence[DeviceOp], calls: int, flush_ops: int,
                flush_names: Sequence[str] = ()) -> list[float] | None:
    """Per-call device time (ms) from the operations of ``calls`` repetitions of ``flush, call``: each
    repetition's (:func:`split_calls`) durations summed, its flush left out.

    Args:
        ops, calls, flush_ops, flush_names: as in :func:`split_calls`.

    Returns:
        One sum of durations per call, or ``None`` when the operations do not split into calls
        (:func:`split_calls`).
    """
    chunks = split_calls(ops, calls, flush_ops, flush_names)
    if chunks is None:
        return None
    return [sum(o.dur_us for o in c[flush_ops:]) / 1000.0 for c in chunks]


@dataclass(frozen=True)
class CuptiPass:
    """One CUPTI pass of the timer: ``calls`` trials (``flush, call``) timed by the timer's own events while the
    profiler recorded them.

    Attributes:
        ops: every device operation CUPTI saw, in device order (flushes included).
        calls: trials; flush_names: the flush's operation names (empty without flushes).
        event_ms: the timer's event interval of each of those trials, ms, raw (no overhead subtracted).
    """

    ops: tuple[DeviceOp, ...]
    calls: int
    flush_names: tuple[str, ...] = ()
    event_ms: tuple[float, ...] = ()

    def chunks(self) -> list[list[DeviceOp]] | None:
        """Each trial's operations, flush included (:func:`split_calls`), or ``None``."""
        return split_calls(self.ops, self.calls, len(self.flush_names), self.flush_names)

    def per_call_ms(self) -> list[float] | None:
        """CUPTI's device time of each trial, flush left out, ms (:func:`per_call_ms`), or ``None``."""
        return per_call_ms(self.ops, self.calls, len(self.flush_names), self.flush_names)

    def ops_per_call(self) -> int | None:
        """Device operations of one call, flush left out, or ``None`` when the trials do not split."""
        c = self.chunks()
        return None if c is None else len(c[0]) - len(self.flush_names)


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


def check_same_trials(timer_ms: float | None, profiled_ms: float | None, cupti_ms: float | None, *,
                      tol: float = AGREEMENT_TOL, slack_ms: float = ABS_SLACK_MS) -> Agreement:
    """Check the timer against CUPTI like for like: on the trials CUPTI recorded.

    Attaching the profiler slows some kernels (on an H200, one scalar access per thread over 64M threads: 16-23 µs
    more, whatever the block size; bench/results/profiler-probe-h200-2026-12-01/), so CUPTI's time of a 70 µs
    kernel can exceed the un-profiled timer by 20 % while both are right. The check therefore compares the
    timer's own events of the trials that CUPTI recorded (``profiled_ms``, event overhead subtracted, same
    flush, same graph) with CUPTI's time of those trials (:func:`check_agreement`): that is what tells whether the
    events bracket the kernel's device work and nothing else. The un-profiled median (``timer_ms``, the figure
    published) must then not exceed ``profiled_ms`` beyond ``tol`` and ``slack_ms`` (the profiler only adds
    time: a higher un-profiled figure timed something the checked trials did not); lower is the profiler's own
    slowdown, kept and said.

    Args:
        timer_ms: the timer's median without the profiler, ms. profiled_ms: the median of its events over the
            trials CUPTI recorded, ms (``None``: not recorded; the plain :func:`check_agreement` of ``timer_ms``).
        cupti_ms: CUPTI's per-call median of those trials, ms. tol, slack_ms: as in :func:`check_agreement`.

    Returns:
        The :class:`Agreement` of ``profiled_ms`` with ``cupti_ms`` (``relative`` is theirs), refused when they
        disagree or when the un-profiled timer reads more than the profiled trials; the note says how much
        slower the kernel ran under the profiler when that exceeds ``tol`` and ``slack_ms``.
    """
    if profiled_ms is None:
        return check_agreement(timer_ms, cupti_ms, tol=tol, slack_ms=slack_ms)
    like = check_agreement(profiled_ms, cupti_ms, tol=tol, slack_ms=slack_ms)
    if like.ok is not True or timer_ms is None or cupti_ms is None:
        return Agreement(like.ok, like.relative, like.message.replace(
            "timer and CUPTI disagree", "timer and CUPTI disagree on the same trials"))
    same = f"timer {profiled_ms:.4g} ms vs CUPTI {cupti_ms:.4g} ms on the same trials"
    if reads_above(timer_ms, profiled_ms, tol=tol, slack_ms=slack_ms):
        return Agreement(False, like.relative, f"not measured: the timer's trials read {timer_ms:.4g} ms, more "
                                               f"than the trials CUPTI recorded ({same}): they timed other work")
    if _beyond(timer_ms, profiled_ms, tol, slack_ms):
        slow = profiled_ms / timer_ms - 1.0
        note = (f"the kernel ran {slow:+.0%} slower while CUPTI recorded it ({same}, {like.relative:+.1%}; "
                f"{timer_ms:.4g} ms without the profiler, the time kept)")
        return Agreement(True, like.relative, "; ".join(m for m in (like.message, note) if m))
    return like


def reads_above(timer_ms: float, profiled_ms: float, *, tol: float = AGREEMENT_TOL,
                slack_ms: float = ABS_SLACK_MS) -> bool:
    """The un-profiled median ``timer_ms`` reads above the timer's own events of the trials CUPTI recorded
    (``profiled_ms``) beyond ``tol`` (relative) and ``slack_ms`` (ms): the case :func:`check_same_trials` refuses,
    since the profiler only adds time."""
    return timer_ms > profiled_ms and _beyond(timer_ms, profiled_ms, tol, slack_ms)


def _beyond(a_ms: float, b_ms: float, tol: float, slack_ms: float) -> bool:
    """``a_ms`` and ``b_ms`` differ by more than ``tol`` relative to ``b_ms`` and more than ``slack_ms``."""
    return abs(a_ms / b_ms - 1.0) > tol and abs(a_ms - b_ms) > slack_ms


def median_or_none(xs: Sequence[float] | None) -> float | None:
    """Median of ``xs``, or ``None`` for ``None``/empty."""
    return statistics.median(xs) if xs else None
