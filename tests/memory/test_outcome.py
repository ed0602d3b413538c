"""The one outcome rule shared by the optimize loop and the editor."""

from __future__ import annotations

import pytest

from htam_core.memory.outcome import MIN_SPREAD, outcome_of, status_of


def test_thresholds_are_symmetric_in_log_space():
    edge = 1 + MIN_SPREAD
    assert status_of(edge * 1.001) == "win" and status_of(1 / edge / 1.001) == "loss"
    assert status_of(1.0) == "neutral" and status_of(edge * 0.999) == "neutral" and status_of(0.985) == "neutral"
    assert status_of(None) == "neutral"


def test_a_gain_inside_the_measured_spread_is_neutral_and_the_spread_is_stored():
    assert status_of(1.08, spread=0.10) == "neutral" and status_of(1.12, spread=0.10) == "win"
    assert status_of(1.03, spread=0.001) == "win"  # the floor, not a tighter spread, is the limit below
    assert status_of(1.015, spread=0.001) == "neutral"
    o = outcome_of(1.08, spread=0.10)
    assert o.status == "neutral" and o.spread == 0.10 and o.measured
    assert outcome_of(3.0, spread=0.1, failed=True).spread is None


def test_failed_and_incorrect_win_over_any_speedup():
    assert status_of(3.0, failed=True) == "failed"
    assert status_of(3.0, incorrect=True) == "incorrect"
    o = outcome_of(3.0, incorrect=True, note="x" * 400)
    assert (o.speedup, o.correct, o.measured, o.status, len(o.note)) == (None, False, False, "incorrect", 300)


def test_measured_flag_follows_the_speedup():
    assert outcome_of(1.5).measured and outcome_of(1.5).correct
    assert not outcome_of(None).measured and outcome_of(None).correct
    with pytest.raises(ValueError):
        outcome_of(float("nan"))


def test_the_loop_and_the_editor_use_this_rule():
    import inspect

    from htam_core.editor import record
    from htam_core.optimize import loop

    assert "status_of(" in inspect.getsource(loop._Loop._judge)
    assert record.outcome_of is outcome_of and loop.outcome_of is outcome_of
    assert not hasattr(loop, "WIN_THRESHOLD")
