"""Conversions between the engine's byte offsets and LSP positions, ranges and edits."""

from __future__ import annotations

from lsprotocol import types

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
    caps = ls.client_capabilities
    we = caps.workspace.workspace_edit if caps.workspace is not None else None
    if we is not None and we.document_changes:
        ident = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=ident, edits=edits)])
    return types.WorkspaceEdit(changes={uri: edits})


def current_name_range(buf: Buffer, kernel: Kernel, encoding: str, since: int | None = None) -> types.Range:
    """Range in the *current* text of the name of ``kernel``, whose byte spans belong to the buffer's text at
    change counter ``since`` (default: its latest parse); the bytes are moved forward over the changes made since
    (:meth:`htam_core.editor.Buffer.to_current`)."""
    span = ByteSpan(buf.to_current(kernel.name_span.start, since), buf.to_current(kernel.name_span.end, since))
    return span_range(buf.index, span, encoding)
