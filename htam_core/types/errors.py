"""Errors of the profiler that the user can act on, and the one-line text of any exception.

A :class:`ProfileError` carries a one-line message (what happened and what to do) plus the
compiler's own diagnostic lines, so that the CLI can print one line and the LSP can show the
details as diagnostics.
"""

from __future__ import annotations

from pathlib import Path


class ProfileError(Exception):
    """The kernel could not be profiled (compile error, unknown kernel, missing tool ...).

    Args:
        message: one line that says what happened and what to do.
        details: the tool's own diagnostic lines (``file(12): error: expected a ";"``), at most a
            few dozen, in the order the tool printed them.
    """

    def __init__(self, message: str, details: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = list(details or [])

    def __str__(self) -> str:
        if not self.details:
            return self.message
        return self.message + "\n" + "\n".join(self.details)


def exception_line(exc: BaseException, limit: int | None = None) -> str:
    """``"Type: first line of the message"`` (the first line cut to ``limit`` characters when given), or ``"Type"``
    alone for an exception without a message: the one line a refusal or an editor message shows for an internal
    error, whose traceback goes to the log. :func:`exception_text` gives the whole message instead."""
    lines = str(exc).strip().splitlines()
    first = lines[0][:limit] if lines and lines[0] else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def exception_text(exc: BaseException) -> str:
    """``"Type: message"`` for an exception, never with an empty message.

    An exception without a message (a bare ``assert x.shape[-1] == w.shape[0]`` in the user's launcher gives
    ``AssertionError()``) is described by where it was raised: the innermost frame's file, line and source
    line, e.g. ``"AssertionError at rms.py:23: assert x.shape[-1] == w.shape[0] (an assert failed: the
    inputs do not satisfy a check of the code; look at the shapes and dtypes the harness gives)"``.
    """
    import linecache
    import traceback

    msg = str(exc).strip()
    name = type(exc).__name__
    if msg:
        return f"{name}: {msg}"
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ else []
    if not frames:
        return f"{name} (raised without a message)"
    last = frames[-1]
    line = (last.line or linecache.getline(last.filename, last.lineno or 0)).strip()
    hint = (" (an assert failed: the inputs do not satisfy a check of the code; look at the shapes, dtypes and "
            "values the harness gives)" if isinstance(exc, AssertionError) else " (raised without a message)")
    return f"{name} at {Path(last.filename).name}:{last.lineno}: {line or '<source not available>'}{hint}"
