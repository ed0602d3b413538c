"""The LSP lifecycle (3.17 "Lifecycle Messages") against a real server subprocess over stdio, in raw JSON-RPC:
requests before ``initialize``, a second ``initialize``, requests after ``shutdown``, and the exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

from tests.lsp.conftest import SERVER_ENV


class _Rpc:
    """A framed JSON-RPC connection to ``python -m htam_server``, or to ``htam serve`` (the CLI, through its
    error boundary: what editors start) when ``cli`` is true."""

    def __init__(self, tmp_path, cli: bool = False) -> None:
        env = {**SERVER_ENV, "HTAM_MEMORY": str(tmp_path / "memory.sqlite3")}
        cmd = ["-m", "htam_core.cli.main", "serve"] if cli else ["-m", "htam_server"]
        self.stderr_path = tmp_path / "server-stderr.txt"
        self._stderr = self.stderr_path.open("wb")
        self.proc = subprocess.Popen([sys.executable, *cmd], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._stderr, env=env, cwd=os.getcwd())
        self.replies: dict[int, dict] = {}
        self.cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            msg = json.loads(out.read(length))
            if "id" in msg and "method" not in msg:
                with self.cv:
                    self.replies[msg["id"]] = msg
                    self.cv.notify_all()

    def send(self, method: str, params=None, msg_id: int | None = None) -> None:
        body = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            body["params"] = params
        if msg_id is not None:
            body["id"] = msg_id
        data = json.dumps(body).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
        self.proc.stdin.flush()

    def reply(self, msg_id: int, timeout: float = 30.0) -> dict:
        with self.cv:
            assert self.cv.wait_for(lambda: msg_id in self.replies, timeout), f"no reply to request {msg_id}"
            return self.replies[msg_id]


HOVER = {"textDocument": {"uri": "file:///nowhere/k.cu"}, "position": {"line": 0, "character": 0}}
INIT = {"processId": None, "rootUri": None, "capabilities": {}}


def test_requests_before_initialize_then_second_initialize_then_after_shutdown(tmp_path):
    rpc = _Rpc(tmp_path)
    try:
        rpc.send("textDocument/hover", HOVER, 1)
        assert rpc.reply(1)["error"]["code"] == -32002  # ServerNotInitialized
        rpc.send("textDocument/didOpen", {"textDocument": {"uri": "file:///nowhere/k.cu", "languageId": "cuda",
                                                           "version": 1, "text": "x"}})  # dropped
        rpc.send("initialize", INIT, 2)
        assert "capabilities" in rpc.reply(2)["result"]
        rpc.send("initialized", {})
        rpc.send("initialize", INIT, 3)
        assert rpc.reply(3)["error"]["code"] == -32600  # InvalidRequest: only once
        rpc.send("textDocument/hover", HOVER, 4)
        assert rpc.reply(4).get("result") is None and "error" not in rpc.reply(4)  # not open: null
        rpc.send("shutdown", None, 5)
        assert "error" not in rpc.reply(5)
        rpc.send("textDocument/hover", HOVER, 6)
        assert rpc.reply(6)["error"]["code"] == -32600  # answered, not left waiting
        rpc.send("exit")
        assert rpc.proc.wait(30) == 0
    finally:
        if rpc.proc.poll() is None:
            rpc.proc.kill()


def test_exit_without_shutdown_exits_1(tmp_path):
    rpc = _Rpc(tmp_path)
    try:
        rpc.send("initialize", INIT, 1)
        rpc.reply(1)
        rpc.send("initialized", {})
        rpc.send("exit")
        assert rpc.proc.wait(30) == 1
    finally:
        if rpc.proc.poll() is None:
            rpc.proc.kill()


def test_htam_serve_exit_codes_through_the_cli(tmp_path):
    """Regression: ``htam serve`` returned 70 (internal error: a flush of the closed stdout) after a clean
    shutdown/exit, and left a crash file; the CLI must pass the server's 0 and 1 through."""
    for shutdown, want in ((True, 0), (False, 1)):
        rpc = _Rpc(tmp_path, cli=True)
        try:
            rpc.send("initialize", INIT, 1)
            rpc.reply(1)
            rpc.send("initialized", {})
            if shutdown:
                rpc.send("shutdown", None, 2)
                rpc.reply(2)
            rpc.send("exit")
            assert rpc.proc.wait(30) == want
            assert "internal error" not in rpc.stderr_path.read_text(errors="replace")
        finally:
            if rpc.proc.poll() is None:
                rpc.proc.kill()
