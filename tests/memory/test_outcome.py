"""The one outcome rule shared by the optimize loop and the editor."""

from __future__ import annotations

import pytest

from htam_core.memory.outcome import WIN_THRESHOLD, outcome_of, status_of


def test_thresholds_are_symmetric_in_log_space():
    assert status_of(WIN_THRESHOLD) == "win" and status_of(1 / WIN_THRESHOLD) == "loss"
    assert status_of(1.0) == "neutral" and status_of(1.019) == "neutral" and status_of(0.985) == "neutral"
    assert status_of(None) == "neutral"


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
