"""Shared checks of the synthetic replay families: every ablation that must lose the learned structure does,
and the ones that tie are strict xfails with their reason."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest


def ablation_params(lose: Iterable[str], tie: Mapping[str, str]) -> list[Any]:
    """Parameters for ``@pytest.mark.parametrize("ablation", ...)``: ``lose`` plain, ``tie`` as strict xfails."""
    return [*lose, *(pytest.param(a, marks=pytest.mark.xfail(reason=why, strict=True)) for a, why in tie.items())]


def assert_loses(replay: Mapping[str, Any], ablation: str, at: str) -> None:
    """``ablation`` needs more trials to 90 % than warm HTAM and has a lower geomean after ``at`` trials."""
    warm = replay["aggregates"]["htam"]
    other = replay["aggregates"][ablation]
    assert other["mean_trials_to_90"] > warm["mean_trials_to_90"], (ablation, other, warm)
    assert other["geomean_at"][at] < warm["geomean_at"][at], (ablation, other, warm)
