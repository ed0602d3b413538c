"""The stdio reader on the event loop: LSP framing read from a real pipe, end of input, the file fallback."""

from __future__ import annotations

import asyncio
import os
import tempfile

from htam_server.stdio import PipeReader, can_pipe


def test_reads_headers_and_bodies_from_a_pipe_then_end_of_input():
    r, w = os.pipe()
    body = b'{"jsonrpc": "2.0", "method": "initialized", "params": {}}'
    os.write(w, b"Content-Length: %d\r\n\r\n" % len(body) + body + b"Content-Length: 10\r\n\r\nabc")
    os.close(w)

    async def read() -> list[bytes]:
        with os.fdopen(r, "rb", buffering=0) as stdin:
            reader = PipeReader(stdin)
            return [await reader.readline(), await reader.readline(), await reader.readexactly(len(body)),
                    await reader.readline(), await reader.readline(), await reader.readexactly(10),
                    await reader.readline()]

    got = asyncio.run(read())
    assert got == [b"Content-Length: %d\r\n" % len(body), b"\r\n", body, b"Content-Length: 10\r\n", b"\r\n", b"abc",
                   b""]


def test_only_pipes_sockets_and_terminals_are_read_on_the_loop():
    r, w = os.pipe()
    with os.fdopen(r, "rb") as pr, os.fdopen(w, "wb") as _pw:
        assert can_pipe(pr)
    with tempfile.TemporaryFile() as f:
        assert not can_pipe(f)  # a regular file: pygls's own reader
