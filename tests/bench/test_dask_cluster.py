"""A real Dask LocalCluster on the CPU: hundreds of static probe tasks, one worker killed in the middle, a task
that brings its worker down every time; results are complete and unique, and the pooled memory equals the
sequential run's."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import distributed
import pytest

from htam_core.bench.executors import (
    ALLOWED_FAILURES,
    ExecutorOptions,
    ResultLog,
    run_tasks,
    start_local_cluster,
    task_key,
)
from htam_core.memory import open_store
from htam_core.memory.merge import merge_files

REPO = Path(__file__).resolve().parents[2]
#: Triton kernels of the suite the probe ranks, cycled over the tasks (a CUDA kernel's static profile runs the
#: compiler, ten times the cost: kept out to keep the test light on a 2-core machine).
KERNELS = [("bench/suite/vector_add_small_block.py", "vadd_kernel"), ("bench/suite/softmax_rows.py",
           "row_softmax_kernel"), ("bench/suite/layernorm_heuristics.py", "ln_fwd_kernel"),
           ("bench/suite/bias_gelu_fused.py", "bias_gelu_residual_kernel")]
N_TASKS = 200
FN = "htam_core.bench.probe:run_probe_task"


def _tasks(folder: Path, n: int = N_TASKS) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for i in range(n):
        path, kernel = KERNELS[i % len(KERNELS)]
        task = {"path": str(REPO / path), "kernel": kernel, "uid": f"probe-{i:04d}", "time": 1000.0 + i,
                "memory_path": str(folder / "stores" / f"probe-{i:04d}.sqlite3")}
        out.append((task_key(f"probe/{i}", {**task, "memory_path": None}), task))
    return out


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """Three single-threaded CPU worker processes behind nannies (a killed one is restarted), closed at the end."""
    c = start_local_cluster(ExecutorOptions("dask", workers=3))
    try:
        yield c
    finally:
        c.close()


def _worker_pids(address: str) -> dict[str, int]:
    with distributed.Client(address, timeout="60s") as client:
        return client.run(os.getpid)


def _pooled(folder: Path, into: Path) -> dict[str, Any]:
    merge_files(sorted((folder / "stores").glob("*.sqlite3")), into)
    with open_store(into) as store:
        return store.export()


def test_kill_a_worker_midway_every_task_one_result_same_memory(cluster: Any, tmp_path: Path) -> None:
    dist, seq = tmp_path / "dist", tmp_path / "seq"
    tasks = _tasks(dist)
    pids = _worker_pids(cluster.scheduler_address)
    assert len(pids) == 3
    victim = sorted(pids.values())[0]
    killed: list[int] = []

    def on_done(result: dict[str, Any], progress: str) -> None:
        if not killed and progress.startswith(f"{N_TASKS // 4}/"):
            os.kill(victim, signal.SIGKILL)  # a worker dies with tasks on it
            killed.append(victim)

    log = ResultLog(dist / "results.jsonl")
    results = run_tasks(FN, tasks, ExecutorOptions("dask", scheduler=cluster.scheduler_address), log=log,
                        on_done=on_done)
    assert killed, "the worker was never killed"
    assert [r.get("uid") for r in results] == [t["uid"] for _, t in tasks]
    assert all(r["status"] == "ok" for r in results), [r for r in results if r["status"] != "ok"][:3]
    lines = [json.loads(x)["key"] for x in (dist / "results.jsonl").read_text().splitlines()]
    assert sorted(lines) == sorted(k for k, _ in tasks)  # exactly one streamed result per task
    assert victim not in {r["pid"] for r in results[-N_TASKS // 4:]}  # later tasks ran on live workers
    assert len({r["pid"] for r in results}) >= 3  # the nanny's restarted worker took tasks too

    seq_results = run_tasks(FN, _tasks(seq), ExecutorOptions("local"))
    assert [r["step"] for r in seq_results] == [r["step"] for r in results]
    a, b = _pooled(dist, tmp_path / "team-dist.sqlite3"), _pooled(seq, tmp_path / "team-seq.sqlite3")
    assert len(a["records"]) == N_TASKS and a == b

    again = run_tasks(FN, tasks, ExecutorOptions("dask", scheduler=cluster.scheduler_address),
                      log=ResultLog(dist / "results.jsonl"))  # a rerun resumes: nothing is submitted
    assert again == results
    assert len((dist / "results.jsonl").read_text().splitlines()) == N_TASKS


def test_a_task_that_kills_its_worker_is_retried_then_recorded_failed(cluster: Any, tmp_path: Path) -> None:
    tasks = _tasks(tmp_path, 3)
    crash = (task_key("crash", {"crash": True}), {"crash": True, "uid": "crash"})
    results = run_tasks(FN, [crash, *tasks], ExecutorOptions("dask", scheduler=cluster.scheduler_address),
                        log=ResultLog(tmp_path / "results.jsonl"))
    assert results[0]["status"] == "failed"
    assert f"died {ALLOWED_FAILURES + 1} times" in results[0]["error"]
    assert [r["status"] for r in results[1:]] == ["ok"] * 3


def test_one_pinned_worker_per_gpu_and_tasks_hold_one_gpu(tmp_path: Path) -> None:
    """The GPU layout on the CPU: two workers for GPU ids 0 and 1 (nothing uses a GPU here), each pinned with
    CUDA_VISIBLE_DEVICES and declaring {"GPU": 1}; tasks then ask for one GPU each."""
    c = start_local_cluster(ExecutorOptions("dask", gpus=("0", "1")))
    try:
        with distributed.Client(c) as client:
            pinned = client.run(lambda: os.environ.get("CUDA_VISIBLE_DEVICES"))
            resources = {w["resources"].get("GPU") for w in client.scheduler_info()["workers"].values()}
        assert sorted(pinned.values()) == ["0", "1"] and resources == {1}
        out = run_tasks("builtins:dict", [(f"t{i}", {"i": i}) for i in range(6)],
                        ExecutorOptions("dask", scheduler=c.scheduler_address))
        assert [r["i"] for r in out] == list(range(6))
    finally:
        c.close()
