"""combine_runs: KernelBench results split over device calls pool into one summary (issue 17)."""

from __future__ import annotations

import json

import pytest

from htam_core.bench.kernelbench import KernelBenchError, combine_runs


def _rec(pid: int, status: str = "ok", speedup: float | None = 1.5, held: bool = False) -> dict:
    return {"level": 2, "problem_id": pid, "name": f"p{pid}", "held_out": held, "status": status,
            "correct": None if status == "skipped" else True, "speedup": None if status == "skipped" else speedup,
            "anchors": {} if status == "skipped" else {"compile-default": {"correct": True, "speedup": 2.0}}}


def _doc(recs: list[dict], date: str = "2026-12-01", **cfg: object) -> dict:
    return {"problems": recs, "measured": True, "environment": {"date": date}, "wall_s": 10.0,
            "config": {"engine": "rules", "steps": 3, "timing_trials": 100, "anchors": ["compile-default"], **cfg}}


def test_the_later_run_fills_the_skipped_problems_and_the_summary_is_recomputed() -> None:
    first = _doc([_rec(1, speedup=2.0), _rec(2, "skipped"), _rec(3, "skipped", held=True)])
    second = _doc([_rec(2, speedup=0.5), _rec(3, speedup=8.0, held=True)])
    doc = combine_runs([first, second])
    assert [r["problem_id"] for r in doc["problems"]] == [1, 2, 3]
    assert all(r["status"] == "ok" for r in doc["problems"])
    s = doc["summary"]
    assert s["level2"]["problems"] == 2 and s["level2"]["fast_p"]["1"] == pytest.approx(0.5)
    assert s["level2"]["geomean_speedup"] == pytest.approx(1.0)  # sqrt(2.0 * 0.5)
    assert s["level2-heldout"]["geomean_speedup"] == pytest.approx(8.0)
    assert s["level2"]["anchors"]["compile-default"]["measured"] == 2
    assert "problems 2, 3" in doc["resumed"]["line"] and doc["wall_s"] == pytest.approx(20.0)
    json.dumps(doc)


def test_a_skipped_record_never_replaces_one_that_ran() -> None:
    doc = combine_runs([_doc([_rec(1, speedup=3.0)]), _doc([_rec(1, "skipped")])])
    assert doc["problems"][0]["speedup"] == pytest.approx(3.0)


def test_runs_that_cannot_be_pooled_are_refused() -> None:
    with pytest.raises(KernelBenchError, match="steps"):
        combine_runs([_doc([_rec(1)]), _doc([_rec(2)], steps=5)])
    with pytest.raises(KernelBenchError, match="static"):
        combine_runs([_doc([_rec(1)]), {**_doc([_rec(2)]), "measured": False}])
    with pytest.raises(KernelBenchError, match="at least one"):
        combine_runs([])
