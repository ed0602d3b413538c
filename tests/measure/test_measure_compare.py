"""Interleaved comparisons turned into speedups and spreads (no GPU)."""

from __future__ import annotations

import pytest

from htam_core.measure.compare import Comparison, comparison_from_rounds


def test_clear_win_on_every_set():
    parent = [[1.00, 1.01, 0.99, 1.00, 1.00, 1.01], [2.0, 2.02, 1.98, 2.0, 2.01, 1.99]]
    cand = [[0.80, 0.80, 0.81, 0.79, 0.80, 0.80], [1.6, 1.61, 1.6, 1.59, 1.6, 1.6]]
    c = comparison_from_rounds(parent, cand, methods=["cuda-graph", "cuda-graph"])
    assert c.status == "win" and c.speedup == pytest.approx(1.25, rel=0.02) and c.counted == [0, 1]
    assert c.threshold == pytest.approx(1 + c.spread) and c.speedup > c.threshold


def test_noisy_gain_is_neutral():
    # a 3% median gain whose rounds scatter by +-10%
    parent = [[1.00, 1.12, 0.92, 1.10, 0.95, 1.08, 0.93, 1.11]]
    cand = [[1.00, 0.98, 0.99, 1.00, 1.00, 0.97, 0.99, 1.00]]
    c = comparison_from_rounds(parent, cand)
    assert c.speedup > 1.0 and c.spread > 0.03 and c.status == "neutral"


def test_launch_bound_set_does_not_drive_the_headline():
    # set 0 is launch-bound and 1.5x faster; set 1 (1 ms) does not move
    parent = [[0.006] * 6, [1.0, 1.0, 1.001, 0.999, 1.0, 1.0]]
    cand = [[0.004] * 6, [1.0, 0.999, 1.0, 1.0, 1.001, 1.0]]
    c = comparison_from_rounds(parent, cand)
    assert c.launch_bound == [0] and c.counted == [1] and c.status == "neutral"
    assert c.sets[0].launch_bound and c.sets[0].speedup == pytest.approx(1.5)
    assert "launch-bound" in c.note


def test_json_round_trip_and_bad_shapes():
    c = comparison_from_rounds([[1.0, 1.0]], [[0.5, 0.5]])
    assert Comparison.from_json(c.to_json()) == c
    with pytest.raises(ValueError):
        comparison_from_rounds([[1.0, 1.0]], [[0.5]])
    with pytest.raises(ValueError):
        comparison_from_rounds([], [])
