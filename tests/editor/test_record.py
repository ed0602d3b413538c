"""The outcome of an applied code action from the profiles before and after it (the shared outcome rule)."""

from __future__ import annotations

from htam_core.editor.record import outcome_from_profiles
from htam_core.profile.result import Bottleneck, Profile, TimeStats


def _p(ms: float | None, mode: str = "gpu", **extra) -> Profile:
    return Profile("k", mode=mode, bottleneck=Bottleneck("memory-bound"), device="NVIDIA H200",
                   time_ms=TimeStats(ms, ms, ms) if ms is not None else None, extra=extra)


def test_measured_steps_follow_the_shared_threshold():
    assert outcome_from_profiles(_p(1.0), _p(0.5), None).status == "win"
    o = outcome_from_profiles(_p(1.0), _p(0.5), None)
    assert o.speedup == 2.0 and o.measured and o.correct and "correctness not checked" in o.note
    assert outcome_from_profiles(_p(1.0), _p(1.0 / 1.021), None).status == "win"  # just past the 2% floor
    assert outcome_from_profiles(_p(1.0), _p(1.0 / 1.02), None).status == "neutral"  # the edge is noise
    assert outcome_from_profiles(_p(1.0), _p(1.01), None).status == "neutral"
    assert outcome_from_profiles(_p(1.0), _p(1.03), None).status == "loss"


def test_failures_incorrect_and_unmeasured():
    f = outcome_from_profiles(_p(1.0), None, "ptxas error")
    assert (f.status, f.correct, f.measured, f.speedup) == ("failed", False, False, None)
    bad = outcome_from_profiles(_p(1.0), _p(0.5, correctness={"correct": False}), None)
    assert (bad.status, bad.correct, bad.speedup) == ("incorrect", False, None)
    static = outcome_from_profiles(None, _p(None, mode="static"), None)
    assert (static.status, static.measured, static.speedup) == ("neutral", False, None)
    assert "not measured" in static.note
