"""bench/bench_lsp_gpu.py ends cleanly: a phase that does not answer is a timeout row, not a hang; the budget
cuts the run short with the summary written; no server is left behind (CPU part, real server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "bench_lsp_gpu.py"


def _run(out: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "--cpu", "--out", str(out), *args], capture_output=True,
                          text=True, timeout=240)


def test_an_initialize_that_does_not_answer_in_time_is_a_timeout_row(tmp_path: Path) -> None:
    # 0.3 s is less than the server takes to import: initialize "hangs" from the script's point of view
    p = _run(tmp_path, "--repeats", "1", "--init-timeout-s", "0.3", "--max-seconds", "60")
    assert p.returncode == 0, p.stderr[-2000:]
    rows = [json.loads(ln) for ln in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(r["timeout"] == "initialize" for r in rows)
    assert "row written (timeout in initialize" in p.stdout
    res = json.loads((tmp_path / "result.json").read_text())
    assert all(e["phase_timeouts"] for e in res["kernels"].values())
    assert "phase timeouts" in (tmp_path / "result.md").read_text()
    for r in rows:  # every server the script started is gone
        for line in r.get("killed") or []:
            pid = int(line.split(":")[0])
            assert not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] in "ZX"


def test_the_budget_stops_before_a_repeat_and_writes_the_summary(tmp_path: Path) -> None:
    p = _run(tmp_path, "--repeats", "3", "--max-seconds", "1")
    assert p.returncode == 0, p.stderr[-2000:]
    res = json.loads((tmp_path / "result.json").read_text())
    assert res["stopped"].startswith("stopped by --max-seconds 1") and res["kernels"] == {}
    assert (tmp_path / "rows.jsonl").read_text() == "" and "Cut short" in (tmp_path / "result.md").read_text()
    assert os.path.isdir(tmp_path / "server-logs")


def _ours(tmp_path: Path) -> list[int]:
    """Live servers of the run in ``tmp_path`` (a server's argv holds its log path under server-logs/)."""
    out = []
    for d in Path("/proc").glob("[0-9]*"):
        try:
            if str(tmp_path / "server-logs").encode() in (d / "cmdline").read_bytes() and \
                    (d / "stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                out.append(int(d.name))
        except OSError:
            continue
    return out


def test_sigint_writes_the_summary_and_leaves_no_server(tmp_path: Path) -> None:
    """A stage limit sends SIGINT: the script kills the servers it started and writes what it has."""
    import signal
    import time

    p = subprocess.Popen([sys.executable, str(SCRIPT), "--cpu", "--out", str(tmp_path), "--repeats", "1"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.time()
    while not _ours(tmp_path) and time.time() - t0 < 60:  # until the server runs
        time.sleep(0.1)
    assert _ours(tmp_path), "the server did not start"
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 0, err[-2000:]
    res = json.loads((tmp_path / "result.json").read_text())
    assert res["stopped"].startswith("interrupted (SIGINT)")
    time.sleep(0.5)
    assert _ours(tmp_path) == []
