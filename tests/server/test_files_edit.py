"""One workspace edit over the kernel's document and the launcher a step rewrites: ``documentChanges`` over two
files (the launcher unversioned when it is not open), or ``changes`` for clients without them."""

from __future__ import annotations

from types import SimpleNamespace

from lsprotocol import types

from htam_core.editor import FileEdits
from htam_core.source.positions import LineIndex
from htam_core.transforms.base import TextEdit
from htam_server.convert import workspace_edit

KERNEL = "__global__ void k(int n) {}\n"
HOST = "void run(int n) {\n    k<<<(n + 255) / 256, 256>>>(n);\n}\n"


def _ls(document_changes: bool):
    we = types.WorkspaceEditClientCapabilities(document_changes=document_changes)
    caps = types.ClientCapabilities(workspace=types.WorkspaceClientCapabilities(workspace_edit=we))
    return SimpleNamespace(client_capabilities=caps, docs={},
                           workspace=SimpleNamespace(position_encoding=types.PositionEncodingKind.Utf16))


def _od():
    return SimpleNamespace(uri="file:///ws/k.cu", version=3, buf=SimpleNamespace(index=LineIndex(KERNEL.encode())))


def test_two_files_in_one_edit(tmp_path):
    host = tmp_path / "main.cpp"
    host.write_text(HOST)
    files = [FileEdits(None, (TextEdit(0, 0, "// x\n"),)), FileEdits(str(host), (TextEdit(43, 46, "512"),))]
    we = workspace_edit(_ls(True), _od(), files)
    kernel_doc, host_doc = we.document_changes
    assert kernel_doc.text_document.uri == "file:///ws/k.cu" and kernel_doc.text_document.version == 3
    assert host_doc.text_document.uri.endswith("/main.cpp") and host_doc.text_document.version is None
    (e,) = host_doc.edits
    assert (e.range.start.line, e.range.start.character, e.new_text) == (1, 25, "512")
    plain = workspace_edit(_ls(False), _od(), files)
    assert len(plain.changes) == 2 and "file:///ws/k.cu" in plain.changes
