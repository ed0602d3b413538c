"""Per-call device time from CUPTI operations, and the agreement rule (no GPU)."""

from __future__ import annotations

import pytest

from htam_core.measure.cupti import (
    AGREEMENT_TOL,
    CALIBRATED_SLACK_MS,
    DeviceOp,
    check_agreement,
    check_same_trials,
    per_call_ms,
    split_calls,
)


def _ops(seq):
    t, out = 0.0, []
    for name, dur in seq:
        out.append(DeviceOp(name, t, dur))
        t += dur + 1.0
    return out


def test_per_call_cuts_flush_call_sequences_by_position():
    # two calls of (flush, kernel a, kernel b); the user's kernel may even share the flush's name
    ops = _ops([("fill", 60.0), ("fill", 3.0), ("k", 7.0), ("fill", 61.0), ("fill", 3.5), ("k", 6.5)])
    assert per_call_ms(ops, 2, 1) == pytest.approx([0.010, 0.010])
    assert per_call_ms(ops, 4, 1) is None  # does not split evenly
    assert per_call_ms(_ops([("fill", 60.0)] * 2), 2, 1) is None  # no work besides the flush
    assert per_call_ms(_ops([("k", 5.0), ("k", 7.0)]), 2, 0) == pytest.approx([0.005, 0.007])


def test_agreement_within_ten_percent():
    assert check_agreement(0.105, 0.100).ok is True
    a = check_agreement(0.130, 0.100)
    assert a.ok is False and a.message.startswith("not measured: timer and CUPTI disagree (0.13 ms vs 0.1 ms")
    assert a.relative == pytest.approx(0.3)


def test_difference_within_the_event_latency_is_accepted():
    a = check_agreement(0.0150, 0.0120)  # 25% but 3 µs: an event pair's launch latency
    assert a.ok is True and a.message == ""
    assert check_agreement(0.0170, 0.0120).ok is False  # 42% and 5 µs


def test_a_calibrated_timer_gets_only_the_calibration_residual():
    from htam_core.measure.cupti import CALIBRATED_SLACK_MS
    # 12 µs kernel read as 15 µs: inside the raw event latency, but not once the overhead was subtracted
    assert check_agreement(0.0150, 0.0120).ok is True
    a = check_agreement(0.0150, 0.0120, slack_ms=CALIBRATED_SLACK_MS)
    assert a.ok is False and a.message.startswith("not measured: timer and CUPTI disagree")
    assert check_agreement(0.0128, 0.0120, slack_ms=CALIBRATED_SLACK_MS).ok is True  # 7 %: within 10 %
    assert check_agreement(0.0060, 0.0045, slack_ms=CALIBRATED_SLACK_MS).ok is True  # launch-bound: kept


def test_launch_bound_disagreement_is_kept_with_a_note():
    a = check_agreement(0.0095, 0.0050)
    assert a.ok is True and "launch-bound" in a.message


def test_no_cupti_is_not_checked():
    a = check_agreement(0.1, None)
    assert a.ok is None and "not cross-checked" in a.message


# ---------------------------------------------------------------- the mechanisms behind refused timings
def test_a_drifted_cut_is_caught_by_the_flush_names():
    # call 1 launches two memsets before its kernel, call 2 none: 4 + 2 operations still divide by 2 calls, and the
    # position cut drifts (the second "call" would be the first call's kernel, the second flush and its kernel)
    seq = [("fill", 60.0), ("memset", 1.0), ("memset", 1.0), ("k", 70.0), ("fill", 60.0), ("k", 70.0)]
    ops = _ops(seq)
    assert per_call_ms(ops, 2, 1) is not None  # by position alone the second call's sum holds a flush
    assert per_call_ms(ops, 2, 1, ("fill",)) is None
    # the same names in the right places: cut as before, even when the kernel shares the flush's name
    ok = _ops([("fill", 60.0), ("fill", 3.0), ("fill", 60.0), ("fill", 3.5)])
    assert per_call_ms(ok, 2, 1, ("fill",)) == pytest.approx([0.003, 0.0035])


def test_operations_varying_between_calls_do_not_split():
    # a memset before the atomics on the first call only: 3 + 2 operations over 2 calls
    ops = _ops([("fill", 60.0), ("memset", 1.0), ("count", 80.0), ("fill", 60.0), ("count", 80.0)])
    assert split_calls(ops, 2, 1, ("fill",)) is None
    assert per_call_ms(ops, 2, 1) is None


def _profiled(kernel_us: float, threads: int) -> tuple[float, float]:
    """A one-scalar-access-per-thread kernel without and with the profiler: on an H200 the profiler added 16 µs to
    the 64M-thread saxpy (bench/results/profiler-probe-h200-2026-12-01/), so ``16 µs x threads / 2**26``."""
    return kernel_us / 1000.0, (kernel_us + 16.0 * threads / 2 ** 26) / 1000.0


@pytest.mark.parametrize("kernel_us,threads", [(75.0, 2 ** 26), (60.0, 2 ** 26), (245.0, 2 ** 26 // 4)])
def test_a_kernel_the_profiler_slows_is_checked_on_the_same_trials(kernel_us, threads):
    # the half sigmoid (2**26 halves, one per thread) and the privatized count (2**26 ints, one per thread)
    timer, profiled = _profiled(kernel_us, threads)
    cupti = profiled * 0.998  # CUPTI and the timer's events agree within 0.2 % on the same trials
    slowed = profiled / timer - 1.0
    old = check_agreement(timer, cupti, slack_ms=CALIBRATED_SLACK_MS)
    assert (old.ok is False) == (slowed > AGREEMENT_TOL)  # the old check refused exactly the slowed ones
    a = check_same_trials(timer, profiled, cupti, slack_ms=CALIBRATED_SLACK_MS)
    assert a.ok is True and a.relative == pytest.approx(profiled / cupti - 1.0)
    assert ("slower while CUPTI recorded it" in a.message) == (slowed > AGREEMENT_TOL)


def test_same_trials_still_refuse_events_that_time_other_work():
    # events that bracket more than the kernel (host launcher, side work): they disagree on the same trials too
    a = check_same_trials(0.090, 0.090, 0.070, slack_ms=CALIBRATED_SLACK_MS)
    assert a.ok is False and "disagree on the same trials (0.09 ms vs 0.07 ms" in a.message
    # an un-profiled timer above the profiled trials timed something those trials did not
    b = check_same_trials(0.100, 0.075, 0.075, slack_ms=CALIBRATED_SLACK_MS)
    assert b.ok is False and b.message.startswith("not measured: the timer's trials read 0.1 ms")
    # within the tolerance either way: agreed, no note
    c = check_same_trials(0.072, 0.075, 0.075, slack_ms=CALIBRATED_SLACK_MS)
    assert c.ok is True and c.message == ""


def test_same_trials_without_events_is_the_plain_check():
    assert check_same_trials(0.130, None, 0.100) == check_agreement(0.130, 0.100)
    assert check_same_trials(0.1, 0.1, None).ok is None


def test_a_kernel_shorter_than_the_launch_bound_is_kept_on_the_same_trials():
    # 6 µs by the events, 4.5 µs by CUPTI on the same trials: the calibration's residual on a tiny kernel
    a = check_same_trials(0.0060, 0.0060, 0.0045, slack_ms=CALIBRATED_SLACK_MS)
    assert a.ok is True and "launch-bound" in a.message
