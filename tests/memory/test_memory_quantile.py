"""v12: a strategy's own value is an upper quantile of its attended outcomes (``RankerConfig.quantile``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from htam_core.memory import Outcome, Ranker, load_knowledge, open_store
from htam_core.memory.ranker import RankerConfig, _segment_attention, _segment_quantile
from tests.memory.test_memory_ranker import STATE, _by_id, _rank


def _t(xs):
    return np.array(xs, dtype=np.float64)


def test_certain_zero_against_a_mixed_step_with_a_gain_on_the_nearest():
    """The stencil case of docs/MEMORY-LOG.md (v11): the block size gains on the nearest kernel and loses on others,
    so its attended mean is below zero, under a step measured neutral everywhere; its upper quartile is not."""
    sims = _t([1.0, 1.0, 0.95, 0.95, 0.95, 0.95, 1.0, 0.95, 0.95])
    groups = np.array([0, 0, 0, 0, 0, 0, 1, 1, 1])
    value = _t([0.30, 0.30, -1.15, -0.67, -0.16, 0.0, 0.0, 0.0, 0.0])
    mean = _segment_attention(sims, groups, value, 2, 0.1).value
    assert float(mean[0]) < 0.0 == float(mean[1])
    q = _segment_quantile(sims, groups, value, 2, 0.1, 0.75)
    assert float(q[0]) == pytest.approx(0.30) and float(q[1]) == 0.0


def test_quantile_follows_the_attention_weights():
    # two records: the near one (weight 1) and a far one (weight e^-5): the median is the near one's value
    sims = _t([1.0, 0.5])
    groups = np.array([0, 0])
    assert float(_segment_quantile(sims, groups, _t([-1.0, 2.0]), 1, 0.1, 0.5)[0]) == -1.0
    # equal weights: the upper quartile of {-1, 2} is 2, the lower quartile -1
    eq = _t([1.0, 1.0])
    assert float(_segment_quantile(eq, groups, _t([-1.0, 2.0]), 1, 0.1, 0.75)[0]) == 2.0
    assert float(_segment_quantile(eq, groups, _t([-1.0, 2.0]), 1, 0.1, 0.25)[0]) == -1.0


def test_no_valued_record_is_nan_and_nan_values_are_skipped():
    sims = _t([1.0, 1.0, 1.0])
    groups = np.array([0, 0, 2])
    q = _segment_quantile(sims, groups, _t([math.nan, 0.5, math.nan]), 3, 0.1, 0.75)
    assert float(q[0]) == 0.5 and math.isnan(float(q[1])) and math.isnan(float(q[2]))
    assert np.isnan(_segment_quantile(_t([]), np.array([], dtype=np.int64), _t([]), 2, 0.1, 0.75)).all()


def test_quantile_setting_is_checked():
    with pytest.raises(ValueError, match="quantile"):
        RankerConfig(quantile=1.0)
    assert RankerConfig(quantile=None).quantile is None


def _record(store, step: str, speedups: list[float]) -> None:
    for i, sp in enumerate(speedups):
        st = "win" if sp > 1.02 else "loss" if sp < 0.98 else "neutral"
        store.record([], STATE, step, Outcome(sp, True, True, st), f"{step}-kernel{i}", "H200")  # one per kernel


@pytest.mark.parametrize("quantile", [0.75, None])
def test_the_ranker_puts_a_step_that_can_gain_before_a_certain_zero(tmp_path, quantile):
    """Same similarity everywhere: ``vectorize_loads`` gained x1.5 on two kernels and lost x0.6 on two (mean below
    zero), ``restrict_pointers`` was x1.00 on four. Under v12 the first has the higher own value; under the mean
    (the method before v12) the certain zero wins."""
    store = open_store(tmp_path / "m.sqlite3")
    try:
        _record(store, "vectorize_loads", [1.5, 1.5, 0.6, 0.6])
        _record(store, "restrict_pointers", [1.0, 1.0, 1.0, 1.0])
        steps = _by_id(_rank(Ranker(load_knowledge(), store, config=RankerConfig(quantile=quantile))))
        mixed, zero = (steps[s].parts["local_transition"] for s in ("vectorize_loads", "restrict_pointers"))
        assert zero == pytest.approx(0.0)
        if quantile is None:
            assert mixed < zero
        else:
            assert mixed > 0.2  # shrunk ln 1.5 (0.405) with four records' confidence
        assert steps["vectorize_loads"].expected_gain == pytest.approx(math.exp(0.5 * (math.log(1.5) + math.log(0.6)))
                                                                       - 1.0)  # the shown gain stays the mean
    finally:
        store.close()
