"""Joining a Dask cluster with ``--scheduler``: a scheduler that is not there, or has no worker, gives one clear
line within a deadline instead of a 39 s "Timed out" or a silent wait forever (regressions, new-user trial)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from htam_core.bench import executors  # noqa: E402
from htam_core.bench.executors import ExecutorError, ExecutorOptions, connect  # noqa: E402
from htam_core.cli.main import main  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_scheduler_is_one_line_soon_and_leaves_no_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(executors, "CONNECT_TIMEOUT_S", 2)
    addr = f"tcp://127.0.0.1:{_free_port()}"  # nothing listens there: connection refused
    out = tmp_path / "out"
    t0 = time.monotonic()
    assert main(["bench", "suite", "--static", "--executor", "dask", "--scheduler", addr, "--kernels",
                 "vadd_kernel", "--policies", "random", "--out", str(out)]) == 2
    assert time.monotonic() - t0 < 30
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == (f"htam: error: cannot reach the Dask scheduler at {addr} (connection refused or timed out "
                       "after 2 s); start it with `dask scheduler` (docs/BENCH.md), check the address, or drop "
                       "--scheduler"), err
    assert not any("Traceback" in line for line in err)
    assert not (out / "suite-work").exists() and not out.exists()


def test_a_scheduler_without_workers_says_so_and_gives_up_after_the_wait() -> None:
    import distributed

    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None, protocol="tcp",
                                  host="127.0.0.1", scheduler_port=0) as cluster:
        addr = cluster.scheduler_address
        said: list[str] = []
        t0 = time.monotonic()
        with pytest.raises(ExecutorError, match=r"still had no worker after 1 s; start one with `dask worker"):
            connect(ExecutorOptions("dask", scheduler=addr, worker_wait=1.0, say=said.append))
        assert time.monotonic() - t0 < 20
        assert said == [f"connected to {addr}: 0 workers; waiting for workers (start one with "
                        f"`dask worker {addr} ...`, docs/BENCH.md)"]


def test_a_lost_scheduler_keeps_the_finished_results_and_leaves_the_rest_to_a_rerun(monkeypatch) -> None:
    """Regression (new-user trial): a scheduler that died mid-run cancelled the other tasks, which were recorded
    as finished ``error`` results, so every rerun "resumed" them and never ran them again. Now a cancelled task
    is not handed over (a rerun runs it) and the run ends with one line saying how many did not finish."""
    import types

    from distributed.client import FutureCancelledError

    class Fut:
        def __init__(self, key: str, ok: bool) -> None:
            self.key, self.ok = key, ok

        def result(self) -> dict:
            if self.ok:
                return {"status": "ok"}
            raise FutureCancelledError(self.key, reason="scheduler-connection-lost")

        def release(self) -> None:
            pass

    class Client:
        def __init__(self, cluster: object) -> None:
            self.n = 0

        def __enter__(self) -> Client:
            return self

        def __exit__(self, *exc: object) -> bool:
            return False

        def scheduler_info(self) -> dict:
            return {"workers": {}}

        def submit(self, fn: object, path: str, task: object, **kw: object) -> Fut:
            self.n += 1
            return Fut(str(kw["key"]), self.n == 1)

    monkeypatch.setattr(executors, "_dask", lambda: types.SimpleNamespace(Client=Client, as_completed=list))
    monkeypatch.setattr(executors, "start_local_cluster", lambda opts: object())
    monkeypatch.setattr(executors, "close_cluster", lambda cluster, interrupted=False: None)
    done: list[str] = []
    with pytest.raises(ExecutorError, match=r"2 of 3 tasks did not finish.*run the same command again"):
        executors.run_on_dask("m:f", [("a", {}), ("b", {}), ("c", {})], lambda k, r: done.append(k),
                              ExecutorOptions(name="dask"))
    assert done == ["a"], "only the finished task is handed over (and so kept for resuming)"


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_a_worker_wait_that_is_not_a_positive_finite_number_is_one_line(value: str, capsys) -> None:
    rc = main(["bench", "suite", "--static", "--executor", "dask", "--scheduler", "tcp://127.0.0.1:8786",
               "--worker-wait", value, "--out", "unused"])
    err = capsys.readouterr().err
    assert rc == 2 and "--worker-wait must be a positive number of seconds" in err and "Traceback" not in err
