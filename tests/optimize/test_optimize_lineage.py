"""The best kernel's real lineage (not the list of every followed step) and where a refusal's lines are.

A static run of the real loop on the bundled example (Triton interpreter) whose rules generator proposes
nothing for a kernel two steps from the start, so the loop goes back and makes a later candidate from an
earlier one: the best is then not the end of the accepted steps in order, and the report must say which steps
made it (its parents back to the start) and which followed steps are not in it. Unit checks of the summary
and of the "Steps not made" lines use hand-made step records.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from htam_core.generate import registry
from htam_core.optimize import OptimizeTask, run_optimize
from htam_core.optimize.evaluate import Evaluation
from htam_core.optimize.report import write_report
from htam_core.optimize.task import NotMade, StepRecord, lineage
from tests.optimize.report_checks import check_report


class _TwoDeep:
    """The rules generator, except that it proposes nothing for a kernel two steps from the start."""

    def __init__(self, inner: Any, start: str) -> None:
        self.inner, self.start, self.level1 = inner, start, set()

    def propose(self, request: Any, check: Any = None) -> list[Any]:
        if request.kernel_text not in {self.start, *self.level1}:
            self.inner.skipped = []
            return []
        cands = self.inner.propose(request, check=check)
        if request.kernel_text == self.start:
            self.level1.update(c.code for c in cands)
        return cands

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_the_summary_names_the_best_lineage_when_the_loop_went_back(vadd: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    real = registry.create
    monkeypatch.setattr(registry, "create", lambda kind, **kw: _TwoDeep(real(kind, **kw), vadd.read_text()))
    out = tmp_path / "out"
    res = run_optimize(OptimizeTask(path=str(vadd), kernel="add_kernel", budget=4, static=True, out_dir=str(out),
                                    memory_path=str(tmp_path / "mem.sqlite3")))
    data = check_report(out, vadd.read_text())  # parents, best_lineage and best.py agree (report_checks)
    parents = [s.parent for s in res.steps]
    assert parents[:2] == ["start", 1] and parents[2] == 1, parents  # 3 was made from 1: the loop went back
    assert res.best_step == res.steps[-1].index and res.best_lineage == [s.index for s in lineage(res.steps,
                                                                                                    res.best_step)]
    assert 2 not in res.best_lineage and res.best_lineage[0] == 1
    s1, s2 = res.steps[0], res.steps[1]
    assert (f"made from the start by {s1.strategy} (candidate 1) → " in res.summary
            and f"also followed, not in best.py: {s2.strategy} (candidate 2, made from candidate 1)" in res.summary)
    assert "end of that chain" not in res.summary
    assert [d["parent"] for d in data["steps"]] == parents and data["best_lineage"] == res.best_lineage
    # every refusal made on a candidate says which one (its line numbers are that file's, not the user's)
    md = (out / "report.md").read_text()
    for m in res.not_made:
        where = "" if m.candidate is None else f"in candidate {m.candidate:02d} (`candidates/{m.candidate:02d}-*/`): "
        assert f"{where}{m.reason}" in md
    assert any(m.candidate is not None for m in res.not_made)



class _OneStepDeep:
    """The rules generator, except that a kernel one step from the start gets candidates from one step only (the
    first that makes any), and a kernel two steps from the start none: after a chain of two, the loop goes back
    to the start and follows another step from there."""

    def __init__(self, inner: Any, start: str) -> None:
        self.inner, self.start, self.level1, self.served = inner, start, set(), set()

    def propose(self, request: Any, check: Any = None) -> list[Any]:
        text = request.kernel_text
        if text != self.start and (text not in self.level1 or text in self.served):
            self.inner.skipped = []
            return []
        cands = self.inner.propose(request, check=check)
        if text == self.start:
            self.level1.update(c.code for c in cands)
        elif cands:
            self.served.add(text)
        return cands

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_static_best_is_the_end_of_the_followed_chain_after_going_back_to_the_start(
        vadd: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A step followed from the start after the loop went back from a chain of two is reported as followed; the
    best (best.py, its lineage, the summary) stays the end of the chain of two, not the latest followed kernel."""
    real = registry.create
    monkeypatch.setattr(registry, "create", lambda kind, **kw: _OneStepDeep(real(kind, **kw), vadd.read_text()))
    out = tmp_path / "out"
    res = run_optimize(OptimizeTask(path=str(vadd), kernel="add_kernel", budget=3, static=True, out_dir=str(out),
                                    memory_path=str(tmp_path / "mem.sqlite3")))
    check_report(out, vadd.read_text())  # parents, best_lineage and best.py agree (report_checks)
    assert [s.parent for s in res.steps] == ["start", 1, "start"], [(s.strategy, s.parent) for s in res.steps]
    assert all(s.accepted for s in res.steps)  # the third is followed too, from the start
    assert res.best_step == 2 and res.best_lineage == [1, 2]
    s1, s2, s3 = res.steps
    assert (f"made from the start by {s1.strategy} (candidate 1) → {s2.strategy} (candidate 2)" in res.summary
            and f"also followed, not in best.py: {s3.strategy} (candidate 3, made from the start)" in res.summary)
    assert (out / "best.py").read_text() == Path(s2.candidate_path).read_text()


