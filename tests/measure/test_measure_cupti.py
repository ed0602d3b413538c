"""Per-call device time from CUPTI operations, and the agreement rule (no GPU)."""

from __future__ import annotations

import pytest

from htam_core.measure.cupti import DeviceOp, check_agreement, per_call_ms


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
