"""The stricter second verification of a >10x speedup: its trigger in the optimize loop (stubbed evaluation,
no GPU needed) and the check itself on the CPU through the Triton interpreter (in a worker)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest

from htam_core.harness import Harness
from htam_core.optimize.evaluate import Evaluation
from htam_core.optimize.loop import _Loop
from htam_core.optimize.policy import Choice
from htam_core.verify import strict
from htam_core.verify.correctness import CorrectnessResult

RUNTIME = Path(__file__).resolve().parents[1] / "fixtures" / "hacks" / "runtime"


def test_trigger_threshold():
    assert strict.needs_strict_reverify(10.5, gpu=True)
    assert not strict.needs_strict_reverify(10.0, gpu=True)  # "above 10x"
    assert not strict.needs_strict_reverify(50.0, gpu=False)  # nothing timed without a GPU
    assert not strict.needs_strict_reverify(None, gpu=True)


def _loop_stub(tmp_path: Path) -> SimpleNamespace:
    stub = SimpleNamespace(gpu=True, harness=None, path=tmp_path / "k.py",
                           task=SimpleNamespace(engine="rules", gpu_index=0, replay_table=None),
                           _speedup=_Loop._speedup)
    stub._strict = lambda start, ev, p, reorders=False: _Loop._strict(stub, start, ev, p, reorders)  # type: ignore[attr-defined]
    # no interleaved comparison here: the speedup comes from the two separate timings (the rule under test is
    # the strict re-verification, not the spread)
    stub.warnings = []
    stub.evaluator = SimpleNamespace(
        compare=lambda parent_text, cand_path: (None, "no interleaved timing"),
        harness_for=lambda p, tol=None: dataclasses.replace(  # Evaluator.harness_for on the stub's harness
            stub.harness, path=str(Path(p).resolve()), fp32_tol=stub.harness.fp32_tol if tol is None else tol))
    stub._gain = lambda *a: _Loop._gain(stub, *a)  # type: ignore[attr-defined]
    return stub


def _judge(stub: SimpleNamespace, start_ms: float, cand_ms: float) -> object:
    start = Evaluation(True, True, "gpu", time_ms=start_ms, per_set_ms=[start_ms])
    ev = Evaluation(True, True, "gpu", time_ms=cand_ms, per_set_ms=[cand_ms], messages=["matched"])
    choice = Choice("memory_access", "cuda.vectorize", "cuda.vectorize", 1.0, "", "")
    cand = SimpleNamespace(params={}, description="d", code="new")
    return _Loop._judge(stub, 1, choice, cand, "old", start, start, ev, stub.path)  # type: ignore[arg-type]


@pytest.fixture
def calls(monkeypatch):
    seen: list[dict] = []
    verdict = {"correct": True}

    def fake(harness, **kw):
        seen.append({"path": harness.path, "fp32_tol": harness.fp32_tol, **kw})
        if verdict["correct"]:
            return CorrectnessResult(True, "correct", "gpu", 0.0, ["matched the reference on 10 trial(s)"], 10)
        return CorrectnessResult(False, "incorrect", "gpu", 1.0, ["strict-reverify: did not survive", "x differs"],
                                 3, ["mismatch", "strict-reverify"])

    monkeypatch.setattr(strict, "strict_reverify", fake)
    return seen, verdict


def test_speedup_above_10x_is_reverified_and_a_failure_is_incorrect(tmp_path, calls):
    seen, verdict = calls
    stub = _loop_stub(tmp_path)
    stub.harness = Harness(kind="spec", path="orig.py", kernel="k")
    verdict["correct"] = False
    rec = _judge(stub, 10.0, 0.5)  # 20x
    assert len(seen) == 1 and seen[0]["path"] == str((tmp_path / "k.py").resolve())
    assert rec.status == "incorrect" and rec.correct is False and not rec.accepted
    assert rec.speedup is None and rec.speedup_vs_start is None
    assert any("strict-reverify" in m for m in rec.messages)


def test_a_reordering_is_reverified_at_its_reordered_sum_tolerance(tmp_path, calls):
    """Regression: the strict check of a candidate that only reorders float sums got the plain harness (1e-5
    cap); it gets the reordered-sum tolerance its first check had, and other candidates none."""
    from htam_core.verify.correctness import REORDERED_SUM_FP32_TOL

    seen, _ = calls
    stub = _loop_stub(tmp_path)
    stub.harness = Harness(kind="spec", path="orig.py", kernel="k")
    start = Evaluation(True, True, "gpu", time_ms=10.0, per_set_ms=[10.0])
    ev = Evaluation(True, True, "gpu", time_ms=0.5, per_set_ms=[0.5], messages=["matched"])
    choice = Choice("parallel_mapping", "warp_per_row", "cuda.warp_per_row", 1.0, "", "")
    for params, tol in (({"changes_numerics": True, "reorders_only": True}, REORDERED_SUM_FP32_TOL), ({}, None)):
        cand = SimpleNamespace(params=params, description="d", code="new")
        _Loop._judge(stub, 1, choice, cand, "old", start, start, ev, stub.path)  # type: ignore[arg-type]
        assert seen[-1]["fp32_tol"] == tol


def test_speedup_above_10x_that_survives_is_a_win(tmp_path, calls):
    seen, verdict = calls
    stub = _loop_stub(tmp_path)
    stub.harness = Harness(kind="spec", path="o.py", kernel="k")
    rec = _judge(stub, 10.0, 0.5)
    assert len(seen) == 1 and rec.status == "win" and rec.accepted and rec.speedup == pytest.approx(20.0)
    assert any("strict-reverify: passed" in m for m in rec.messages)


def test_ordinary_speedup_and_static_mode_do_not_trigger(tmp_path, calls):
    seen, _ = calls
    stub = _loop_stub(tmp_path)
    stub.harness = Harness(kind="spec", path="o.py", kernel="k")
    rec = _judge(stub, 10.0, 2.0)  # 5x
    assert rec.status == "win" and not seen
    stub.gpu = False
    _judge(stub, 10.0, 0.1)
    assert not seen


# -- the check itself, on the CPU ---------------------------------------------------------------------------
def _harness(name: str):
    from htam_core.verify.check import resolve_harness

    return resolve_harness(RUNTIME / name)


def test_strict_check_refuses_a_constant_and_passes_an_honest_kernel():
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    bad = strict.strict_reverify(_harness("scaled-inputs__constant.py"), interpret=True, timeout_s=300)
    assert not bad.correct and "strict-reverify" in bad.refused_by
    assert bad.messages[0].startswith("strict-reverify")
    good = strict.strict_reverify(_harness("correct__row_mean.py"), interpret=True, timeout_s=300)
    assert good.correct, good.messages
    assert good.trials == strict.STRICT_SEEDS + 1  # ten seeds from another base, plus the second input set
    assert str(strict.STRICT_BASE_SEED) in good.messages[-1]
