"""v12: a strategy's own value is an upper quantile of its attended outcomes (``RankerConfig.quantile``)."""

from __future__ import annotations

import math

import pytest
import torch

from htam_core.memory.ranker import RankerConfig, _segment_attention, _segment_quantile


def _t(xs):
    return torch.tensor(xs, dtype=torch.float64)


def test_certain_zero_against_a_mixed_step_with_a_gain_on_the_nearest():
    """The stencil case of docs/MEMORY.md (v11): the block size gains on the nearest kernel and loses on others,
    so its attended mean is below zero, under a step measured neutral everywhere; its upper quartile is not."""
    sims = _t([1.0, 1.0, 0.95, 0.95, 0.95, 0.95, 1.0, 0.95, 0.95])
    groups = torch.tensor([0, 0, 0, 0, 0, 0, 1, 1, 1])
    value = _t([0.30, 0.30, -1.15, -0.67, -0.16, 0.0, 0.0, 0.0, 0.0])
    mean = _segment_attention(sims, groups, value, 2, 0.1).value
    assert float(mean[0]) < 0.0 == float(mean[1])
    q = _segment_quantile(sims, groups, value, 2, 0.1, 0.75)
    assert float(q[0]) == pytest.approx(0.30) and float(q[1]) == 0.0


def test_quantile_follows_the_attention_weights():
    # two records: the near one (weight 1) and a far one (weight e^-5): the median is the near one's value
    sims = _t([1.0, 0.5])
    groups = torch.tensor([0, 0])
    assert float(_segment_quantile(sims, groups, _t([-1.0, 2.0]), 1, 0.1, 0.5)[0]) == -1.0
    # equal weights: the upper quartile of {-1, 2} is 2, the lower quartile -1
    eq = _t([1.0, 1.0])
    assert float(_segment_quantile(eq, groups, _t([-1.0, 2.0]), 1, 0.1, 0.75)[0]) == 2.0
    assert float(_segment_quantile(eq, groups, _t([-1.0, 2.0]), 1, 0.1, 0.25)[0]) == -1.0


def test_no_valued_record_is_nan_and_nan_values_are_skipped():
    sims = _t([1.0, 1.0, 1.0])
    groups = torch.tensor([0, 0, 2])
    q = _segment_quantile(sims, groups, _t([math.nan, 0.5, math.nan]), 3, 0.1, 0.75)
    assert float(q[0]) == 0.5 and math.isnan(float(q[1])) and math.isnan(float(q[2]))
    assert torch.isnan(_segment_quantile(_t([]), torch.tensor([], dtype=torch.long), _t([]), 2, 0.1, 0.75)).all()


def test_quantile_setting_is_checked():
    with pytest.raises(ValueError, match="quantile"):
        RankerConfig(quantile=1.0)
    assert RankerConfig(quantile=None).quantile is None
