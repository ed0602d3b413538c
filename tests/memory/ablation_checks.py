"""Shared checks of the synthetic replay families: every ablation that must lose the learned structure does,
and the ones that tie are strict xfails with their reason."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pytest

import htam_core.optimize.loop as loop_mod
from htam_core.memory.knowledge import load_knowledge


def ablation_params(lose: Iterable[str], tie: Mapping[str, str]) -> list[Any]:
    """Parameters for ``@pytest.mark.parametrize("ablation", ...)``: ``lose`` plain, ``tie`` as strict xfails."""
    return [*lose, *(pytest.param(a, marks=pytest.mark.xfail(reason=why, strict=True)) for a, why in tie.items())]


def assert_loses(replay: Mapping[str, Any], ablation: str, at: str) -> None:
    """``ablation`` needs more trials to 90 % than warm HTAM and has a lower geomean after ``at`` trials."""
    warm = replay["aggregates"]["htam"]
    other = replay["aggregates"][ablation]
    assert other["mean_trials_to_90"] > warm["mean_trials_to_90"], (ablation, other, warm)
    assert other["geomean_at"][at] < warm["geomean_at"][at], (ablation, other, warm)


@contextmanager
def pinned_strategies(steps: Iterable[str]) -> Iterator[None]:
    """While open, the optimize loop ranks from the packaged knowledge base restricted to ``steps`` (strategy ids;
    their directions, priors and transition priors unchanged), so a synthetic environment's steps are its own,
    not whichever rules steps the engine makes on its kernels today. Fails if an id is not in the knowledge base."""
    wanted = set(steps)
    kb = load_knowledge()
    pinned = dataclasses.replace(kb, strategies=[s for s in kb.strategies if s.id in wanted])
    assert {s.id for s in pinned.strategies} == wanted, wanted - {s.id for s in pinned.strategies}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(loop_mod, "load_knowledge", lambda: pinned)
        yield
