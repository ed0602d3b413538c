"""The loop's judgement of a measured step: interleaved comparison, win only beyond the spread (no GPU)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from htam_core.measure.compare import comparison_from_rounds
from htam_core.measure.stats import SPREAD_RULE
from htam_core.optimize.evaluate import Evaluation
from htam_core.optimize.loop import _Loop


class _Evaluator:
    def __init__(self, comp, why=""):
        self.comp, self.why, self.calls = comp, why, []

    def compare(self, parent_text, cand_path):
        self.calls.append((parent_text, cand_path))
        return self.comp, self.why


def _gain(comp, why="", parent_ms=(1.0,), cand_ms=(0.9,)):
    fake = SimpleNamespace(evaluator=_Evaluator(comp, why), warnings=[])
    parent = Evaluation(True, True, "gpu", time_ms=parent_ms[0], per_set_ms=list(parent_ms))
    cand = Evaluation(True, True, "gpu", time_ms=cand_ms[0], per_set_ms=list(cand_ms))
    return _Loop._gain(fake, "parent text", parent, cand, Path("c.py")), fake


def test_noisy_gain_is_neutral_and_the_threshold_is_stated():
    comp = comparison_from_rounds([[1.00, 1.12, 0.92, 1.10, 0.95, 1.08, 0.93, 1.11]],
                                  [[1.00, 0.98, 0.99, 1.00, 1.00, 0.97, 0.99, 1.00]])
    (speedup, spread, status, msgs), fake = _gain(comp)
    assert status == "neutral" and spread == comp.spread and speedup == comp.speedup
    assert "win threshold" in msgs[0] and f"{comp.threshold:.3f}x" in msgs[0]
    assert any(SPREAD_RULE in w for w in fake.warnings)
    assert fake.evaluator.calls == [("parent text", Path("c.py"))]


def test_clear_win_is_a_win():
    comp = comparison_from_rounds([[1.0, 1.0, 1.01, 0.99]], [[0.5, 0.5, 0.5, 0.51]])
    (speedup, spread, status, _), _ = _gain(comp)
    assert status == "win" and speedup > 1.9 and spread is not None


def test_without_a_comparison_separate_timings_and_the_floor_are_used():
    (speedup, spread, status, msgs), _ = _gain(None, "interleaved comparison failed: timeout: slow",
                                               parent_ms=(1.0,), cand_ms=(0.995,))
    assert spread is None and status == "neutral" and abs(speedup - 1 / 0.995) < 1e-9
    assert "failed" in msgs[0] and "minimum spread 2%" in msgs[0]
