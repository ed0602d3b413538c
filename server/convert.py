"""Conversions between the engine's byte offsets and LSP positions, ranges and edits, and what the client
supports of them."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import from_fs_path

from htam_core.editor import Buffer, ByteSpan, FileEdits, Kernel, LineIndex, TextEdit

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

    from htam_server.documents import OpenDocument
    from htam_server.server import HtamLanguageServer


def encoding_of(ls: LanguageServer) -> str:
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


def document_edit(ls: LanguageServer, uri: str, version: int | None, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
    """A workspace edit of one document: versioned ``documentChanges`` when the client supports them (the
    client then refuses an edit computed for an older version), else ``changes``."""
    return documents_edit(ls, [(uri, version, edits)])


def documents_edit(ls: LanguageServer, docs: list[tuple[str, int | None, list[types.TextEdit]]]) -> types.WorkspaceEdit:
    """A workspace edit of several documents (``(uri, version or None, edits)`` each), as :func:`document_edit`."""
    caps = ls.client_capabilities
    we = caps.workspace.workspace_edit if caps.workspace is not None else None
    if we is not None and we.document_changes:
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version), edits=edits)
            for uri, version, edits in docs])
    return types.WorkspaceEdit(changes={uri: edits for uri, _, edits in docs})


def workspace_edit(ls: HtamLanguageServer, od: OpenDocument, files: Sequence[FileEdits]) -> types.WorkspaceEdit:
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


def supports_create(ls: LanguageServer) -> bool:
    """The client applies a ``CreateFile`` inside ``documentChanges``."""
    ws = ls.client_capabilities.workspace
    we = ws.workspace_edit if ws is not None else None
    # a client that lists the "create" resource operation applies CreateFile inside documentChanges, even when
    # it does not also set documentChanges itself (Neovim 0.11 advertises resourceOperations only)
    return bool(we is not None and we.resource_operations
                and types.ResourceOperationKind.Create in we.resource_operations)


def supports_resolve(ls: LanguageServer) -> bool:
    """The client resolves a code action's ``edit`` lazily (``codeAction/resolve``)."""
    td = ls.client_capabilities.text_document
    ca = td.code_action if td is not None else None
    rs = ca.resolve_support if ca is not None else None
    return bool(rs is not None and "edit" in rs.properties)


def _end_of(existing: str, encoding: str) -> types.Position:
    data = existing.encode("utf-8")
    return position(LineIndex(data), len(data), encoding)


def append_edit(ls: LanguageServer, target: str, text: str) -> types.WorkspaceEdit:
    """A workspace edit that appends ``text`` to the file ``target`` (created when missing); existing text is
    kept."""
    uri, ident = from_fs_path(target), types.OptionalVersionedTextDocumentIdentifier(uri=from_fs_path(target),
                                                                                      version=None)
    if not os.path.exists(target):
        start = types.Position(line=0, character=0)
        return types.WorkspaceEdit(document_changes=[
            types.CreateFile(uri=uri, options=types.CreateFileOptions(ignore_if_exists=True)),
            types.TextDocumentEdit(text_document=ident, edits=[types.TextEdit(range=types.Range(start=start, end=start),
                                                                              new_text=text)])])
    existing = Path(target).read_text(encoding="utf-8", errors="replace")
    pos = _end_of(existing, encoding_of(ls))
    prefix = "" if existing.endswith("\n") or not existing else "\n"
    edit = types.TextEdit(range=types.Range(start=pos, end=pos), new_text=prefix + "\n" + text)
    if not supports_create(ls):
        return types.WorkspaceEdit(changes={uri: [edit]})
    return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=ident, edits=[edit])])
