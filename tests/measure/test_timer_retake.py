"""``retake_if_drifted``: un-profiled trials that read above the trials CUPTI recorded after them are taken once more;
the retake is kept only when it agrees with the profiled trials, else the first set stays (and the cross-check
refuses it). Pure: the sampler is a list, no GPU."""

from __future__ import annotations

from htam_core.measure import cupti
from htam_core.measure.cupti import CuptiPass
from htam_core.measure.timer import profiled_ms, retake_if_drifted

SLACK = cupti.CALIBRATED_SLACK_MS


def _sampler(sets: list[list[float]]):
    calls: list[int] = []

    def sample() -> list[float]:
        calls.append(1)
        return sets[len(calls) - 1]
    return sample, calls


def test_a_first_set_above_the_profiled_trials_is_replaced_by_an_agreeing_retake():
    sample, calls = _sampler([[0.0921, 0.0925, 0.0930]])
    times, note = retake_if_drifted([0.105, 0.1053, 0.106], 0.0925, SLACK, sample)
    assert calls == [1] and times == [0.0921, 0.0925, 0.0930]
    assert note is not None and "0.1053 ms" in note and "0.0925 ms" in note and "kept" in note


def test_a_retake_still_above_keeps_the_first_set_and_the_check_refuses_it():
    sample, calls = _sampler([[0.104, 0.105, 0.106]])
    first = [0.105, 0.1053, 0.106]
    times, note = retake_if_drifted(first, 0.0925, SLACK, sample)
    assert calls == [1] and times is first and note is None
    ag = cupti.check_same_trials(0.1053, 0.0925, 0.0923, slack_ms=SLACK)
    assert ag.ok is False and "timed other work" in ag.message


def test_agreeing_or_slower_profiled_trials_take_nothing_again():
    sample, calls = _sampler([])
    assert retake_if_drifted([0.093, 0.094], 0.0925, SLACK, sample)[1] is None  # within 10 %
    assert retake_if_drifted([0.090, 0.091], 0.105, SLACK, sample)[1] is None  # the profiler's own slowdown
    assert retake_if_drifted([0.093], None, SLACK, sample)[1] is None  # no events of the CUPTI pass
    assert calls == []


def test_the_profiled_median_has_the_event_overhead_subtracted_and_the_retake_then_agrees():
    cp = CuptiPass(ops=(), calls=3, flush_names=(), event_ms=(0.0945, 0.0950, 0.0955))
    prof = profiled_ms(cp, 0.002)
    assert prof is not None and abs(prof - 0.093) < 1e-9
    assert profiled_ms(CuptiPass(ops=(), calls=3), 0.002) is None
    sample, _ = _sampler([[0.0928, 0.0931, 0.0934]])
    times, note = retake_if_drifted([0.105, 0.1053, 0.106], prof, SLACK, sample)
    assert note and cupti.check_same_trials(sorted(times)[1], prof, 0.0925, slack_ms=SLACK).ok is True
