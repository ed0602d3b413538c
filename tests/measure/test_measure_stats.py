"""The spread rule, the win rule, launch-bound sets and the headline geomean (no GPU)."""

from __future__ import annotations

import math

import pytest

from htam_core.measure.stats import (
    LAUNCH_BOUND_MS,
    MIN_SPREAD,
    bootstrap_median_ci,
    classify_gain,
    headline_geomean,
    launch_bound,
    ratio_spread,
    relative_iqr,
    spread_pct,
)


def test_relative_iqr_of_known_samples():
    assert relative_iqr([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx((4.0 - 2.0) / 3.0)
    assert relative_iqr([2.0] * 7) == 0.0
    with pytest.raises(ValueError):
        relative_iqr([])


def test_bootstrap_ci_contains_the_median_and_is_reproducible():
    xs = [1.00, 1.01, 0.99, 1.02, 0.98, 1.00, 1.01, 0.99, 1.03, 0.97]
    lo, hi = bootstrap_median_ci(xs, seed=3)
    assert lo <= 1.0 <= hi and hi - lo < 0.05
    assert bootstrap_median_ci(xs, seed=3) == (lo, hi)
    assert bootstrap_median_ci([2.5]) == (2.5, 2.5)


def test_ratio_spread_grows_with_noise_and_has_a_floor():
    quiet = [1.10, 1.10, 1.10, 1.10, 1.10, 1.10]
    med, spread = ratio_spread(quiet)
    assert med == pytest.approx(1.10) and spread == MIN_SPREAD
    noisy = [0.9, 1.3, 1.0, 1.25, 0.95, 1.2, 1.05, 1.15]
    med_n, spread_n = ratio_spread(noisy)
    assert spread_n > 0.05
    with pytest.raises(ValueError):
        ratio_spread([1.0, -1.0])


def test_win_only_beyond_the_spread():
    assert classify_gain(1.05, 0.02) == "win"
    assert classify_gain(1.05, 0.08) == "neutral"  # a 5% gain inside an 8% spread is noise
    assert classify_gain(0.90, 0.02) == "loss"
    assert classify_gain(0.97, 0.05) == "neutral"
    assert classify_gain(1.015, None) == "neutral"  # the 2% floor applies without a spread
    assert classify_gain(None, 0.01) == "neutral"


def test_launch_bound_flag():
    assert launch_bound(0.0099) and not launch_bound(LAUNCH_BOUND_MS) and not launch_bound(None)


def test_headline_leaves_launch_bound_sets_out_and_says_so():
    # set 0: 6 µs -> 4 µs (launch-bound, 1.5x); set 1: 1.0 ms -> 0.98 ms
    h = headline_geomean([0.006, 1.0], [0.004, 0.98])
    assert h.counted == [1] and h.launch_bound == [0]
    assert h.speedup == pytest.approx(1.0 / 0.98)
    assert "launch-bound" in h.note and "0" in h.note


def test_headline_when_every_set_is_launch_bound():
    h = headline_geomean([0.006, 0.008], [0.003, 0.004])
    assert h.counted == [0, 1] and h.launch_bound == [0, 1] and h.speedup == pytest.approx(2.0)
    assert "every input set is launch-bound" in h.note


def test_headline_plain_geomean_without_launch_bound_sets():
    h = headline_geomean([1.0, 2.0], [0.5, 2.0])
    assert h.note == "" and h.speedup == pytest.approx(math.sqrt(2.0))
    assert headline_geomean([None], [1.0]).speedup is None


def test_spread_pct():
    assert spread_pct(1.0, 1.01) == pytest.approx(1.0)
