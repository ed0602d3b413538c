"""Conversions between the engine's byte offsets and LSP positions, ranges and edits."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from htam_core.editor.buffer import Buffer
from htam_core.source import ByteSpan, Kernel
from htam_core.source.positions import LineIndex
from htam_core.transforms.base import TextEdit, apply_edits


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


def files_edit(ls, uri: str, version: int | None, edits: list[types.TextEdit], file_edits: dict[str, list[TextEdit]],
               files: dict[str, str]) -> types.WorkspaceEdit | str:
    """One workspace edit over the kernel's document (``edits``, at ``version``) and the other files a step
    rewrites (``file_edits``: path -> byte-offset edits of the file on disk, which must still give ``files[path]``):
    ``documentChanges`` with one ``TextDocumentEdit`` per file when the client supports them, else ``changes``.
    Returns a one-line reason instead when a file changed on disk since the step was made."""
    changes: list[tuple[str, int | None, list[types.TextEdit]]] = [(uri, version, edits)] if edits else []
    for path, fe in file_edits.items():
        try:
            text = Path(path).read_text(encoding="utf-8")
            same = apply_edits(text, fe) == files.get(path)
        except (OSError, ValueError):
            same = False
        if not same:
            return f"{Path(path).name} changed on disk since the step was made; ask for the actions again"
        changes.append((Path(path).resolve().as_uri(), None, text_edits(LineIndex(text.encode("utf-8")), fe,
                                                                         encoding_of(ls))))
    caps = ls.client_capabilities
    we = caps.workspace.workspace_edit if caps.workspace is not None else None
    if we is not None and we.document_changes:
        return types.WorkspaceEdit(document_changes=[
            types.TextDocumentEdit(text_document=types.OptionalVersionedTextDocumentIdentifier(uri=u, version=v),
                                   edits=e) for u, v, e in changes])
    return types.WorkspaceEdit(changes={u: e for u, _, e in changes})


def current_name_range(buf: Buffer, kernel: Kernel, encoding: str, since: int | None = None) -> types.Range:
    """Range in the *current* text of the name of ``kernel``, whose byte spans belong to the buffer's text at
    change counter ``since`` (default: its latest parse); the bytes are moved forward over the changes made since
    (:meth:`htam_core.editor.Buffer.to_current`)."""
    span = ByteSpan(buf.to_current(kernel.name_span.start, since), buf.to_current(kernel.name_span.end, since))
    return span_range(buf.index, span, encoding)
