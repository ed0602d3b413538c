"""The optimize loop on the bundled example (static mode): report files, progress events and the memory.

One module-scoped run (budget 2, rules engine) is inspected by several tests; the memory tests then run
again (budget 1) on copies of its store.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from htam_core.memory import STATE_KEYS, STRUCT_KEYS, open_store, state_from_profile
from htam_core.memory.fingerprint import tried_fingerprint
from htam_core.optimize import OptimizeTask, ProgressEvent, kernel_fingerprint, run_optimize
from htam_core.optimize.loop import PREFIX_LEN
from htam_core.types.profile import Profile
from tests.optimize.report_checks import check_report, copy_example, timing_values

BUDGET = 2
NO_RECORDS = "no recorded trials"


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path) -> SimpleNamespace:
    """One run on a copy of examples/vector_add.py with a fresh memory, its progress events recorded."""
    root = tmp_path_factory.mktemp("first")
    src = copy_example(root / "src")
    start = src.read_bytes()
    events: list[ProgressEvent] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HTAM_CACHE_DIR", str(cache_dir))
        mp.setenv("HTAM_MEMORY", str(root / "never-used.sqlite3"))
        result = run_optimize(OptimizeTask(path=str(src), kernel="add_kernel", budget=BUDGET, static=True,
                                           out_dir=str(root / "out"), memory_path=str(root / "mem.sqlite3")),
                              on_progress=events.append)
    return SimpleNamespace(root=root, src=src, start=start, mem=root / "mem.sqlite3", out=root / "out",
                           events=events, result=result)


def _run(src: Path, out: Path, mem: Path, **kw) -> object:
    return run_optimize(OptimizeTask(path=str(src), kernel="add_kernel", static=True, out_dir=str(out),
                                     memory_path=str(mem), **kw))


def test_report_agrees_and_user_file_untouched(first: SimpleNamespace) -> None:
    res = first.result
    data = check_report(first.out, first.start.decode())
    assert first.src.read_bytes() == first.start
    assert 1 <= len(res.steps) <= BUDGET and len(data["steps"]) == len(res.steps)
    assert res.mode == "static" and res.measured is False and res.best_speedup is None
    assert not (first.root / "never-used.sqlite3").exists()
    for s in res.steps:
        if s.accepted:
            assert s.correct is True and s.verified_on == "interpreter", s
    assert "nothing was timed" in res.summary
    assert timing_values(data) == []
    assert res.best_text == (first.out / "best.py").read_text()


def test_progress_events(first: SimpleNamespace) -> None:
    ev = first.events
    n = len(first.result.steps)
    assert ev and all(e.total == BUDGET for e in ev)
    assert ev[0].step == 0 and ev[-1].step == n
    assert [e.step for e in ev] == sorted(e.step for e in ev)
    assert {e.step for e in ev} == set(range(n + 1))
    assert all(e.best_speedup is None for e in ev)  # static mode: nothing timed
    announced = [(e.direction, e.strategy) for e in ev if e.strategy is not None]
    assert announced == [(s.direction, s.strategy) for s in first.result.steps]
    assert all(e.message for e in ev)


def test_memory_holds_one_record_per_candidate(first: SimpleNamespace) -> None:
    steps = first.result.steps
    fp = kernel_fingerprint(first.src, "add_kernel")
    with open_store(first.mem) as st:
        recs = list(st.records())
    assert len(recs) == len(steps)
    start_profile = json.loads((first.out / "report.json").read_text())["start_profile"]
    start_state = state_from_profile(Profile.from_json(start_profile))
    for i, (rec, step) in enumerate(zip(recs, steps, strict=True)):
        assert rec.step == step.strategy and rec.direction == step.direction
        kept_before = [s.strategy for s in steps[:i] if s.accepted][-PREFIX_LEN:]
        assert list(rec.prefix) == kept_before
        assert rec.state and set(rec.state) == set(STATE_KEYS) | set(STRUCT_KEYS)  # v9: with the structure block
        assert rec.fingerprint == tried_fingerprint(fp)  # tried on a copy: not a step of the file
        assert rec.outcome.status == step.status and rec.outcome.measured is False
        assert rec.outcome.speedup is None
    # the state before the first step is the start kernel's
    assert {k: recs[0].state[k] for k in STATE_KEYS} == start_state


def test_second_run_sees_the_records_and_no_record_writes_nothing(first: SimpleNamespace, tmp_path: Path) -> None:
    mem = tmp_path / "mem.sqlite3"
    shutil.copy(first.mem, mem)
    with open_store(mem) as st:
        before = st.count()
    src = copy_example(tmp_path / "src")
    res = _run(src, tmp_path / "out", mem, budget=1, record=False)
    with open_store(mem) as st:
        assert st.count() == before  # --no-record
    one, two = first.result.steps[0], res.steps[0]
    assert NO_RECORDS in one.evidence  # the first run started from an empty memory
    tried = {s.strategy for s in first.result.steps}
    if two.strategy in tried:
        # the same step is now backed by the recorded trial, and its score moved
        assert NO_RECORDS not in two.evidence and "without a GPU measurement" in two.evidence
        assert two.score != one.score
    else:
        assert two.strategy != one.strategy  # the records changed the ranking


def test_no_update_ablation_writes_nothing(first: SimpleNamespace, tmp_path: Path) -> None:
    mem = tmp_path / "mem.sqlite3"
    shutil.copy(first.mem, mem)
    with open_store(mem) as st:
        before = st.count()
    src = copy_example(tmp_path / "src")
    res = _run(src, tmp_path / "out", mem, budget=1, ablation="no-update")
    assert len(res.steps) == 1
    with open_store(mem) as st:
        assert st.count() == before


def test_apply_is_left_to_the_caller(first: SimpleNamespace) -> None:
    """run_optimize never writes the user's file; ``changed`` tells the caller whether --apply would."""
    assert first.src.read_bytes() == first.start
    assert first.result.changed == (first.result.best_text != first.start.decode())
