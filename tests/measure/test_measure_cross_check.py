"""The timer's CUPTI cross-check on synthetic passes (no GPU): :func:`htam_core.measure.timer.cross_check_timing`.

A pass is the timer's own trials recorded by CUPTI: the device operations (flush, then the call) and the raw event
interval of each trial. The kernels are modelled on the two timings refused on the H200: a half sigmoid over 2**26
elements and a privatized count over 2**26 ints, one element per thread, which the profiler slows by ~16 µs.
"""

from __future__ import annotations

import pytest

from htam_core.measure.cupti import CuptiPass, DeviceOp
from htam_core.measure.method import METHOD_GRAPH, METHOD_WALL
from htam_core.measure.timer import Timing, cross_check_timing

FLUSH_US = 60.0
OVERHEAD_MS = 0.0025  # the calibrated event latency the timer subtracts


def _pass(kernel_us: list[list[float]], *, overhead_ms: float = OVERHEAD_MS, extra_event_us: float = 0.0,
          flush: tuple[str, ...] = ("fill",)) -> CuptiPass:
    """One trial per entry: its flush, then its kernels (µs); the events read the kernels plus the overhead."""
    ops, t, events = [], 0.0, []
    for call in kernel_us:
        for name in flush:
            ops.append(DeviceOp(name, t, FLUSH_US))
            t += FLUSH_US + 1.0
        for i, d in enumerate(call):
            ops.append(DeviceOp(f"k{i}", t, d))
            t += d + 1.0
        events.append((sum(call) + extra_event_us) / 1000.0 + overhead_ms)
    return CuptiPass(tuple(ops), len(kernel_us), flush, tuple(events))


def _timing(median_ms: float, method: str = METHOD_GRAPH, overhead_ms: float = OVERHEAD_MS) -> Timing:
    return Timing(median_ms, median_ms, median_ms, 20, method=method, event_overhead_ms=overhead_ms)


@pytest.mark.parametrize("plain_us,profiled_us", [(75.0, 91.0), (62.0, 78.0)])
def test_a_kernel_slowed_by_the_profiler_is_measured(plain_us, profiled_us):
    t = _timing(plain_us / 1000.0)
    cross_check_timing(t, _pass([[profiled_us]] * 5))
    assert t.refused is None
    assert t.cupti_ms == pytest.approx(profiled_us / 1000.0) and t.cupti_ops == 1
    assert t.cupti_events_ms == pytest.approx(profiled_us / 1000.0)
    assert t.profiler_slowdown == pytest.approx(profiled_us / plain_us - 1.0)
    assert any("slower while CUPTI recorded it" in w for w in t.warnings)


def test_events_that_time_more_than_the_kernel_are_refused():
    # the events bracket 20 µs of work CUPTI does not see (a host launcher, a side stream): refused as before
    t = _timing(0.095)
    cross_check_timing(t, _pass([[75.0]] * 5, extra_event_us=20.0))
    assert t.refused is not None and "disagree on the same trials" in t.refused


def test_an_unprofiled_timer_above_the_checked_trials_is_refused():
    t = _timing(0.120)
    cross_check_timing(t, _pass([[75.0]] * 5))
    assert t.refused is not None and "more than the trials CUPTI recorded" in t.refused


def test_a_pass_that_does_not_split_is_not_cross_checked():
    t = _timing(0.075)
    cross_check_timing(t, _pass([[1.0, 75.0], [75.0], [75.0]]))  # a memset on the first call only
    assert t.cupti_ms is None and t.cupti_ops is None and t.refused is None
    assert any("not cross-checked" in w for w in t.warnings)


def test_wall_clock_times_are_checked_against_cupti_directly():
    # the side-stream guard's wall-clock figure is no event interval: the same-trials events do not apply
    t = _timing(0.2, method=METHOD_WALL, overhead_ms=0.0)
    cross_check_timing(t, _pass([[75.0]] * 5, overhead_ms=0.0))
    assert t.cupti_events_ms is None and t.refused is not None and "timer and CUPTI disagree (" in t.refused


def test_no_pass_is_not_cross_checked():
    t = _timing(0.075)
    cross_check_timing(t, None)
    assert t.agreement is None and t.refused is None and t.to_json()["cupti_events_ms"] is None
