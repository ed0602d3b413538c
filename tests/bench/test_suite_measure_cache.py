"""The suite's shared measurement cache: path passed to every task, emptied per run, counted and reported."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from htam_core.bench import suite
from htam_core.bench.report import suite_markdown
from htam_core.cli.main import main

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "bench" / "suite"
SENTENCE = ("A candidate whose code is byte-identical to one measured earlier in this run (by any policy) "
            "reuses that measurement ({n} of {m} candidate evaluations); every start kernel is timed afresh.")


def test_run_suite_task_passes_the_cache_and_returns_reuses(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []

    def fake_run_optimize(task: Any, cancel: Any = None) -> SimpleNamespace:
        seen.append(task)
        steps = [SimpleNamespace(index=i, strategy="s", transform="t", status="neutral", correct=True,
                                 time_ms=1.0, speedup=1.0, spread=0.02, speedup_vs_start=1.0, accepted=False)
                 for i in (1, 2, 3)]
        return SimpleNamespace(mode="gpu", measured=True, start_ms=1.0, best_ms=1.0, best_speedup=1.0,
                               steps=steps, cancelled=False, summary="s", measurements_reused=2,
                               report_dir=tmp_path / "run", reproduction=None)

    monkeypatch.setattr("htam_core.optimize.run_optimize", fake_run_optimize)
    cache = str(tmp_path / "work" / suite.MEASURE_CACHE_NAME)
    k = suite.load_suite(SUITE, ["vadd_kernel"])[0]
    t = suite.SuiteTask(kernel=k.name, path=k.path, policy_name="random", budget=3,
                        out_dir=str(tmp_path / "run"), memory_path=str(tmp_path / "s.sqlite3"),
                        measure_cache=cache)
    r = suite.run_suite_task(t.to_json())
    assert seen[0].measure_cache == cache and r["measurements_reused"] == 2 and r["status"] == "ok"
    off = suite.run_suite_task({**t.to_json(), "measure_cache": None, "deadline": 0.0})
    assert off["status"] == "skipped" and off["measurements_reused"] == 0


def test_task_layout_with_and_without_reuse(tmp_path: Path) -> None:
    k = suite.load_suite(SUITE, ["vadd_kernel"])[0]
    on = suite.SuiteConfig(suite_dir=str(SUITE), policies=["htam", "random"])
    off = suite.SuiteConfig(suite_dir=str(SUITE), policies=["htam", "random"], reuse_measurements=False)
    assert on.reuse_measurements is True
    tasks = [suite._task(on, tmp_path, k, p, None, {}) for p in ("htam-cold", "random", "exhaustive")]
    assert {t.measure_cache for t in tasks} == {str(tmp_path / "measure-cache.sqlite3")}
    assert suite._task(off, tmp_path, k, "random", None, {}).measure_cache is None


def _fake_results(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A task with the cache acts as a measured (GPU) run, one without it as a static run."""
    def one(t: dict[str, Any]) -> dict[str, Any]:
        gpu = bool(t["measure_cache"])
        ms = 1.0 if gpu else None
        return {"kernel": t["kernel"], "policy": t["policy_name"], "status": "ok",
                "mode": "gpu" if gpu else "static", "measured": gpu, "start_ms": ms, "best_ms": ms,
                "best_speedup": ms, "steps": [{"speedup_vs_start": ms}] * t["budget"],
                "memory_records_imported": 0, "measurements_reused": 1 if gpu else 0}

    return [one(t) for t in tasks]


@pytest.fixture
def fake_tasks(monkeypatch: pytest.MonkeyPatch) -> list[list[dict[str, Any]]]:
    """run_tasks replaced: records each batch of task dicts and whether the cache file existed then."""
    batches: list[list[dict[str, Any]]] = []

    def run_tasks(fn: str, keyed: list[tuple[str, dict[str, Any]]], opts: Any, log: Any = None,
                  on_done: Any = None, on_resumed: Any = None, phase: str | None = None) -> list[dict]:
        tasks = [t for _, t in keyed]
        if not batches:  # the first batch of a run starts with an empty cache
            for t in tasks:
                if t["measure_cache"]:
                    assert not Path(t["measure_cache"]).exists(), "a run reused an earlier run's cache"
        batches.append(list(tasks))
        # a task of this run writes the cache: it must survive into the next batch (phase 2)
        for t in tasks:
            if t["measure_cache"]:
                Path(t["measure_cache"]).write_text("phase 1 wrote this")
                break
        return _fake_results(tasks)

    import htam_core.bench.executors as executors
    import htam_core.bench.parallel as parallel

    monkeypatch.setattr(executors, "run_tasks", run_tasks)
    monkeypatch.setattr(parallel, "visible_gpus", lambda: [])
    return batches


def test_run_suite_empties_the_cache_once_and_reports_reuse(tmp_path: Path,
                                                            fake_tasks: list[list[dict[str, Any]]]) -> None:
    work = tmp_path / "work"
    work.mkdir()
    stale = work / suite.MEASURE_CACHE_NAME
    stale.write_text("numbers of an earlier run")
    (work / (suite.MEASURE_CACHE_NAME + "-wal")).write_text("old wal")
    cfg = suite.SuiteConfig(suite_dir=str(SUITE), policies=["htam", "random"], kernels=["vadd_kernel",
                            "axpy_tiny_block"], budget=2, work_dir=str(work), static=True)
    doc = suite.run_suite(cfg, log=lambda m: None)
    assert len(fake_tasks) == 2  # warm-up pass, then the rest
    assert not (work / (suite.MEASURE_CACHE_NAME + "-wal")).exists()
    phase2 = fake_tasks[-1]
    assert all(t["measure_cache"] == str(stale) for b in fake_tasks for t in b)
    assert stale.read_text() == "phase 1 wrote this"  # phase 2 kept what phase 1 measured
    n_tasks = sum(len(b) for b in fake_tasks)
    assert doc["measurements"] == {"reused": n_tasks, "candidate_evaluations": 2 * n_tasks}
    assert all(r["measurements_reused"] == 1 for r in doc["rows"])
    assert len(phase2) == 4
    doc["environment"] = {"date": "d", "gpu_count": 0}
    md = suite_markdown(doc)
    assert SENTENCE.format(n=n_tasks, m=2 * n_tasks) in md


def test_cli_no_reuse(tmp_path: Path, fake_tasks: list[list[dict[str, Any]]]) -> None:
    out = tmp_path / "out"
    rc = main(["bench", "suite", "--suite", str(SUITE), "--kernels", "vadd_kernel", "--policies", "random",
               "--budget", "1", "--static", "--no-reuse", "--out", str(out)])
    assert rc == 0
    assert all(t["measure_cache"] is None for b in fake_tasks for t in b)
    doc = json.loads(next(out.glob("*-suite.json")).read_text())
    assert doc["config"]["reuse_measurements"] is False and doc["measurements"]["reused"] == 0
    md = next(out.glob("*-suite.md")).read_text()
    assert "reuses that measurement" not in md
    # static mode: nothing was timed, so the header claims neither fresh measurements nor timed trials
    assert "measured afresh" not in md and "timed trials per candidate" not in md
    assert "Measurement reuse off (`--no-reuse`); nothing was timed (static mode)" in md