def _step(i: int, parent: int | str, strategy: str) -> StepRecord:
    return StepRecord(index=i, direction="d", strategy=strategy, transform="t", description="x", params={},
                      edit="", status="neutral", correct=None, verified_on="compile-only", time_ms=None,
                      speedup=None, speedup_vs_start=None, accepted=True, evidence="", parent=parent)


def test_lineage_walks_parents_and_refuses_a_missing_one() -> None:
    steps = [_step(1, "start", "vec"), _step(2, 1, "block"), _step(3, 2, "bounds"), _step(4, "start", "restrict")]
    assert [s.index for s in lineage(steps, 4)] == [4]
    assert [s.index for s in lineage(steps, 3)] == [1, 2, 3]
    assert lineage(steps, None) == []
    with pytest.raises(ValueError, match="not a step"):
        lineage(steps, 9)


def test_static_summary_and_refusals_of_the_user_report(tmp_path: Path) -> None:
    """The user's CUDA run: restrict was refused on candidate 3 and made from the start as candidate 4."""
    steps = [_step(1, "start", "vectorize_loads"), _step(2, 1, "cuda_block_size"), _step(3, 2, "launch_bounds"),
             _step(4, "start", "restrict_pointers")]
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k() {}\n")
    ev = Evaluation(True, None, "compile-only")
    refusal = NotMade("memory_access", "restrict_pointers", "restrict", "line 29 reads ...", "after a → b", 3)
    res = write_report(OptimizeTask(path=str(src), kernel="k", static=True), tmp_path / "out", src.read_text(),
                       ev, "best text", ev, steps, gpu=False, cancelled=False, warnings=[], language="cuda",
                       not_made=[refusal, NotMade("d", "s", None, "no transform", "start")], best_step=4)
    assert ("best.cu is candidate 4, made from the start by restrict_pointers (candidate 4); also followed, not in "
            "best.cu: vectorize_loads (candidate 1, made from the start), cuda_block_size (candidate 2, made from "
            "candidate 1), launch_bounds (candidate 3, made from candidate 2)") in res.summary
    assert res.best_lineage == [4]
    md = (tmp_path / "out" / "report.md").read_text()
    assert "(after a → b): in candidate 03 (`candidates/03-*/`): line 29 reads ..." in md
    assert "(for the start kernel): no transform" in md
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [s["parent"] for s in data["steps"]] == ["start", 1, 2, "start"] and data["best_step"] == 4
    assert data["not_made"][0]["candidate"] == 3 and data["not_made"][1]["candidate"] is None


def test_a_step_not_followed_in_static_mode_says_why_in_the_table(tmp_path: Path) -> None:
    """Regression (a new user's trial): online softmax, unverified and changing numerics, showed "—" in the
    report's why column; the reason was only in report.json."""
    import dataclasses

    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(float *x) { x[0] = 1.0f; }\n")
    ev = Evaluation(True, None, "compile-only")
    msg = ("changes numerics (results may differ in the last bits: fast-math, reduced precision or a rescaled "
           "accumulation): not followed in static mode, where nothing can check its results (run on a GPU)")
    step = dataclasses.replace(_step(1, "start", "online_softmax"), accepted=False, messages=[msg])
    write_report(OptimizeTask(path=str(src), kernel="k", static=True), tmp_path / "out", src.read_text(), ev,
                 src.read_text(), ev, [step], gpu=False, cancelled=False, warnings=[], language="cuda")
    row = next(line for line in (tmp_path / "out" / "report.md").read_text().splitlines()
               if line.startswith("| 1 |"))
    assert "not followed in static mode" in row and "fast-math or reduced precision)" not in row
