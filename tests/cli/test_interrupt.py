"""Ctrl-C (SIGINT) ends every ``htam`` command with exit code 130 and one line, ``htam: interrupted``: also when
a command catches the interrupt to keep its work (``optimize`` writes its report first) and when it arrives
while the starting kernel is profiled (once reported as "starting kernel failed to compile or run")."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.optimize.report_checks import copy_example

REPO = Path(__file__).resolve().parents[2]


def _start(args: list[str], tmp_path: Path, **kw: object) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "HTAM_CACHE_DIR": str(tmp_path / "cache"), "HTAM_MEMORY": str(tmp_path / "mem.sqlite3")}
    return subprocess.Popen([sys.executable, "-m", "htam_core.cli.main", *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path, **kw)


def _interrupt(proc: subprocess.Popen[str], after_s: float) -> tuple[int, str, str]:
    time.sleep(after_s)
    assert proc.poll() is None, "the command ended before the interrupt"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


@pytest.mark.parametrize("after_s", [1.5, 4.0])
def test_ctrl_c_during_optimize_exits_130_with_one_line(tmp_path: Path, after_s: float) -> None:
    src = copy_example(tmp_path / "src")
    proc = _start(["optimize", str(src), "--kernel", "add_kernel", "--static", "--budget", "50",
                   "--out", str(tmp_path / "out")], tmp_path)
    code, out, err = _interrupt(proc, after_s)
    assert code == 130, (out, err)
    assert err.strip().splitlines()[-1] == "htam: interrupted", err
    assert "failed to compile or run" not in out + err
    assert "Traceback" not in err


def test_ctrl_c_during_serve_exits_130(tmp_path: Path) -> None:
    proc = _start(["serve"], tmp_path, stdin=subprocess.PIPE)
    code, _out, err = _interrupt(proc, 3.0)
    assert code == 130, err
    assert err.strip().splitlines()[-1] == "htam: interrupted", err
