"""The server's stderr: one line per malformed message, nothing but a line or two when ``exit`` comes right after
``initialized`` (it once wrote thousands of tracebacks), and a flood of one bad message counted, not repeated."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

from htam_server.logs import REPEATS, OneLineFormatter, QuietFilter

REPO = Path(__file__).resolve().parents[2]


def _frame(body: dict | bytes) -> bytes:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"processId": None, "rootUri": None, "capabilities": {"workspace": {"configuration": True}}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "initialized", "params": {}}
EXIT = {"jsonrpc": "2.0", "method": "exit"}


def _server_stderr(tmp_path: Path, messages: list[dict | bytes], pause_s: float = 0.0) -> str:
    env = {**os.environ, "HTAM_CACHE_DIR": str(tmp_path / "cache"), "HTAM_MEMORY": str(tmp_path / "m.sqlite3"),
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    env.pop("HTAM_DEBUG", None)
    err = tmp_path / "stderr.txt"
    with err.open("wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "htam_server"], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=fh, env=env, cwd=tmp_path)
        for m in messages:
            proc.stdin.write(_frame(m))
        proc.stdin.flush()
        time.sleep(pause_s)
        proc.stdin.write(_frame(EXIT))
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        finally:
            proc.kill()
    return err.read_text(errors="replace")


def test_exit_right_after_initialized_writes_no_traceback(tmp_path: Path) -> None:
    text = _server_stderr(tmp_path, [INIT, INITIALIZED])
    assert "Traceback" not in text, text[:2000]
    assert len(text.splitlines()) <= 3, text[:2000]


def test_malformed_messages_get_one_line_each_and_a_flood_is_counted(tmp_path: Path) -> None:
    bad = [b"{bad json", b"[1,2]", b'{"jsonrpc":"2.0","id":5}', b"\xff\xfe"]
    text = _server_stderr(tmp_path, [INIT, INITIALIZED, *bad, *[b"{flood"] * 200], pause_s=3.0)
    assert "Traceback" not in text, text[:2000]
    lines = text.splitlines()
    assert all(ln.startswith("htam-server ") for ln in lines), lines
    assert len(lines) <= len(bad) + REPEATS + 1 + 2, lines


def test_formatter_and_filter_make_one_line() -> None:
    try:
        raise ValueError("first\nsecond")
    except ValueError:
        rec = logging.LogRecord("x", logging.ERROR, __file__, 1, "Unable to handle message\nmore", (), sys.exc_info())
    assert OneLineFormatter().format(rec) == "htam-server ERROR Unable to handle message (ValueError: first)"
    f = QuietFilter()
    assert [f.filter(rec) for _ in range(REPEATS + 3)] == [True] * (REPEATS + 1) + [False] * 2
