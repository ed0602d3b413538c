"""Harness discovery in a helper process (``find_harness`` reads and parses files: a few hundred ms of
GIL-holding work on a 3,000-line file, which would stall the event loop's thread if run in a thread).

The pool has one process (``spawn``: no copy of the server's state), started on first use.
"""

from __future__ import annotations

import multiprocessing
import threading
from concurrent.futures import ProcessPoolExecutor
from typing import Any

_pool: ProcessPoolExecutor | None = None
_lock = threading.Lock()


def probe(path: str, kernel_name: str, model: Any) -> tuple[str, str, str] | None:
    """``(message, snippet, htam.toml path)`` when ``kernel_name`` has no harness and the finder offers a
    snippet, else ``None`` (a harness exists, or it is broken in a way a template cannot fix)."""
    from htam_core.harness import HarnessError, find_harness

    try:
        find_harness(path, kernel_name, model)
    except HarnessError as exc:
        if exc.snippet and exc.path:
            return exc.message, exc.snippet, exc.path
        return None
    except Exception:  # noqa: BLE001 - a finder bug must not break the code-action list
        return None
    return None


def probe_in_process(path: str, kernel_name: str, model: Any, timeout_s: float = 60.0) -> tuple[str, str, str] | None:
    """:func:`probe` in the helper process (blocking; call it from a thread). Falls back to this process
    when the helper cannot start."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        pool = _pool
    try:
        return pool.submit(probe, path, kernel_name, model).result(timeout_s)
    except Exception:  # noqa: BLE001 - broken pool or timeout: answer here rather than not at all
        return probe(path, kernel_name, model)


def shutdown() -> None:
    """Stop the helper process."""
    global _pool
    with _lock:
        if _pool is not None:
            _pool.shutdown(wait=False, cancel_futures=True)
            _pool = None
