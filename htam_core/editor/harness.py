"""Where a kernel's harness comes from, found in a helper process (never in the editor's), checked once per kernel
while its files are unchanged.

``find_harness`` reads and parses files (a few hundred ms of GIL-holding work on a 3,000-line file) and, for a
Python kernel without an ``htam.toml``, infers the harness by running the file's ``__main__`` block or tests
(in a child of the helper): untrusted code, which must not run in the server process. :class:`HarnessProbe` owns
a pool of one process (``spawn``: no copy of the server's state), started on first use; as it starts it drops
every variable outside the child allow-list and watches its parent, so it dies with the server, even after a
SIGKILL (``htam_core.runtime.children.start_as_child``). When the helper cannot answer (it broke, or is still busy
past the timeout) the answer is ``None`` ("not known yet"), never a run here; a broken pool is replaced on the next
call.

:class:`HarnessChecks` caches each kernel's :class:`~htam_core.harness.status.HarnessStatus` until the file, its
``htam.toml`` or its ``_ref.py`` sibling change on disk, and runs one background check per kernel at a time (hover
and code actions start it, so that the code-action list usually finds it done).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from htam_core.harness.status import HarnessStatus, harness_status
from htam_core.runtime.children import start_as_child

__all__ = ["HarnessChecks", "HarnessProbe", "probe"]


def probe(path: str, kernel_name: str, model: Any) -> HarnessStatus:
    """The kernel's :class:`~htam_core.harness.status.HarnessStatus` (runs in the helper process)."""
    return harness_status(path, kernel_name, model)


class HarnessProbe:
    """The helper process that runs :func:`probe`. Thread safe."""

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def status(self, path: str, kernel_name: str, model: Any, timeout_s: float = 180.0) -> HarnessStatus | None:
        """:func:`probe` in the helper process (blocking; call it from a thread). ``None`` when the helper did not
        answer within ``timeout_s`` or broke: the caller treats the harness as not known yet."""
        with self._lock:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                                 initializer=start_as_child)
            pool = self._pool
        try:
            return pool.submit(probe, path, kernel_name, model).result(timeout_s)
        except BrokenProcessPool:
            with self._lock:
                if self._pool is pool:
                    self._pool = None
            return None
        except Exception:  # noqa: BLE001 - timeout, or a model that does not pickle: not known, never run here
            return None

    def shutdown(self) -> None:
        """Stop the helper process."""
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = None


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


def _stamp(path: str) -> tuple[float, float, float]:
    """The modification times of the file, its ``htam.toml`` and its ``_ref.py`` sibling (a cached status's key)."""
    d, stem = os.path.dirname(path), os.path.splitext(os.path.basename(path))[0]
    return _mtime(path), _mtime(os.path.join(d, "htam.toml")), _mtime(os.path.join(d, f"{stem}_ref.py"))


class HarnessChecks:
    """Each kernel's harness status, cached while its files are unchanged on disk. Thread safe.

    Args:
        probe: the helper process (default: a new :class:`HarnessProbe`).
    """

    def __init__(self, probe: HarnessProbe | None = None) -> None:
        self.probe = probe if probe is not None else HarnessProbe()
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str], tuple[tuple[float, float, float], HarnessStatus | None]] = {}
        self._running: dict[tuple[str, str], Future] = {}
        self._threads = ThreadPoolExecutor(max_workers=2, thread_name_prefix="htam-harness")

    def cached(self, path: str, kernel_name: str) -> tuple[bool, HarnessStatus | None]:
        """``(known, status)`` from the cache (valid while the files are unchanged); never checks."""
        with self._lock:
            hit = self._cache.get((path, kernel_name))
        if hit is not None and hit[0] == _stamp(path):
            return True, hit[1]
        return False, None

    def status(self, path: str, kernel_name: str, model: Any) -> HarnessStatus | None:
        """The kernel's status, or ``None`` when the helper did not answer (blocking; call it from a thread).
        ``model`` is a snapshot of the file's source model (for the template; ``None``: the saved file is read)."""
        known, st = self.cached(path, kernel_name)
        if known:
            return st
        stamp = _stamp(path)
        st = self.probe.status(path, kernel_name, model)
        if st is not None:
            with self._lock:
                self._cache[(path, kernel_name)] = (stamp, st)
        return st

    def start(self, path: str, kernel_name: str, model: Any) -> Future | None:
        """Start (once) the background check of one kernel; ``None`` when the answer is cached. A check already
        running for the kernel is returned instead of starting another."""
        if self.cached(path, kernel_name)[0]:
            return None
        key = (path, kernel_name)
        with self._lock:
            fut = self._running.get(key)
            if fut is None or fut.done():
                fut = self._running[key] = self._threads.submit(self.status, path, kernel_name, model)
                fut.add_done_callback(lambda f: self._forget(key, f))
        return fut

    def _forget(self, key: tuple[str, str], fut: Future) -> None:
        with self._lock:
            if self._running.get(key) is fut:
                del self._running[key]

    def shutdown(self) -> None:
        """Stop the helper process and the check threads."""
        self._threads.shutdown(wait=False, cancel_futures=True)
        self.probe.shutdown()
