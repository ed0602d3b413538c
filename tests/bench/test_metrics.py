"""Aggregates of the benchmarks on synthetic records: geomean, fast_p, trials-to-90%, medians, roofline."""

from __future__ import annotations

import math

import pytest

from htam_core.bench import metrics


def test_geomean_ignores_unmeasured() -> None:
    assert metrics.geomean([2.0, 8.0, None]) == pytest.approx(4.0)
    assert metrics.geomean([None, None]) is None
    assert metrics.geomean([]) is None


def test_fast_p_counts_correct_and_strictly_faster_over_all_problems() -> None:
    recs = [(True, 2.5), (True, 1.0), (False, 3.0), (True, 0.7), (None, None)]
    assert metrics.fast_p(recs, 0.0) == pytest.approx(3 / 5)  # fast_0 = correct rate
    assert metrics.fast_p(recs, 1.0) == pytest.approx(1 / 5)  # 1.0 is not > 1.0; the wrong 3.0x never counts
    assert metrics.fast_p(recs, 0.5) == pytest.approx(3 / 5)
    assert metrics.fast_p(recs, 2.0) == pytest.approx(1 / 5)
    assert metrics.correct_rate(recs) == pytest.approx(3 / 5)
    assert metrics.geomean_correct(recs) == pytest.approx((2.5 * 1.0 * 0.7) ** (1 / 3))


def test_fast_p_unmeasured_is_none() -> None:
    assert metrics.fast_p([(None, None), (None, None)], 1.0) is None
    assert metrics.fast_p([], 1.0) is None
    assert metrics.correct_rate([(None, None)]) is None


def test_trials_to_fraction() -> None:
    steps = [None, 1.5, 1.2, 3.0, None]
    assert metrics.best_so_far(steps) == [1.0, 1.5, 1.5, 3.0, 3.0]
    assert metrics.trials_to_fraction(steps, 3.2) == 4  # 0.9 * 3.2 = 2.88, reached at trial 4
    assert metrics.trials_to_fraction(steps, 1.6) == 2  # 1.44
    assert metrics.trials_to_fraction(steps, 5.0) is None  # never
    assert metrics.trials_to_fraction(steps, 1.05) == 0  # the start already is within 90%
    assert metrics.trials_to_fraction(steps, None) is None


def test_median_trials_treats_not_reached_as_infinite() -> None:
    assert metrics.median_trials([1, 3, None]) == 3
    assert metrics.median_trials([None, None, 2]) == math.inf
    assert metrics.median_trials([1, 5], [True, False]) == 1
    assert metrics.median_trials([1], [False]) is None


def test_roofline() -> None:
    # 1 GB at 1 TB/s = 1 ms; compute 1 GFLOP at 10 TFLOP/s = 0.1 ms -> memory bound, 1 ms
    bound = metrics.roofline_time_s(1e9, 1e9, 1e12, 1e13)
    assert bound == pytest.approx(1e-3)
    assert metrics.roofline_fraction(2.0, bound) == pytest.approx(0.5)
    assert metrics.roofline_fraction(None, bound) is None
    assert metrics.roofline_time_s(None, None, 1e12, 1e13) is None
    assert metrics.spread_pct(1.0, 1.02) == pytest.approx(2.0)
