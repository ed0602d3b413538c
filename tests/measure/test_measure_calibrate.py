"""The event-overhead calibration's pure rules: overhead, subtraction, the report line (no GPU)."""

from __future__ import annotations

import pytest

from htam_core.measure.calibrate import EVENT_RESOLUTION_MS, Calibration, describe, overhead_ms, subtract


def test_overhead_is_median_events_minus_median_cupti():
    # H200-like figures: events around a null kernel ~3.8 us, its CUPTI duration ~1.2 us
    ev = [0.0038, 0.0039, 0.0037, 0.0100]  # one slow trial does not move the median
    k = [0.0012, 0.0012, 0.0013]
    assert overhead_ms(ev, k) == pytest.approx(0.00265)


def test_overhead_never_negative_and_needs_samples():
    assert overhead_ms([0.001], [0.002]) == 0.0
    with pytest.raises(ValueError):
        overhead_ms([], [0.001])
    with pytest.raises(ValueError):
        overhead_ms([0.001], [])


def test_subtract_every_trial_floored_at_event_resolution():
    assert subtract([0.0526, 0.0100], 0.0026) == pytest.approx([0.0500, 0.0074])
    assert subtract([0.0020], 0.0026) == [EVENT_RESOLUTION_MS]  # a trial shorter than the overhead
    assert subtract([0.01], 0.0) == [0.01]
    with pytest.raises(ValueError):
        subtract([0.01], -0.001)


def test_describe_says_what_was_subtracted_or_why_not():
    line = describe(Calibration("cuda-graph", 0.00265, 0.0038, 0.00115))
    assert line == "event overhead 2.65 µs subtracted (null kernel: events 3.80 µs, CUPTI 1.15 µs)"
    assert describe(None) == "event overhead not subtracted"
    assert "CUPTI gave no" in describe(Calibration("cuda-graph", 0.0, 0.004, None, "CUPTI gave no null-kernel "
                                                                                  "duration"))
