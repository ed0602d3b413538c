"""Progress lines of the ``htam`` commands that run one long step (a compile, a profile).

The convention is ``htam optimize``'s: progress goes to stderr, on a terminal or not (a log or CI sees it
too), and never with ``--json`` (a JSON consumer reads stdout and gets no progress anywhere).
:func:`when_slow` prints one line only when the step is still running after :data:`SLOW_S` seconds, so a
warm (cached) run stays silent.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["SLOW_S", "when_slow"]

#: A step still running after this many seconds gets its progress line.
SLOW_S = 2.0


@contextmanager
def when_slow(message: str, *, enabled: bool = True, after_s: float | None = None) -> Iterator[None]:
    """Print ``htam: MESSAGE`` once on stderr if the ``with`` body is still running after ``after_s`` seconds.

    Args:
        message: what the step is doing (``"compiling k for sm_90 (first compile, later ones are cached)..."``).
        enabled: ``False`` prints nothing (``--json``).
        after_s: the delay in seconds; default :data:`SLOW_S` (read when the step starts).

    The line is printed from a timer thread; the body's own output is not held back. A closed stderr is
    ignored.
    """
    if not enabled:
        yield
        return
    done = threading.Event()

    def say() -> None:
        if not done.is_set():
            try:
                print(f"htam: {message}", file=sys.stderr, flush=True)
            except (OSError, ValueError):
                pass

    timer = threading.Timer(SLOW_S if after_s is None else after_s, say)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        done.set()
        timer.cancel()
