"""A synthetic family where the best second step depends on the first (issue 17): HTAM must learn the
transition from the other members' records, and every ablation must lose it.

The environment is a table of speedups we define, on the real candidate trees of five CUDA kernels of the
suite (the committed static table ``tests/bench/fixtures/synthetic_space_static.jsonl``), replayed through
the same runner as the GPU table (:func:`htam_core.bench.replay.run_replay`: the real optimize loop, every
measurement a lookup). The rule (:func:`factor`):

* first step: ``launch_bounds`` x1.30, ``cuda_block_size`` x1.10, any other x1.05 (all wins);
* after ``launch_bounds``: ``cuda_block_size`` x2.0 (the transition to learn), anything else x1.0;
* after ``cuda_block_size``: ``launch_bounds`` x0.7 (a loss), anything else x1.0;
* after any other step: ``cuda_block_size`` and ``launch_bounds`` x0.7, anything else x1.0.

The best path is ``launch_bounds -> cuda_block_size`` (2.6x); nothing else reaches 90 % of it (2.34x). Over
all records ``cuda_block_size`` looks better than ``launch_bounds`` (its x2.0 after ``launch_bounds``), so a
ranking that ignores the history (or the start) goes for ``cuda_block_size`` first and is trapped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.bench.replay import ReplayConfig, run_replay
from htam_core.bench.space import synthesize_table

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "bench" / "fixtures" / "synthetic_space_static.jsonl"
ABLATIONS = ("flat", "no-local", "no-prefix", "no-position", "no-update", "random-memory")


def factor(prev: str | None, s: str) -> float:
    """The synthetic speedup of step ``s`` over its parent, reached by step ``prev`` (``None``: the start)."""
    if prev is None:
        return {"launch_bounds": 1.30, "cuda_block_size": 1.10}.get(s, 1.05)
    if prev == "launch_bounds":
        return 2.0 if s == "cuda_block_size" else 1.0
    if prev == "cuda_block_size":
        return 0.7 if s == "launch_bounds" else 1.0
    return 0.7 if s in ("cuda_block_size", "launch_bounds") else 1.0


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("synthetic")
    import os

    old = os.getcwd()
    os.chdir(REPO)
    try:
        table = tmp / "synthetic.jsonl"
        synthesize_table(FIXTURE, table, factor, note=__doc__.split("\n\n")[2])
        return run_replay(ReplayConfig(table=str(table), work=str(tmp / "work"), budget=8, seeds=3),
                          log=lambda m: None)
    finally:
        os.chdir(old)


def test_the_environment_has_one_best_path(replay):
    targets = {r["kernel"]: r["target"] for r in replay["rows"]}
    assert len(targets) == 5
    assert all(t == pytest.approx(1.3 * 2.0) for t in targets.values())


def test_htam_learns_the_transition(replay):
    warm = replay["aggregates"]["htam"]
    assert warm["reached_90"] == warm["kernels_measured"] == 5
    assert warm["mean_trials_to_90"] <= 2.0  # launch_bounds, then cuda_block_size
    assert warm["geomean_at"]["2"] == pytest.approx(2.6)


@pytest.mark.parametrize("ablation", ABLATIONS)
def test_every_ablation_loses_it(replay, ablation):
    warm = replay["aggregates"]["htam"]
    other = replay["aggregates"][ablation]
    assert other["mean_trials_to_90"] > warm["mean_trials_to_90"], (ablation, other, warm)
    assert other["geomean_at"]["2"] < warm["geomean_at"]["2"], (ablation, other, warm)


def test_the_memory_beats_its_absence(replay):
    agg = replay["aggregates"]
    assert agg["htam"]["mean_trials_to_90"] < agg["htam-cold"]["mean_trials_to_90"]
    assert agg["htam"]["mean_trials_to_90"] <= 0.5 * agg["random"]["mean_trials_to_90"]
