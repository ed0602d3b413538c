"""The stdio transport without a thread hop per read: stdin read by the event loop itself.

pygls 2's ``StdinAsyncReader`` reads every header line and every body through ``run_in_executor``: three thread
hand-offs per message, each waiting for the GIL while the analysis thread parses. Under a burst of typing (500
``didChange`` and 172 requests) a py-spy ``--gil`` profile of the server showed those hand-offs as the event
loop's largest cost, and the replies queued behind them. :class:`PipeReader` reads the same bytes through an
``asyncio.StreamReader`` on the stdin pipe (``loop.connect_read_pipe``), so reading a message costs the event
loop no thread switch. The message loop itself is pygls's (``pygls.io_.run_async``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import sys
import threading
from typing import BinaryIO

from pygls.io_ import StdoutWriter, run_async
from pygls.lsp.server import LanguageServer

logger = logging.getLogger(__name__)

#: StreamReader buffer limit (bytes): a whole-file didOpen of a large file arrives as one body.
LIMIT = 64 * 1024 * 1024


class PipeReader:
    """pygls's ``AsyncReader`` (``readline()``, ``readexactly(n)``) over the stdin pipe, on the event loop.

    Args:
        stdin: the binary stdin stream (a pipe, a socket or a terminal; see :func:`can_pipe`).
    """

    def __init__(self, stdin: BinaryIO) -> None:
        self.stdin = stdin
        self._reader: asyncio.StreamReader | None = None

    async def _stream(self) -> asyncio.StreamReader:
        if self._reader is None:
            loop = asyncio.get_running_loop()
            reader = asyncio.StreamReader(limit=LIMIT)
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), self.stdin)
            self._reader = reader
        return self._reader

    async def readline(self) -> bytes:
        """One header line (``b""`` at end of input)."""
        return await (await self._stream()).readline()

    async def readexactly(self, n: int) -> bytes:
        """``n`` bytes of a body (fewer at end of input, as ``BinaryIO.read`` gives)."""
        try:
            return await (await self._stream()).readexactly(n)
        except asyncio.IncompleteReadError as exc:
            return exc.partial


def can_pipe(stdin: BinaryIO) -> bool:
    """Whether ``stdin`` can be read by the event loop (a pipe, socket or character device, not a file)."""
    try:
        mode = os.fstat(stdin.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


def start_stdio(ls: LanguageServer) -> None:
    """Serve ``ls`` (a pygls ``LanguageServer``) on stdin/stdout until the client disconnects or ``exit``.

    Falls back to pygls's own ``start_io`` when stdin is not a pipe (a regular file, say).
    """
    stdin = sys.stdin.buffer
    if not can_pipe(stdin):
        ls.start_io()
        return
    ls._stop_event = threading.Event()  # pygls's exit handler sets it
    ls.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
    try:
        asyncio.run(run_async(stop_event=ls._stop_event, reader=PipeReader(stdin), protocol=ls.protocol,
                              logger=logger, error_handler=ls.report_server_error))
    except BrokenPipeError:
        logger.error("Connection to the client is lost; shutting down the server.")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        ls.shutdown()
