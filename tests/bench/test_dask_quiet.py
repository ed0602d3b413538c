"""``--executor dask`` output: distributed's routine warnings (a nanny restarting a killed worker, the HTTP server
moving off a busy port 8787) no longer flood a run; its errors still show (regression, new-user trial)."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("distributed")

REPO = Path(__file__).resolve().parents[2]

_TASKS = '''
import os


def run(task):
    if task.get("die") and not os.path.exists(task["flag"]):
        open(task["flag"], "w").close()
        os._exit(1)  # the worker dies once: its nanny restarts it and the task runs again
    return {"status": "ok", "v": task["i"] * 2}
'''

_MAIN = '''
import logging
import sys

sys.path.insert(0, {folder!r})
from htam_core.bench.executors import ExecutorOptions, run_tasks, start_local_cluster

if __name__ == "__main__":
    tasks = [(f"t{{i}}", {{"i": i, "die": i == 0, "flag": {flag!r}}}) for i in range(3)]
    opts = ExecutorOptions("dask", workers=1)
    cluster = start_local_cluster(opts)
    try:
        logging.getLogger("distributed.nanny").warning("routine nanny warning")
        logging.getLogger("distributed.scheduler").error("a real scheduler error")
        out = run_tasks("quiet_tasks:run", tasks, opts.__class__("dask", scheduler=cluster.scheduler_address))
    finally:
        cluster.close()
    print([r["v"] for r in out])
'''


def test_a_local_cluster_run_shows_errors_but_not_routine_warnings(tmp_path: Path) -> None:
    (tmp_path / "quiet_tasks.py").write_text(_TASKS)
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(_MAIN.format(folder=str(tmp_path), flag=str(tmp_path / "died"))))
    busy = socket.socket()
    try:
        try:
            busy.bind(("127.0.0.1", 8787))  # the scheduler's default HTTP port, busy as on a shared machine
            busy.listen()
        except OSError:
            pass  # already taken by someone else: the same condition
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240,
                              cwd=str(REPO))
    finally:
        busy.close()
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "[0, 2, 4]"
    assert (tmp_path / "died").exists()  # the worker did die once, so its nanny had something to say
    assert "a real scheduler error" in proc.stderr
    assert "routine nanny warning" not in proc.stderr
    assert " - WARNING - " not in proc.stderr and "already in use" not in proc.stderr, proc.stderr[-2000:]
