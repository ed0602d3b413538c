"""Interleaved comparison and the profile's timing block through the GPU worker (marked gpu)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
G = Path(__file__).resolve().parents[1] / "fixtures" / "gpu"


def _compare(parent, candidate):
    from htam_core.profile.gpu import pool_config
    from htam_core.profile.worker import run_in_worker

    r = run_in_worker("htam_core.measure.compare:compare_harnesses",
                      {"parent": parent.to_json(), "candidate": candidate.to_json()}, timeout_s=600,
                      pool_key="gpu0", **pool_config(0))
    assert r.ok, r.error
    from htam_core.measure.compare import Comparison

    return Comparison.from_json(r.value)


def test_block_size_win_and_self_comparison_neutral():
    from htam_core.harness import find_harness

    good = find_harness(G / "vadd.py", "vadd_kernel")
    good.kwargs = {"BLOCK": 1024}
    tiny = copy.deepcopy(good)
    tiny.kwargs = {"BLOCK": 32}
    win = _compare(tiny, good)
    assert win.status == "win" and win.speedup > 1.5 and win.methods == ["cuda-graph", "cuda-graph"], win
    same = _compare(good, copy.deepcopy(good))
    assert same.status == "neutral", same
    assert len(same.sets) == 2


def test_profile_shows_cupti_next_to_the_timer():
    from htam_core.profile.gpu import profile_on_gpu

    p = profile_on_gpu(G / "vadd.py", "vadd_kernel", use_ncu=False)
    t = p.extra["timing"]
    assert t["method"] == "cuda-graph" and t["refused"] is None, t
    assert t["cupti_ms"] is not None and abs(t["agreement"]) < 0.10, t
    assert all(s["cupti_ms"] is not None for s in t["per_set"])
