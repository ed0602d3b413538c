"""One workspace edit over the kernel's document and the launcher a step rewrites (``documentChanges`` over two
files, or ``changes`` for clients without them), refused when the launcher changed on disk."""

from __future__ import annotations

from types import SimpleNamespace

from lsprotocol import types

from htam_core.transforms.base import TextEdit, apply_edits
from htam_server.convert import files_edit


def _ls(document_changes: bool):
    we = types.WorkspaceEditClientCapabilities(document_changes=document_changes)
    caps = types.ClientCapabilities(workspace=types.WorkspaceClientCapabilities(workspace_edit=we))
    return SimpleNamespace(client_capabilities=caps,
                           workspace=SimpleNamespace(position_encoding=types.PositionEncodingKind.Utf16))


def test_two_files_in_one_edit(tmp_path):
    host = tmp_path / "main.cpp"
    host.write_text("void run(int n) {\n    k<<<(n + 255) / 256, 256>>>(n);\n}\n")
    fe = [TextEdit(43, 46, "512")]
    new = apply_edits(host.read_text(), fe)
    own = [types.TextEdit(range=types.Range(start=types.Position(line=0, character=0),
                                            end=types.Position(line=0, character=0)), new_text="// x\n")]
    we = files_edit(_ls(True), "file:///k.cu", 3, own, {str(host): fe}, {str(host): new})
    assert isinstance(we, types.WorkspaceEdit) and len(we.document_changes) == 2
    kernel_doc, host_doc = we.document_changes
    assert kernel_doc.text_document.uri == "file:///k.cu" and kernel_doc.text_document.version == 3
    assert host_doc.text_document.uri == host.resolve().as_uri() and host_doc.text_document.version is None
    (e,) = host_doc.edits
    assert (e.range.start.line, e.range.start.character, e.new_text) == (1, 25, "512")
    plain = files_edit(_ls(False), "file:///k.cu", 3, own, {str(host): fe}, {str(host): new})
    assert set(plain.changes) == {"file:///k.cu", host.resolve().as_uri()}


def test_a_launcher_changed_on_disk_is_refused(tmp_path):
    host = tmp_path / "main.cpp"
    host.write_text("void run(int n) {\n    k<<<(n + 255) / 256, 256>>>(n);\n}\n")
    fe = [TextEdit(43, 46, "512")]
    new = apply_edits(host.read_text(), fe)
    host.write_text("// edited meanwhile\n" + host.read_text())
    why = files_edit(_ls(True), "file:///k.cu", 3, [], {str(host): fe}, {str(host): new})
    assert why == "main.cpp changed on disk since the step was made; ask for the actions again"
