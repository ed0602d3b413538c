"""Server-initiated work-done progress (``window/workDoneProgress/create`` + ``$/progress``) with cancel.

A :class:`WorkProgress` is a no-op when the client does not support work-done progress. Cancellation, from
the progress UI (``window/workDoneProgress/cancel``) or from ``$/cancelRequest`` of the request that started
the work, sets :attr:`WorkProgress.cancel`, a :class:`threading.Event` that the engine polls.
"""

from __future__ import annotations

import threading
import uuid

from lsprotocol import types
from pygls.lsp.server import LanguageServer


class WorkProgress:
    """One progress bar.

    Args:
        ls: the language server.
        title: shown by the client.
        cancellable: offer a cancel button.
    """

    def __init__(self, ls: LanguageServer, title: str, cancellable: bool = False) -> None:
        self.ls = ls
        self.title = title
        self.cancellable = cancellable
        self.cancel = threading.Event()
        self.token: str | None = None

    @property
    def supported(self) -> bool:
        """The client accepts server-initiated progress."""
        win = self.ls.client_capabilities.window
        return bool(win is not None and win.work_done_progress)

    async def begin(self, message: str | None = None, percentage: int | None = None) -> None:
        """Create the token and send ``begin``; failures of the client are ignored (no progress shown)."""
        if not self.supported:
            return
        token = f"htam-{uuid.uuid4().hex[:12]}"
        try:
            await self.ls.work_done_progress.create_async(token)
        except Exception:  # noqa: BLE001 - a client that refuses the token just gets no progress
            return
        self.token = token
        self.ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(
            title=self.title, cancellable=self.cancellable, message=message, percentage=percentage))
        fut = self.ls.work_done_progress.tokens.get(token)
        if fut is not None:
            fut.add_done_callback(lambda f: self.cancel.set() if f.cancelled() else None)

    def report(self, message: str, percentage: int | None = None) -> None:
        """Send a ``report`` (thread-safe: call it from the event loop or via ``call_soon_threadsafe``)."""
        if self.token is not None:
            self.ls.work_done_progress.report(self.token, types.WorkDoneProgressReport(
                message=message, percentage=percentage, cancellable=self.cancellable))

    def end(self, message: str | None = None) -> None:
        """Send ``end`` and forget the token."""
        if self.token is not None:
            self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
            self.ls.work_done_progress.tokens.pop(self.token, None)
            self.token = None
