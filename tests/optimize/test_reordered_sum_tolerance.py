"""A candidate whose only numeric change is the order of its float additions is checked at the reordered-sum fp32
tolerance (:data:`htam_core.verify.correctness.REORDERED_SUM_FP32_TOL`), every other candidate at the default: the
tolerance reaches the correctness check through the harness the evaluator hands the verifier. Run on the CPU
through the Triton interpreter (the bundled example), with a candidate off by 1.5e-4 of ``y``: beyond the 1e-4
default, within 1e-3."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from htam_core.harness import find_harness
from htam_core.optimize.evaluate import START_LABEL, Evaluator
from htam_core.source import load
from htam_core.verify.correctness import REORDERED_SUM_FP32_TOL

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "vector_add.py"


@pytest.fixture
def evaluator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Evaluator:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    path = tmp_path / "vector_add.py"
    shutil.copy(EXAMPLE, path)
    shutil.copy(EXAMPLE.parent / "htam.toml", tmp_path / "htam.toml")  # its harness (a reference: x + y)
    text = path.read_text()
    h = find_harness(path, "add_kernel", load(path))
    return Evaluator(path, "add_kernel", h, gpu=False, workdir=tmp_path / "w", original_text=text)


def test_the_reordered_sum_tolerance_reaches_the_check_and_only_when_asked(evaluator: Evaluator) -> None:
    text = evaluator.path.read_text()
    start, _ = evaluator.evaluate(text, START_LABEL)
    assert start.correct is not False
    off = text.replace("x + y, mask=mask", "x + y * 1.00015, mask=mask")
    assert off != text
    default, _ = evaluator.evaluate(off, "01-default")
    assert default.correct is False, default.messages
    loose, path = evaluator.evaluate(off, "02-reordered", fp32_tol=REORDERED_SUM_FP32_TOL)
    assert loose.correct is True, loose.messages
    assert evaluator.harness_for(path).fp32_tol is None  # the evaluation's tolerance does not outlive it
    assert dataclasses.replace(evaluator.harness, fp32_tol=None) == evaluator.harness


def test_the_strict_check_keeps_the_reordered_sum_tolerance(evaluator: Evaluator) -> None:
    """Regression: the strict re-verification of a >10x speedup capped fp32 at 1e-5 whatever the candidate was, so
    a correct reordering of a long sum would be refused there; a reordered-sum harness keeps its tolerance (the
    strict check adds seeds and input sets) and every other harness keeps the 1e-5 cap."""
    from htam_core.verify import strict

    text = evaluator.path.read_text()
    off = text.replace("x + y, mask=mask", "x + y * 1.00015, mask=mask")
    path = evaluator.write(off, "03-strict")
    plain = evaluator.harness_for(path)
    reordered = evaluator.harness_for(path, REORDERED_SUM_FP32_TOL)
    assert strict.strict_fp32_cap(plain) == strict.STRICT_FP32_TOL
    assert strict.strict_fp32_cap(reordered) == REORDERED_SUM_FP32_TOL
    assert strict.strict_reverify(plain, interpret=True, timeout_s=300).correct is False
    res = strict.strict_reverify(reordered, interpret=True, timeout_s=300)
    assert res.correct is True, res.messages


@pytest.mark.parametrize("reorders", [True, False])
def test_the_strict_check_gets_the_evaluators_harness_for_the_candidate(evaluator: Evaluator, reorders: bool,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The loop's strict re-verification builds its harness with :meth:`Evaluator.harness_for`, as the first
    verification did: the candidate's file, the reordered-sum tolerance only when the candidate only reorders."""
    from types import SimpleNamespace

    from htam_core.optimize.evaluate import Evaluation
    from htam_core.optimize.loop import _Loop
    from htam_core.verify import strict

    seen = []
    monkeypatch.setattr(strict, "needs_strict_reverify", lambda *a, **k: True)
    monkeypatch.setattr(strict, "strict_reverify",
                        lambda h, **k: seen.append(h) or SimpleNamespace(correct=True, messages=["ok"]))
    loop = _Loop.__new__(_Loop)
    loop.harness, loop.evaluator, loop.gpu = evaluator.harness, evaluator, True
    loop.task = SimpleNamespace(replay_table=None, gpu_index=0)
    cand = evaluator.write(evaluator.path.read_text(), "04-fast")
    ev = Evaluation(True, True, "gpu", time_ms=0.01)
    out = loop._strict(Evaluation(True, True, "gpu", time_ms=1.0), ev, cand, reorders)
    assert out.correct is True and len(seen) == 1
    assert seen[0] == evaluator.harness_for(cand, REORDERED_SUM_FP32_TOL if reorders else None)
    assert seen[0].path == str(cand.resolve())
    assert seen[0].fp32_tol == (REORDERED_SUM_FP32_TOL if reorders else evaluator.harness.fp32_tol)
