"""An open file in the editor: its current text, kept up to date cheaply on every change, and its latest parse.

Typing must not re-parse per keystroke on the event loop. So a :class:`Buffer` splits the work:

* :meth:`Buffer.apply_change` (the event loop, per ``didChange`` content change): splice the UTF-8 bytes and
  update the line index by the edit (:meth:`~htam_core.source.positions.LineIndex.edited`), record the change,
  and widen one *pending window*: the byte span holding every change since the last parse. No tree-sitter work.
* :meth:`Buffer.sync` (a thread, after a burst of changes settles): feed the pending window to the
  :class:`~htam_core.source.Document` as **one** incremental change (a burst of 500 keystrokes is one tree edit
  and one re-parse), build the model and publish it as an immutable :class:`Snapshot`.
* :meth:`Buffer.kernel_at` (the event loop, per request): map the position in the current text back through the
  changes made since the snapshot and look the kernel up in the snapshot: no parse, microseconds.
* :meth:`Buffer.kernel_at_now` (a thread, for a request that must see the current text): feed the pending window
  as one incremental change and let the Document rebuild only the kernel under the cursor (its fast path while
  the edits stay inside one kernel's body: about a millisecond), without building the whole model.

A :class:`Located` kernel carries the change counter of the text its byte spans belong to;
:meth:`Buffer.to_current` moves such a byte (a kernel's name, for a hover range) forward to the current text.

The :class:`Document` is touched only by :meth:`sync` (one at a time), so the event loop never waits for a parse.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from htam_core.source.api import FileLanguage, kernel_at_byte
from htam_core.source.document import Document
from htam_core.source.model import Kernel, SourceModel
from htam_core.source.positions import LineIndex

__all__ = ["Buffer", "Located", "Snapshot"]

#: Changes kept beyond the snapshot, so that a kernel located a little earlier can still be moved forward.
_KEEP = 512


@dataclass(frozen=True)
class Snapshot:
    """One parse of a buffer.

    Attributes:
        seq: the buffer's change counter at the parse; version: the editor's version number then.
        text: the text parsed; index: its line index; model: its source model (``model.stale`` for a Python
            file that no longer parses: the last good model).
    """

    seq: int
    version: int
    text: str
    index: LineIndex
    model: SourceModel


@dataclass(frozen=True)
class Located:
    """A kernel found at a position.

    Attributes:
        kernel: the kernel, or ``None``.
        seq: the buffer's change counter of the text the kernel's byte spans belong to.
        stale: that text does not parse and the kernel comes from the last good parse.
    """

    kernel: Kernel | None
    seq: int
    stale: bool = False


#: File languages whose every file holds kernels worth answering for (a ``.cu`` file); a Python file is served
#: only when it holds Triton kernels or CUDA strings.
_EVERY_FILE_SERVED: dict[str, bool] = {"cuda": True, "python": False}


class Buffer:
    """The text of one open file and its latest :class:`Snapshot`.

    Args:
        text: the file's text; file_language: ``"cuda"`` or ``"python"``; path: copied into the models;
        version: the editor's version number.

    Thread safety: :meth:`apply_change` and the readers run on one thread (the event loop); :meth:`sync` may
    run on any other thread.
    """

    def __init__(self, text: str, file_language: FileLanguage, path: str | None = None, version: int = 0) -> None:
        self.file_language: FileLanguage = file_language
        self.path = path
        self.version = version
        self._lock = threading.Lock()  # current bytes, index, change log, snapshot
        self._sync_lock = threading.Lock()  # one sync at a time: the Document's owner
        self._index = LineIndex(text.encode("utf-8", errors="surrogatepass"))
        self._text: str | None = text
        self._seq = 0
        self._log: list[tuple[int, int, int, int]] = []  # (seq, start, old end, new end) since the snapshot
        self._window: tuple[int, int, int] | None = None  # (start, end in the Document's text, end now)
        self._full = True  # the Document must be (re)built from the whole text
        self._doc: Document | None = None
        self.snapshot: Snapshot | None = None
        self._maybe_kernels: bool | None = None  # the first text's substring check (see :meth:`served`)

    # ---- the current text (event loop) ---------------------------------------------------------------
    @property
    def text(self) -> str:
        """The current text."""
        t = self._text
        if t is None:
            t = self._text = self._index.data.decode("utf-8", errors="surrogatepass")
        return t

    def served(self) -> bool:
        """Whether this file gets answers: every CUDA file; Python only with Triton kernels or CUDA strings.

        For Python, a substring check (``triton`` or ``__global__``) of the first text read rules most files out
        without parsing; the kernel count comes from the latest parse (a file not parsed yet counts as served).
        """
        if _EVERY_FILE_SERVED[self.file_language]:
            return True
        if self._maybe_kernels is None:
            text = self.text
            self._maybe_kernels = "triton" in text or "__global__" in text
        if not self._maybe_kernels:
            return False
        snap = self.snapshot
        return snap is None or bool(snap.model.kernels)

    @property
    def index(self) -> LineIndex:
        """Line index of the current text."""
        return self._index

    @property
    def pending(self) -> bool:
        """Changes were made since the snapshot (or there is none yet)."""
        s = self.snapshot
        return s is None or s.seq != self._seq

    def apply_change(self, start_line: int | None, start_col: int | None, end_line: int | None,
                     end_col: int | None, new_text: str, encoding: str = "utf-16", version: int | None = None) -> None:
        """Apply one LSP content change: replace ``[start, end)`` (columns in ``encoding`` units) by ``new_text``,
        or the whole text when the range is ``None``. Cheap: no parse (see the module docstring).

        Raises:
            ValueError: unknown encoding, negative position, or end before start.
        """
        new = new_text.encode("utf-8", errors="surrogatepass")
        with self._lock:
            idx = self._index
            if start_line is None or start_col is None or end_line is None or end_col is None:
                start, old_end = 0, len(idx.data)
                self._index = LineIndex(new)
                self._full, self._window = True, None
            else:
                start = idx.to_byte(start_line, start_col, encoding)
                old_end = idx.to_byte(end_line, end_col, encoding)
                if old_end < start:
                    raise ValueError(f"change range ends ({end_line}:{end_col}) before it starts "
                                     f"({start_line}:{start_col})")
                self._index = idx.edited(start, old_end, new)
                if not self._full:
                    self._window = _widen(self._window, start, old_end, start + len(new))
            self._seq += 1
            self._log.append((self._seq, start, old_end, start + len(new)))
            self._text = None
            if version is not None:
                self.version = version

    # ---- parsing (any thread) ------------------------------------------------------------------------
    def sync(self) -> Snapshot:
        """Bring the parse up to the current text and return the new snapshot (blocking: call it off the event
        loop; a no-op when nothing changed)."""
        with self._sync_lock:
            with self._lock:
                snap = self.snapshot
                if snap is not None and snap.seq == self._seq:
                    return snap
                data, seq, version = self._index.data, self._seq, self.version
                window, full = self._window, self._full
                self._window, self._full = None, False
            text = data.decode("utf-8", errors="surrogatepass")
            doc = self._fed(text, data, window, full)
            snap = Snapshot(seq, version, text, doc.index, doc.model)
            with self._lock:
                self.snapshot = snap
                keep = len(self._log) - _KEEP
                self._log = [c for i, c in enumerate(self._log) if c[0] > seq or i >= keep]
            return snap

    def _fed(self, text: str, data: bytes, window: tuple[int, int, int] | None, full: bool) -> Document:
        doc = self._doc
        if doc is None or full or not _feed(doc, window, data):
            doc = self._doc = Document(text, self.file_language, self.path)
        if len(doc.index.data) != len(data) or doc.index.data != data:  # defensive: never parse other text
            doc = self._doc = Document(text, self.file_language, self.path)
        return doc

    def kernel_at_now(self, byte: int, seq: int) -> Located:
        """The kernel at byte ``byte`` of the text at change counter ``seq`` (the request's), located in the
        current text with an incremental re-parse and the Document's per-kernel fast path (blocking: call it off
        the event loop; see the module docstring)."""
        with self._sync_lock:
            with self._lock:
                data, now = self._index.data, self._seq
                window, full = self._window, self._full
                self._window, self._full = None, False
                log = [c for c in self._log if seq < c[0] <= now]
            byte = _forward(byte, log)
            doc = self._fed(data.decode("utf-8", errors="surrogatepass"), data, window, full)
            line, col = doc.index.point(min(byte, len(data)))
            kernel = doc.kernel_at(line, col, "utf-8")
            built = getattr(doc, "_model", None)  # set when the fast path did not apply and the model was built
            return Located(kernel, now, bool(built is not None and built.stale))

    # ---- requests (event loop) -----------------------------------------------------------------------
    def to_snapshot(self, byte: int) -> int:
        """Byte ``byte`` of the current text moved back to the snapshot's text (a byte inside changed text goes to
        the start of the change)."""
        snap = self.snapshot
        since = snap.seq if snap is not None else 0
        with self._lock:
            log = [c for c in self._log if c[0] > since]
        for _, start, old_end, new_end in reversed(log):
            if byte >= new_end:
                byte -= new_end - old_end
            elif byte > start:
                byte = start
        return byte

    @property
    def seq(self) -> int:
        """The change counter of the current text."""
        return self._seq

    def to_current(self, byte: int, since: int | None = None) -> int:
        """Byte ``byte`` of the text at change counter ``since`` (default: the snapshot's) moved forward to the
        current text."""
        snap = self.snapshot
        since = since if since is not None else (snap.seq if snap is not None else 0)
        with self._lock:
            log = [c for c in self._log if c[0] > since]
        return _forward(byte, log)

    def kernel_at(self, line: int, col: int, encoding: str = "utf-16") -> Kernel | None:
        """The kernel of the snapshot at the LSP position ``(line, col)`` of the *current* text, or ``None``
        (also when there is no snapshot yet). Never parses.

        Raises:
            ValueError: unknown encoding or negative position.
        """
        snap = self.snapshot
        byte = self._index.to_byte(line, col, encoding)
        if snap is None:
            return None
        byte = self.to_snapshot(byte)
        model = snap.model
        if not model.stale:
            return kernel_at_byte(model, byte)
        # a stale model's spans belong to the last text that parsed: match by line instead
        row = snap.index.line_of(byte) + 1
        inside = [k for k in model.kernels if k.start_line <= row <= k.end_line]
        return min(inside, key=lambda k: k.end_line - k.start_line, default=None)


def _forward(byte: int, log: list[tuple[int, int, int, int]]) -> int:
    """``byte`` moved forward over the changes of ``log``, oldest first."""
    for _, start, old_end, new_end in log:
        if byte >= old_end:
            byte += new_end - old_end
        elif byte > start:
            byte = start
    return byte


def _widen(window: tuple[int, int, int] | None, start: int, old_end: int, new_end: int) -> tuple[int, int, int]:
    """The pending window after one more change ``[start, old_end) -> [start, new_end)`` in current bytes.

    The window ``(ws, we_doc, we_now)`` says: the current text is the Document's text with ``[ws, we_doc)``
    replaced by the current ``[ws, we_now)``.
    """
    if window is None:
        return start, old_end, new_end
    ws, we_doc, we_now = window
    if old_end > we_now:  # the change reaches past the window into text the Document still has
        we_doc += old_end - we_now
        we_now = new_end
    else:
        we_now += (new_end - start) - (old_end - start)
    return min(ws, start), we_doc, we_now


def _feed(doc: Document, window: tuple[int, int, int] | None, data: bytes) -> bool:
    """Apply the pending ``window`` of ``data`` to ``doc`` as one incremental change; ``False`` when it cannot be
    expressed as one (then the caller re-parses from scratch)."""
    if window is None:
        return True
    ws, we_doc, we_now = window
    idx = doc.index
    if not (0 <= ws <= we_doc <= len(idx.data)):
        return False
    (l0, c0), (l1, c1) = idx.point(ws), idx.point(we_doc)
    if idx.to_byte(l0, c0, "utf-8") != ws or idx.to_byte(l1, c1, "utf-8") != we_doc:
        return False  # an end between "\r" and "\n": not a position the Document takes
    doc.apply_change(l0, c0, l1, c1, data[ws:we_now].decode("utf-8", errors="surrogatepass"), "utf-8")
    return True
