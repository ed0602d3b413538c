"""Harness discovery in a helper process, never in the server's.

``find_harness`` reads and parses files (a few hundred ms of GIL-holding work on a 3,000-line file) and, for a
Python kernel without an ``htam.toml``, infers the harness by running the file's ``__main__`` block or tests
(in a child of the helper): untrusted code, which must not run in the server process. The pool has one
process (``spawn``: no copy of the server's state), started on first use; as it starts it drops every
variable outside the child allow-list and watches its parent, so it dies with the server, even after a SIGKILL
(``htam_core.runtime.children.start_as_child``). When the helper cannot answer
(it broke, or is still busy past the timeout) the answer is ``None`` ("not known yet"), never a run here; a
broken pool is replaced on the next call.
"""

from __future__ import annotations

import multiprocessing
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from htam_core.harness.status import HarnessStatus, harness_status
from htam_core.runtime.children import start_as_child

_pool: ProcessPoolExecutor | None = None
_lock = threading.Lock()


def probe(path: str, kernel_name: str, model: Any) -> HarnessStatus:
    """The kernel's :class:`~htam_core.harness.status.HarnessStatus` (runs in the helper process)."""
    return harness_status(path, kernel_name, model)


def probe_in_process(path: str, kernel_name: str, model: Any, timeout_s: float = 180.0) -> HarnessStatus | None:
    """:func:`probe` in the helper process (blocking; call it from a thread). ``None`` when the helper did not
    answer within ``timeout_s`` or broke: the caller treats the harness as not known yet."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                        initializer=start_as_child)
        pool = _pool
    try:
        return pool.submit(probe, path, kernel_name, model).result(timeout_s)
    except BrokenProcessPool:
        with _lock:
            if _pool is pool:
                _pool = None
        return None
    except Exception:  # noqa: BLE001 - timeout, or a model that does not pickle: not known, never run here
        return None


def shutdown() -> None:
    """Stop the helper process."""
    global _pool
    with _lock:
        if _pool is not None:
            _pool.shutdown(wait=False, cancel_futures=True)
            _pool = None
