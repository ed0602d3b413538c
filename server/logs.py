"""The server's log on stderr: one line per record, no tracebacks, and no flood.

pygls logs a malformed message, and asyncio a callback cut short by ``exit``, with a full traceback each; a
client that sends ``exit`` right after ``initialized`` got thousands of them. Here every record is one line,
``htam-server LEVEL message (ExceptionType: first line)``; records that only say the server is stopping (a
``CancelledError``, ``SystemExit`` or ``KeyboardInterrupt`` in a callback) are dropped; a line repeated more
than :data:`REPEATS` times is shown once more with its count and then no more. ``HTAM_DEBUG=1`` keeps the
tracebacks. The idea is the standard library's own: a :class:`logging.Formatter` and a :class:`logging.Filter`
on the one handler.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading

#: How many times the same line is written before it is counted instead.
REPEATS = 3
_STOPPING = (asyncio.CancelledError, SystemExit, KeyboardInterrupt, BrokenPipeError, ConnectionResetError)


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


class OneLineFormatter(logging.Formatter):
    """``htam-server LEVEL message (ExceptionType: first line)``: one line, at most 300 characters, whatever
    the record holds."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line (its traceback reduced to the exception's type and first line)."""
        line = f"htam-server {record.levelname} {_first_line(record.getMessage())}"
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None:
            detail = _first_line(str(exc))
            line += f" ({type(exc).__name__}{': ' + detail if detail else ''})"
        if getattr(record, "htam_last", False):
            line += " (repeated; no more of these are shown)"
        return line[:300]


class QuietFilter(logging.Filter):
    """Drops the records of a server that is stopping, and a line seen more than :data:`REPEATS` times."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether to write ``record`` (the last one written of a repeated line is marked ``htam_last``)."""
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, _STOPPING) or isinstance(getattr(exc, "__context__", None), _STOPPING):
            return False
        key = f"{record.levelname} {_first_line(record.getMessage())} {type(exc).__name__} {_first_line(str(exc))}"
        with self._lock:
            n = self._seen.get(key, 0) + 1
            self._seen[key] = n
        record.htam_last = n == REPEATS + 1  # the formatter says that no more of these follow
        return n <= REPEATS + 1


def configure(level: int = logging.WARNING) -> None:
    """Point the root logger at stderr with :class:`OneLineFormatter` and :class:`QuietFilter` (``HTAM_DEBUG=1``:
    tracebacks kept, nothing dropped)."""
    handler = logging.StreamHandler(sys.stderr)
    if os.environ.get("HTAM_DEBUG", "").strip() in ("", "0"):
        handler.setFormatter(OneLineFormatter())
        handler.addFilter(QuietFilter())
    else:
        handler.setFormatter(logging.Formatter("htam-server %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
