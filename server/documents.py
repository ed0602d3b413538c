"""Open documents: one :class:`htam_core.editor.Buffer` per open file, fed by incremental ``didChange``.

Selection: ``.cu``/``.cuh`` are CUDA, ``.py`` is Python (by the URI's suffix, else by the
``languageId``: ``cuda``/``cuda-cpp``/``cpp`` with CUDA content, ``python``). A Python file is served only when
it holds Triton kernels or CUDA in strings: a cheap substring check (``triton`` or ``__global__`` must occur,
which every such file contains) answers most other files without a parse.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from lsprotocol import types
from pygls.uris import to_fs_path

from htam_core.editor import MAX_SOURCE_BYTES, Buffer, Kernel, SourceModel, too_large

FileLanguage = Literal["cuda", "python"]
_SUFFIXES: Mapping[str, FileLanguage] = MappingProxyType({".cu": "cuda", ".cuh": "cuda", ".py": "python"})
_LANGUAGE_IDS: Mapping[str, FileLanguage] = MappingProxyType({"cuda": "cuda", "cuda-cpp": "cuda", "python": "python"})


def language_of(uri: str, language_id: str | None) -> FileLanguage | None:
    """``"cuda"``/``"python"`` for a served document, else ``None``."""
    path = uri.split("?", 1)[0].lower()
    for suffix, lang in _SUFFIXES.items():
        if path.endswith(suffix):
            return lang
    return _LANGUAGE_IDS.get((language_id or "").lower())


def too_big(name: str, text: str) -> str | None:
    """The one line why ``text`` is not served (over :data:`htam_core.source.MAX_SOURCE_BYTES`, the one size limit
    of files and documents), else ``None``. Cheap: the text is encoded only when its length is near the limit."""
    if len(text) <= MAX_SOURCE_BYTES // 4:
        return None
    return too_large(name, len(text.encode("utf-8", "surrogatepass")))


def is_binary(text: str) -> bool:
    """True for text that is not source code: it holds a NUL character, or it is over 64 KB and more than 30% of
    its characters are not ASCII. tree-sitter's error recovery over megabytes of such text takes tens of seconds on
    the event loop (found by tests/lsp/test_fuzz.py), so these documents are not tracked (every request on them gets
    an empty answer). Documents over the size limit are refused with a reason instead (:func:`too_big`)."""
    if "\x00" in text:
        return True
    n = len(text)
    return n > (64 << 10) and len(text.encode("ascii", "ignore")) < 0.7 * n


@dataclass
class OpenDocument:
    """One open file.

    Attributes:
        uri: the document URI; path: its file-system path (``None`` for untitled documents).
        version: the client's version number; language: ``"cuda"`` or ``"python"``.
        buf: the text and its latest parse (:class:`htam_core.editor.Buffer`: changes are cheap, parsing
            happens off the event loop in :meth:`Buffer.sync`).
        interest: kernels asked about recently (hover, code actions), most recent last: the analysis after a
            burst of edits re-ranks these.
    """

    uri: str
    path: str | None
    version: int
    language: FileLanguage
    buf: Buffer
    interest: dict[str, None] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """Current text."""
        return self.buf.text

    @property
    def model(self) -> SourceModel:
        """Source model of the current text (parses when changes are pending: off the event loop only; on it,
        use :attr:`snapshot_model`)."""
        return self.buf.sync().model

    @property
    def snapshot_model(self) -> SourceModel | None:
        """The model of the latest parse (maybe a few edits old), or ``None`` before the first; never parses."""
        snap = self.buf.snapshot
        return snap.model if snap is not None else None

    @property
    def stale(self) -> bool:
        """The latest parse is the last good parse of a file that no longer parses (never parses)."""
        m = self.snapshot_model
        return bool(m is not None and m.stale)

    def served(self) -> bool:
        """Whether this file gets answers (:meth:`htam_core.editor.Buffer.served`)."""
        return self.buf.served()

    def note_interest(self, kernel_name: str) -> None:
        """Remember that ``kernel_name`` was asked about (the last four are kept)."""
        self.interest.pop(kernel_name, None)
        self.interest[kernel_name] = None
        while len(self.interest) > 4:
            self.interest.pop(next(iter(self.interest)))

    def kernel_at(self, position: types.Position, encoding: str) -> Kernel | None:
        """The kernel at an LSP position (columns in ``encoding`` units) in the latest parse, or ``None``."""
        if not self.served():
            return None
        try:
            return self.buf.kernel_at(position.line, position.character, encoding)
        except ValueError:
            return None

    def kernel_named(self, name: str, model: SourceModel | None = None) -> Kernel | None:
        """The kernel whose key (:attr:`Kernel.key`: its name, or ``f64::scale`` where kernels share the name) is
        ``name`` in ``model`` (default: the latest parse), or ``None``."""
        model = model if model is not None else self.snapshot_model
        return next((k for k in model.kernels if k.key == name), None) if model is not None else None

    def on_disk(self) -> bool:
        """The editor text equals the saved file."""
        if self.path is None:
            return False
        try:
            with open(self.path, encoding="utf-8", newline="") as fh:
                return fh.read() == self.buf.text
        except (OSError, UnicodeDecodeError):
            return False


def _apply_changes(od: OpenDocument, params: types.DidChangeTextDocumentParams, encoding: str) -> None:
    """Apply ``params``' content changes to ``od``'s buffer in order, and take their version."""
    version = params.text_document.version
    for ch in params.content_changes:
        if isinstance(ch, types.TextDocumentContentChangePartial):
            r = ch.range
            od.buf.apply_change(r.start.line, r.start.character, r.end.line, r.end.character, ch.text, encoding,
                                version)
        else:
            od.buf.apply_change(None, None, None, None, ch.text, encoding, version)
    od.version = version
    od._maybe_kernels = None


class Documents:
    """The open documents by URI."""

    def __init__(self) -> None:
        self._docs: dict[str, OpenDocument] = {}
        self._refused: dict[str, str] = {}

    def refused(self, uri: str) -> str | None:
        """Why document ``uri`` is not served (one line: over the size limit), or ``None``."""
        return self._refused.get(uri)

    def get(self, uri: str) -> OpenDocument | None:
        """The open document ``uri``, or ``None`` (not open or not served)."""
        return self._docs.get(uri)

    def all(self) -> list[OpenDocument]:
        """Every open served document."""
        return list(self._docs.values())

    def open(self, item: types.TextDocumentItem) -> OpenDocument | None:
        """Start tracking a document; ``None`` when its type is not served, it is binary or it is over the size
        limit (then :meth:`refused` says why)."""
        lang = language_of(item.uri, item.language_id)
        self._refused.pop(item.uri, None)
        reason = too_big(item.uri.rsplit("/", 1)[-1], item.text) if lang is not None else None
        if reason is not None:
            self._refused[item.uri] = reason
        if lang is None or reason is not None or is_binary(item.text):
            self._docs.pop(item.uri, None)
            return None
        path = to_fs_path(item.uri) if item.uri.startswith("file:") else None
        od = OpenDocument(item.uri, path, item.version, lang, Buffer(item.text, lang, path, item.version))
        self._docs[item.uri] = od
        return od

    def change(self, params: types.DidChangeTextDocumentParams, encoding: str) -> OpenDocument | None:
        """Apply each content change in order (ranges in ``encoding`` units) to the buffer: cheap, no parse (the
        server parses after the burst, off the event loop)."""
        od = self._docs.get(params.text_document.uri)
        if od is None:
            return None
        if any(is_binary(ch.text) for ch in params.content_changes):
            self.close(od.uri)
            return None
        _apply_changes(od, params, encoding)
        reason = too_big(od.uri.rsplit("/", 1)[-1], od.text)
        if reason is not None:  # grown past the limit by edits
            self.close(od.uri)
            self._refused[od.uri] = reason
            return None
        return od

    def close(self, uri: str) -> None:
        """Stop tracking ``uri``."""
        self._docs.pop(uri, None)
        self._refused.pop(uri, None)
