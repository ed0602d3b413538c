"""Conversions between the engine's byte offsets and LSP positions, ranges and edits."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path

from htam_core.editor import FileEdits
from htam_core.editor.buffer import Buffer
from htam_core.source import ByteSpan, Kernel
from htam_core.source.positions import LineIndex
from htam_core.transforms.base import TextEdit


def encoding_of(ls) -> str:
    """The negotiated position encoding (``"utf-8"``, ``"utf-16"`` or ``"utf-32"``)."""
    enc = ls.workspace.position_encoding
    return str(getattr(enc, "value", enc) or "utf-16")


def position(index: LineIndex, byte: int, encoding: str) -> types.Position:
    """LSP position of file byte ``byte``."""
    line, col = index.to_position(byte, encoding)
    return types.Position(line=line, character=col)


def span_range(index: LineIndex, span: ByteSpan, encoding: str) -> types.Range:
    """LSP range of a byte span."""
    return types.Range(start=position(index, span.start, encoding), end=position(index, span.end, encoding))


def name_range(index: LineIndex, kernel: Kernel, encoding: str) -> types.Range:
    """Range of the kernel's name (where hovers and diagnostics point)."""
    return span_range(index, kernel.name_span, encoding)


def text_edits(index: LineIndex, edits: list[TextEdit], encoding: str) -> list[types.TextEdit]:
    """LSP edits of byte-offset edits on the text ``index`` was built from."""
    return [types.TextEdit(range=span_range(index, ByteSpan(e.start_byte, e.end_byte), encoding),
                           new_text=e.new_text) for e in edits]


def document_edit(ls, uri: str, version: int | None, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
    """A workspace edit of one document: versioned ``documentChanges`` when the client supports them (the
    client then refuses an edit computed for an older version), else ``changes``."""
    return documents_edit(ls, [(uri, version, edits)])


def documents_edit(ls, docs: list[tuple[str, int | None, list[types.TextEdit]]]) -> types.WorkspaceEdit:
    """A workspace edit of several documents (``(uri, version or None, edits)`` each), as :func:`document_edit`."""
    caps = ls.client_capabilities
    we = caps.workspace.workspace_edit if caps.workspace is not None else None
    if we is not None and we.document_changes:
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version), edits=edits)
            for uri, version, edits in docs])
    return types.WorkspaceEdit(changes={uri: edits for uri, _, edits in docs})


def workspace_edit(ls, od, files: Sequence[FileEdits]) -> types.WorkspaceEdit:
    """The workspace edit of a proposal's edits (:class:`~htam_core.editor.FileEdits`): ``path=None`` edits the open
    document ``od`` (at its version); another path edits that file, as open in the editor when it is (at its
    version), else as saved on disk."""
    enc, docs = encoding_of(ls), []
    for f in files:
        if f.path is None:
            uri, version, index = od.uri, od.version, od.buf.index
        else:
            uri = from_fs_path(f.path)
            other = ls.docs.get(uri)
            version = other.version if other is not None else None
            index = other.buf.index if other is not None else LineIndex(Path(f.path).read_bytes())
        docs.append((uri, version, text_edits(index, list(f.edits), enc)))
    return documents_edit(ls, docs)


def current_name_range(buf: Buffer, kernel: Kernel, encoding: str, since: int | None = None) -> types.Range:
    """Range in the *current* text of the name of ``kernel``, whose byte spans belong to the buffer's text at
    change counter ``since`` (default: its latest parse); the bytes are moved forward over the changes made since
    (:meth:`htam_core.editor.Buffer.to_current`)."""
    span = ByteSpan(buf.to_current(kernel.name_span.start, since), buf.to_current(kernel.name_span.end, since))
    return span_range(buf.index, span, encoding)
