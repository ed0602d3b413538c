"""Closing the ``LocalCluster`` htam starts: workers get time to exit on their own (no "Worker process still
alive after 4.0 seconds, killing" at the end of every run), and a Ctrl-C gives ``htam: interrupted`` with no
Dask traceback from the worker processes, keeping the finished results (regressions, new-user trial)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from htam_core.bench.executors import ExecutorOptions, close_cluster, start_local_cluster  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def test_a_worker_slow_to_exit_is_not_killed(tmp_path: Path) -> None:
    """A worker whose teardown takes 6 s (a CUDA context, a loaded machine) finishes it: distributed's own
    close gives it 4 s and kills it, so the flag would never be written."""
    import distributed
    from distributed.diagnostics.plugin import WorkerPlugin

    flag = tmp_path / "torn-down"

    class SlowTeardown(WorkerPlugin):
        def teardown(self, worker: object) -> None:
            import time

            time.sleep(6)
            open(str(flag), "w").close()

    cluster = start_local_cluster(ExecutorOptions("dask", workers=1))
    try:
        with distributed.Client(cluster) as client:
            client.register_plugin(SlowTeardown())
    finally:
        close_cluster(cluster)
    assert flag.exists()


def _sigint_default() -> None:
    """A shell without job control starts background jobs with SIGINT ignored, and Python keeps an inherited
    ignore (nohup'd CI ran this test with Ctrl-C ignored, so the run just finished): give the child a terminal's
    SIGINT, which Python turns into KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_is_one_line_and_keeps_the_finished_results(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "htam_core.cli.main", "bench", "suite", "--executor", "dask",
                             "--static", "--kernels", "vadd_kernel,axpy_tiny_block", "--policies", "htam,random",
                             "--budget", "2", "--out", str(out)], cwd=str(REPO), stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=_sigint_default)
    lines = []
    assert proc.stderr is not None
    for line in proc.stderr:  # Ctrl-C in a terminal reaches the whole process group, workers included
        lines.append(line)
        if " done" in line:
            os.killpg(proc.pid, signal.SIGINT)
            break
    rest = proc.stderr.read()
    assert proc.wait(timeout=120) == 130
    err = "".join(lines) + rest
    assert rest.strip() == "htam: interrupted", err[-3000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    kept = (out / "suite-work" / "results.jsonl").read_text().splitlines()
    assert len(kept) >= 1 and json.loads(kept[0])["result"]["status"] == "ok"


def test_the_worker_log_drops_only_the_routine_shutdown_heartbeat() -> None:
    """Regression: after a Ctrl-C the scheduler could close while a worker's heartbeat was in flight, and the
    worker printed distributed's traceback under the one line ``htam: interrupted``."""
    import logging

    from htam_core.bench.dask_worker_setup import _DropRoutineShutdown

    f = _DropRoutineShutdown()

    def rec(msg: str) -> logging.LogRecord:
        return logging.LogRecord("distributed.worker", logging.ERROR, __file__, 1, msg, None, None)

    assert not f.filter(rec("Failed to communicate with scheduler during heartbeat."))
    assert f.filter(rec("Compute Failed\nKey: x\nException: ValueError('boom')"))
