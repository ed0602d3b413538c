"""The executor layer without a cluster: keys, streaming and resume, progress, the registry, the CLI's options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htam_core.bench.executors import (
    EXECUTORS,
    ExecutorError,
    ExecutorOptions,
    Progress,
    ResultLog,
    resumed_summary,
    run_tasks,
    task_key,
)
from htam_core.cli.main import main

COPY = "builtins:dict"  # a module-level function that takes and returns a dict: the task itself


def test_keys_are_stable_and_ignore_the_deadline() -> None:
    a = task_key("k/p", {"budget": 8, "deadline": 1.0})
    assert a == task_key("k/p", {"deadline": 2.0, "budget": 8}) and a.startswith("k/p#")
    assert a != task_key("k/p", {"budget": 4, "deadline": 1.0})


def test_keys_cover_the_content_of_the_files_a_task_reads(tmp_path: Path) -> None:
    """Regression: a key named the kernel's path only, so an edited kernel resumed from its stale result."""
    f = tmp_path / "k.py"
    f.write_text("BLOCK_SIZE = 64\n")
    before = task_key("k/p", {"path": str(f)}, [f])
    assert before == task_key("k/p", {"path": str(f)}, [f])
    f.write_text("BLOCK_SIZE = 128\n")
    assert task_key("k/p", {"path": str(f)}, [f]) != before
    f.unlink()
    assert task_key("k/p", {"path": str(f)}, [f]) not in (before, task_key("k/p", {"path": str(f)}))


def test_a_rerun_counts_and_announces_what_it_resumed(tmp_path: Path) -> None:
    tasks = [(f"t{i}", {"i": i}) for i in range(3)]
    run_tasks(COPY, tasks[:2], ExecutorOptions("local"), log=ResultLog(tmp_path / "r.jsonl"))
    log, notes = ResultLog(tmp_path / "r.jsonl"), []
    run_tasks(COPY, tasks, ExecutorOptions("local"), log=log, on_resumed=notes.append)
    assert log.resumed == 2 and notes == ["2/3 done (2 resumed)"]
    assert resumed_summary(2, 3, tmp_path)["line"].startswith("2 of 3 tasks resumed from an earlier run")


def test_results_stream_and_a_rerun_resumes_by_key(tmp_path: Path) -> None:
    log_path = tmp_path / "results.jsonl"
    tasks = [(f"t{i}", {"i": i}) for i in range(4)]
    seen: list[str] = []
    out = run_tasks(COPY, tasks, ExecutorOptions("local"), log=ResultLog(log_path),
                    on_done=lambda r, p: seen.append(p))
    assert out == [{"i": i} for i in range(4)] and seen[-1] == "4/4 done" and seen[0].startswith("1/4 done, ETA")
    with open(log_path, "a") as fh:
        fh.write('{"key": "t9", "res')  # a torn last line from a killed run is ignored
    calls: list[dict] = []
    more = [*tasks, ("t4", {"i": 4})]
    again = run_tasks("builtins:dict", more, ExecutorOptions("local"), log=ResultLog(log_path),
                      on_done=lambda r, p: calls.append(r))
    assert again == [{"i": i} for i in range(5)] and calls == [{"i": 4}]  # only the new task ran


def test_skipped_and_cancelled_results_are_not_kept_for_resume(tmp_path: Path) -> None:
    log = ResultLog(tmp_path / "r.jsonl")
    tasks = [("a", {"status": "skipped"}), ("b", {"status": "ok", "cancelled": True}), ("c", {"status": "ok"})]
    run_tasks(COPY, tasks, ExecutorOptions("local"), log=log)
    keys = [json.loads(x)["key"] for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert keys == ["c"]


def test_a_task_that_raises_is_an_error_result_and_the_run_goes_on() -> None:
    out = run_tasks("json:loads", [("bad", {"x": 1}), ("ok", "{}")], ExecutorOptions("local"))  # type: ignore[list-item]
    assert out[0]["status"] == "error" and "TypeError" in out[0]["error"] and out[1] == {}


def test_registry_and_bad_options() -> None:
    assert set(EXECUTORS) == {"local", "dask"}
    with pytest.raises(ExecutorError, match="unknown executor"):
        run_tasks(COPY, [], ExecutorOptions("ray"))
    with pytest.raises(ExecutorError, match="same key"):
        run_tasks(COPY, [("a", {}), ("a", {})], ExecutorOptions("local"))


def test_progress_counts_resumed_and_failed() -> None:
    t = iter([0.0, 10.0, 20.0])
    p = Progress(5, resumed=1, clock=lambda: next(t))
    assert p.update({"status": "ok"}) == "2/5 done (1 resumed), ETA after the next task"
    assert p.update({"status": "failed"}) == "3/5 done (1 resumed, 1 failed), ETA 0m20s"


def test_the_eta_leaves_out_the_start_up_and_the_phase_is_named() -> None:
    """Regression: the first ETA counted the cluster's start-up (60 s before the first result) as task time."""
    t = iter([0.0, 60.0, 62.0, 64.0])
    p = Progress(4, clock=lambda: next(t), phase="warm-up")
    assert p.update({}) == "warm-up 1/4 done, ETA after the next task"
    assert p.update({}) == "warm-up 2/4 done, ETA 0m04s"  # 2 left x 2 s, not 2 x 31 s
    assert p.update({}) == "warm-up 3/4 done, ETA 0m02s"
    assert p.text() == "warm-up 3/4 done, ETA 0m02s"


def test_each_run_tasks_call_names_its_phase() -> None:
    lines: list[str] = []
    run_tasks(COPY, [("a", {"x": 1})], ExecutorOptions("local"), on_done=lambda r, text: lines.append(text),
              phase="policies")
    assert lines == ["policies 1/1 done"]


@pytest.mark.parametrize(("address", "says"), [
    ("notanaddress", "is not an address (missing port number"),
    ("foo://127.0.0.1:8786", "unknown scheme foo://"),
    ("tcp://:8786", "has no host"),
    ("tcp://127.0.0.1:99999", "has the port 99999, outside 1-65535"),  # was a 14 s wait for a connection
])
def test_a_bad_scheduler_address_is_one_line_exit_2(address: str, says: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Regression: these were "internal error: ValueError", exit 70."""
    out = tmp_path / "out"
    assert main(["bench", "suite", "--static", "--executor", "dask", "--scheduler", address,
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("htam: error: --scheduler") and says in err, err
    assert "Traceback" not in err and not out.exists()


@pytest.mark.parametrize("argv", [["--workers", "3"], ["--executor", "dask", "--scheduler", "tcp://h:1",
                                                       "--workers", "3"], ["--worker-wait", "5"]])
def test_options_that_would_be_ignored_are_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Regression: ``--workers N`` with the local executor was accepted and ignored."""
    assert main(["bench", "suite", "--static", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("htam: error: --worker"), err


def test_cli_refuses_scheduler_without_dask(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "suite", "--static", "--scheduler", "tcp://127.0.0.1:1"]) == 2
    assert "--scheduler needs --executor dask" in capsys.readouterr().err
