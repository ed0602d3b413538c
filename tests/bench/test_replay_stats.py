"""The replay's statistics on small inputs whose answer is known: the bootstrap interval of a mean over
kernels, paired per-kernel better/worse/tied counts with the sign test (the report's use of them is tested in
test_space_replay.py, beside the report's other tests)."""

from __future__ import annotations

import math

import pytest

from htam_core.bench.metrics import bootstrap_mean_ci, paired_counts, sign_test_p


def test_bootstrap_interval_of_identical_values_is_the_value():
    assert bootstrap_mean_ci([2.0] * 7) == (2.0, 2.0)
    assert bootstrap_mean_ci([]) is None


def test_bootstrap_interval_is_seeded_and_matches_the_normal_interval_on_a_large_sample():
    xs = [0.0] * 50 + [1.0] * 50  # mean 0.5, standard error 0.05: normal 95 % interval 0.402 to 0.598
    lo, hi = bootstrap_mean_ci(xs)
    assert bootstrap_mean_ci(xs) == (lo, hi)  # same seed, same interval
    assert lo < 0.5 < hi
    assert lo == pytest.approx(0.5 - 1.96 * 0.05, abs=0.015) and hi == pytest.approx(0.5 + 1.96 * 0.05, abs=0.015)
    narrow = bootstrap_mean_ci(xs * 4)  # four times the kernels: half the width
    assert (narrow[1] - narrow[0]) == pytest.approx((hi - lo) / 2, rel=0.15)


def test_bootstrap_refuses_a_bad_level():
    with pytest.raises(ValueError, match="level"):
        bootstrap_mean_ci([1.0, 2.0], level=1.0)
    with pytest.raises(ValueError, match="resamples"):
        bootstrap_mean_ci([1.0, 2.0], resamples=0)


def test_paired_counts_compare_only_the_kernels_both_ran():
    res = paired_counts({"a": 1.0, "b": 2.0, "c": 3.0}, {"a": 2.0, "b": 2.0, "c": 1.0, "d": 5.0})
    assert (res["kernels"], res["better"], res["worse"], res["tied"]) == (3, 1, 1, 1)
    assert res["mean_difference"] == pytest.approx(1 / 3)
    lo, hi = res["mean_difference_ci"]
    assert -1.0 <= lo <= 1 / 3 <= hi <= 2.0
    assert res["sign_test_p"] == 1.0
    # means over seeds that differ only by float rounding are a tie
    assert paired_counts({"a": 7 / 3}, {"a": (1 + 3 + 3) / 3})["tied"] == 1


def test_sign_test_exact_values():
    assert sign_test_p(0, 0) == 1.0
    assert sign_test_p(5, 0) == pytest.approx(2 / 32)
    assert sign_test_p(18, 2) == pytest.approx(2 * (1 + 20 + 190) / 2 ** 20)
    assert sign_test_p(2, 18) == sign_test_p(18, 2)
    assert sign_test_p(4, 4) == 1.0
    assert math.isclose(sign_test_p(1, 0), 1.0)
    with pytest.raises(ValueError):
        sign_test_p(-1, 2)
