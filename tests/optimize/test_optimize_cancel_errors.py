"""Cancelling keeps the best so far and still writes the report; bad tasks raise OptimizeError."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from htam_core.generate.config import LLMConfig
from htam_core.optimize import OptimizeError, OptimizeTask, ProgressEvent, run_optimize
from tests.optimize.report_checks import check_report


def _task(src: Path, tmp_path: Path, **kw) -> OptimizeTask:
    kw.setdefault("kernel", "add_kernel")
    return OptimizeTask(path=str(src), static=True, out_dir=str(tmp_path / "out"),
                        memory_path=str(tmp_path / "mem.sqlite3"), **kw)


def test_cancel_set_before_start(vadd: Path, tmp_path: Path) -> None:
    start = vadd.read_text()
    cancel = threading.Event()
    cancel.set()
    res = run_optimize(_task(vadd, tmp_path, budget=3), cancel=cancel)
    assert res.cancelled is True and res.steps == [] and res.changed is False
    assert res.best_text == start and vadd.read_text() == start
    data = check_report(tmp_path / "out", start)
    assert data["cancelled"] is True
    assert "cancelled" in (tmp_path / "out" / "report.md").read_text()


def test_cancel_from_progress_after_first_candidate(vadd: Path, tmp_path: Path) -> None:
    start = vadd.read_text()
    cancel = threading.Event()
    seen: list[ProgressEvent] = []

    def on_progress(e: ProgressEvent) -> None:
        seen.append(e)
        if e.step == 1:
            cancel.set()

    res = run_optimize(_task(vadd, tmp_path, budget=3), on_progress=on_progress, cancel=cancel)
    assert res.cancelled is True and len(res.steps) == 1
    assert max(e.step for e in seen) == 1
    data = check_report(tmp_path / "out", start)
    assert data["cancelled"] is True and len(data["steps"]) == 1
    step = res.steps[0]
    # the best so far is kept: the accepted candidate (static mode keeps every verified one) or the start
    assert res.best_text == (Path(step.candidate_path).read_text() if step.accepted else start)
    assert vadd.read_text() == start


def test_keyboard_interrupt_is_a_cancel(vadd: Path, tmp_path: Path) -> None:
    """Ctrl-C (KeyboardInterrupt raised inside the loop) stops it like the cancel event."""
    start = vadd.read_text()

    def on_progress(e: ProgressEvent) -> None:
        if e.step == 1:
            raise KeyboardInterrupt

    res = run_optimize(_task(vadd, tmp_path, budget=3), on_progress=on_progress)
    assert res.cancelled is True and len(res.steps) == 1
    assert json.loads((tmp_path / "out" / "report.json").read_text())["cancelled"] is True
    check_report(tmp_path / "out", start)


def test_keyboard_interrupt_during_the_start_profile(vadd: Path, tmp_path: Path) -> None:
    def on_progress(e: ProgressEvent) -> None:
        raise KeyboardInterrupt

    res = run_optimize(_task(vadd, tmp_path, budget=3), on_progress=on_progress)
    assert res.cancelled is True and res.steps == [] and res.best_text == vadd.read_text()
    check_report(tmp_path / "out", vadd.read_text())


@pytest.mark.parametrize(("change", "needle"), [
    ({"path": "missing.py"}, "no such file"),
    ({"kernel": "nope"}, "add_kernel"),
    ({"budget": 0}, "--budget must be at least 1"),
    ({"policy": "greedy"}, "unknown policy 'greedy'; expected one of htam, random, exhaustive"),
    ({"engine": "magic"}, "unknown engine 'magic'"),
    ({"engine": "llm", "llm": {"model": None, "base_url": "http://127.0.0.1:9/v1"}}, "needs a model name"),
    ({"engine": "llm", "llm": {"model": "m", "colour": "blue"}}, "bad LLM settings"),
    ({"engine": "llm", "llm": {"model": "m", "timeout_s": 0}}, "timeout must be positive"),
])
def test_bad_tasks_raise_optimize_error(vadd: Path, tmp_path: Path, change: dict, needle: str) -> None:
    kw = {"budget": 1, **change}
    if kw.get("path") == "missing.py":
        kw["path"] = str(tmp_path / "missing.py")
    path = kw.pop("path", str(vadd))
    with pytest.raises(OptimizeError) as info:
        run_optimize(_task(Path(path), tmp_path, **kw))
    msg = str(info.value)
    assert needle in msg and "\n" not in msg
    if change.get("kernel") == "nope":
        assert "'nope'" in msg  # says what was asked and lists what exists
    assert not (tmp_path / "out" / "report.json").exists()


def test_unusable_memory_is_an_optimize_error(vadd: Path, tmp_path: Path) -> None:
    bad = tmp_path / "not-a-store.sqlite3"
    bad.write_text("this is not SQLite")
    with pytest.raises(OptimizeError, match="cannot open the HTAM memory"):
        run_optimize(OptimizeTask(path=str(vadd), kernel="add_kernel", static=True, budget=1,
                                  out_dir=str(tmp_path / "out"), memory_path=str(bad)))
    assert bad.read_text() == "this is not SQLite"  # never modified


def test_llm_config_round_trip() -> None:
    cfg = LLMConfig(base_url="http://127.0.0.1:1/v1", model="m", api_key_env="HTAM_TEST_KEY", timeout_s=5,
                    max_tokens=100, max_repairs=1, max_retries=0, backoff_s=0.01)
    data = cfg.to_json()
    assert json.loads(json.dumps(data)) == data
    assert LLMConfig(**data) == cfg
    assert "HTAM_TEST_KEY" in data.values()
    task = OptimizeTask(path="x.py", kernel="k", engine="llm", llm=data)
    assert task.to_json()["llm"] == data
