"""Long-running editor jobs (auto-optimize runs) and how they are cancelled.

One job per key (a kernel of a document): starting a job cancels the one running under the same key. A job may
also be cancelled by the request that started it (``$/cancelRequest`` names the request id). Cancelling sets the
job's :class:`threading.Event`, which the engine polls. The server owns one :class:`Jobs`; nothing here is global.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Any

__all__ = ["Jobs"]


class Jobs:
    """The running jobs by key and by request id. Thread safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[Hashable, threading.Event] = {}
        self._by_request: dict[Any, threading.Event] = {}

    @property
    def running(self) -> bool:
        """Some job is running."""
        with self._lock:
            return bool(self._by_key or self._by_request)

    def start(self, key: Hashable, request_id: Any = None) -> threading.Event:
        """Register a job under ``key`` (and under the request id ``request_id`` when not ``None``), cancelling the
        job that runs under ``key``. Returns the new job's cancel event."""
        cancel = threading.Event()
        with self._lock:
            old = self._by_key.get(key)
            self._by_key[key] = cancel
            if request_id is not None:
                self._by_request[request_id] = cancel
        if old is not None:
            old.set()
        return cancel

    def finish(self, key: Hashable, cancel: threading.Event, request_id: Any = None) -> None:
        """The job with cancel event ``cancel`` has ended: forget it (a newer job under ``key`` is kept)."""
        with self._lock:
            if self._by_key.get(key) is cancel:
                del self._by_key[key]
            if request_id is not None and self._by_request.get(request_id) is cancel:
                del self._by_request[request_id]

    def cancel_request(self, request_id: Any) -> bool:
        """Cancel the job started by request ``request_id``; returns whether there was one."""
        with self._lock:
            cancel = self._by_request.get(request_id)
        if cancel is not None:
            cancel.set()
        return cancel is not None
