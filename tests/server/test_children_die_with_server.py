"""The language server's children (the harness-probe helper, multiprocessing's ``resource_tracker``, profile
workers and what they started) die with it: SIGTERM or SIGKILL of the server leaves no child running 5 s later."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parents[2]


def _frame(body: dict) -> bytes:
    data = json.dumps(body).encode()
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_no_child_outlives_the_server(tmp_path: Path, sig: signal.Signals) -> None:
    shutil.copy(REPO / "examples" / "vector_add.py", tmp_path / "vector_add.py")
    uri = (tmp_path / "vector_add.py").as_uri()
    env = {**os.environ, "HTAM_CACHE_DIR": str(tmp_path / "cache"), "HTAM_MEMORY": str(tmp_path / "m.sqlite3"),
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    server = subprocess.Popen([sys.executable, "-m", "htam_server"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=env, cwd=tmp_path, start_new_session=True)
    try:
        text = (tmp_path / "vector_add.py").read_text()
        for body in ({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}},
                     {"jsonrpc": "2.0", "method": "initialized", "params": {}},
                     {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
                         "uri": uri, "languageId": "python", "version": 1, "text": text}}},
                     {"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {
                         "textDocument": {"uri": uri}, "position": {"line": 13, "character": 6}}}):
            server.stdin.write(_frame(body))
        server.stdin.flush()
        kids: dict[int, psutil.Process] = {}
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            kids.update((p.pid, p) for p in psutil.Process(server.pid).children(recursive=True))
            names = " ".join(" ".join(p.cmdline()) for p in kids.values() if _alive(p))
            if "resource_tracker" in names and "spawn_main" in names:
                break
            time.sleep(0.2)
        assert kids, "the server started no child"
        server.send_signal(sig)
        server.wait(timeout=30)
        time.sleep(5)
        left = [f"{p.pid} {' '.join(p.cmdline())[:120]}" for p in kids.values() if _alive(p)]
        assert not left, left
    finally:
        server.kill()
        server.wait(timeout=30)
