"""No fake wins: the fresh-process re-timing of the best kernel (CPU only: the GPU timing layer is faked).

``Evaluator._on_gpu`` is replaced by a fake whose start kernel takes 1.0 ms and every candidate 0.5 ms, and
``Evaluator.compare`` by a fake whose search-time comparison is a clear win; the fresh re-timing
(``fresh=True``) returns what the test asks for: a reproduced 2x, or a gain inside the noise.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htam_core.measure.compare import comparison_from_rounds
from htam_core.memory import open_store
from htam_core.optimize import OptimizeTask, run_optimize
from htam_core.optimize.evaluate import Evaluation, Evaluator
from htam_core.optimize.reproduce import (
    NOT_MEASURED,
    NOT_REPRODUCED,
    REPRODUCED,
    judge_reproduction,
    kept_beyond_spread,
)
from htam_core.optimize.task import StepRecord
from tests.optimize.report_checks import copy_example
from tests.optimize.test_measure_cache import _profile

ROUNDS = 8
#: a clear 2x win (parent 1.0 ms, candidate 0.5 ms, a little noise)
WIN = comparison_from_rounds([[1.0, 1.01, 0.99, 1.0] * 2], [[0.5, 0.5, 0.505, 0.495] * 2])
#: the best re-timed in a fresh process: no faster than the start (inside the noise)
NOISE = comparison_from_rounds([[1.0, 1.05, 0.96, 1.02] * 2], [[1.0, 0.98, 1.01, 1.0] * 2])
#: a real win, but 1.6x instead of the reported 2x
SMALLER = comparison_from_rounds([[1.0, 1.0, 1.0, 1.0] * 2], [[0.625, 0.625, 0.626, 0.624] * 2])


def _step(i: int, speedup: float | None, spread: float | None, accepted: bool = True) -> StepRecord:
    return StepRecord(index=i, direction="d", strategy=f"s{i}", transform=None, description="x", params={},
                      edit="", status="win" if accepted else "neutral", correct=True, verified_on="gpu",
                      time_ms=1.0, speedup=speedup, speedup_vs_start=speedup, accepted=accepted, evidence="",
                      messages=[], candidate_path=None, spread=spread)


def test_judge_reproduced_within_tolerance_and_above_spread() -> None:
    r = judge_reproduction(2.0, WIN, steps=[_step(1, 2.0, 0.02)])
    assert r.status == REPRODUCED and r.reproduced and abs(r.ratio - WIN.speedup / 2.0) < 1e-12
    assert r.kept_steps == 1 and r.kept_beyond_spread is True and "reproduced" in r.line()


def test_judge_not_reproduced_outside_tolerance_inside_noise_or_failed() -> None:
    far = judge_reproduction(2.0, SMALLER)
    assert far.status == NOT_REPRODUCED and "more than 5% below" in far.reason and far.fresh == SMALLER.speedup
    noise = judge_reproduction(1.03, NOISE)  # within 5% of the reported figure, but inside the noise
    assert abs(noise.ratio - 1) <= 0.05 and noise.status == NOT_REPRODUCED and "inside the noise" in noise.reason
    failed = judge_reproduction(2.0, None, "interleaved comparison failed: timeout: slow")
    assert failed.status == NOT_REPRODUCED and failed.fresh is None and "timeout" in failed.reason


def test_judge_faster_fresh_retiming_reproduces_the_smaller_reported_figure() -> None:
    """One-sided: a fresh re-timing that shows more than the search reported confirms the claim (1.6x reported,
    2x re-timed); the verdict says the reported, smaller figure is the published one. The boundary is 5% below."""
    faster = judge_reproduction(1.6, WIN)
    assert faster.status == REPRODUCED and faster.ratio > 1.05 and "smaller figure" in faster.reason
    assert faster.reported == 1.6 and "at most 5% below" in faster.line()
    just = judge_reproduction(WIN.speedup / 0.96, WIN)  # the fresh figure 4% below the reported one
    assert just.status == REPRODUCED and "within the tolerance" in just.reason
    short = judge_reproduction(WIN.speedup / 0.94, WIN)  # 6% below
    assert short.status == NOT_REPRODUCED and "below" in short.reason


def test_kept_steps_against_their_spread() -> None:
    assert kept_beyond_spread([_step(1, 1.5, 0.02), _step(2, 1.01, 0.02, accepted=False)]) == (1, True)
    assert kept_beyond_spread([_step(1, 1.5, 0.02), _step(2, 1.01, 0.02)]) == (2, False)  # 1.01 < 1.02
    assert kept_beyond_spread([_step(1, 1.5, None)]) == (1, False)  # no measured spread
    assert kept_beyond_spread([_step(1, None, None)]) == (0, None)  # static mode: followed, never kept


@pytest.fixture
def fake_timing(monkeypatch: pytest.MonkeyPatch) -> dict:
    """Fake GPU: the start 1.0 ms, candidates 0.5 ms; compare() returns WIN in the search and
    ``state["fresh"]`` for the fresh re-timing. ``state["calls"]`` lists the ``fresh`` flag of every call."""
    state: dict = {"fresh": WIN, "calls": [], "start": None}

    def on_gpu(self, cand_path: Path, model, kernel, use_ncu: bool, lab: list[str], fp32_tol=None) -> Evaluation:
        ms = 1.0 if Path(cand_path).read_text() == state["start"] else 0.5
        return Evaluation(True, True, "gpu", None, ms, [ms], _profile(ms=ms), model, ["ok"], lab)

    def compare(self, parent_text: str, cand_path: Path, *, fresh: bool = False):
        state["calls"].append(fresh)
        return (state["fresh"] if fresh else WIN), ""

    monkeypatch.setattr(Evaluator, "_on_gpu", on_gpu)
    monkeypatch.setattr(Evaluator, "compare", compare)
    monkeypatch.setattr("htam_core.optimize.loop.gpu_available", lambda: True)
    return state


def _run(tmp_path: Path, state: dict, fresh, name: str):
    src = copy_example(tmp_path / f"src-{name}")
    state["start"], state["fresh"] = src.read_text(), fresh
    mem = tmp_path / f"{name}.sqlite3"
    res = run_optimize(OptimizeTask(path=str(src), kernel="add_kernel", budget=2, static=None, use_ncu=False,
                                    out_dir=str(tmp_path / name), memory_path=str(mem)))
    store = open_store(str(mem))
    try:
        by_uid = {r.uid: r.outcome.status for r in store.records()}
        # by strategy, for the steps the loop kept (another variant of a kept step may be tried and not kept)
        statuses = {s.strategy: by_uid[res.recorded[s.index]] for s in res.steps if s.accepted}
    finally:
        store.close()
    return res, json.loads((res.report_dir / "report.json").read_text()), res.report_md.read_text(), statuses


def test_reproduced_best_is_a_win_and_is_learned(tmp_path: Path, fake_timing: dict) -> None:
    res, data, md, statuses = _run(tmp_path, fake_timing, WIN, "ok")
    assert fake_timing["calls"][-1] is True and fake_timing["calls"].count(True) == 1  # one fresh re-timing
    kept = [s for s in res.steps if s.accepted]
    assert kept and res.best_speedup == pytest.approx(2.0)
    assert res.reproduction.status == REPRODUCED and res.confirmed_win and res.apply_refusal() is None
    assert data["reproduction"]["status"] == REPRODUCED and data["reproduction"]["kept_beyond_spread"] is True
    assert "fresh-process re-timing: reproduced" in md and "Best correct kernel is 2.00×" in md
    assert statuses[kept[0].strategy] == "win"


def test_not_reproduced_best_is_no_win_not_applied_and_learned_neutral(tmp_path: Path, fake_timing: dict) -> None:
    res, data, md, statuses = _run(tmp_path, fake_timing, NOISE, "noise")
    kept = [s for s in res.steps if s.accepted]
    assert kept and kept[0].status == "win"  # the search judged it a win ...
    assert res.reproduction.status == NOT_REPRODUCED and not res.confirmed_win  # ... the fresh process did not
    assert "not confirmed" in res.apply_refusal()
    assert data["reproduction"]["fresh"] == pytest.approx(NOISE.speedup) and data["apply_refusal"]
    assert "No confirmed win" in md and "fresh-process re-timing: not reproduced" in md
    assert statuses[kept[0].strategy] == "neutral"


def test_static_mode_says_not_measured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Evaluator, "_static", lambda self, p, model, k, lab, fp32_tol=None: Evaluation(
        True, True, "interpreter", model=model, labels=lab))
    src = copy_example(tmp_path / "src")
    res = run_optimize(OptimizeTask(path=str(src), kernel="add_kernel", budget=1, static=True,
                                    out_dir=str(tmp_path / "o"), memory_path=str(tmp_path / "mem.sqlite3")))
    assert res.reproduction.status == NOT_MEASURED and "static mode" in res.reproduction.reason
    assert "fresh-process re-timing: not measured" in res.report_md.read_text()
