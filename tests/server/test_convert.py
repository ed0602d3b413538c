"""A proposal's edits by file become one workspace edit: the open document at its version, another file as open in
the editor or as saved on disk, with positions in the negotiated encoding."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from lsprotocol import types
from pygls.uris import from_fs_path

from htam_core.editor import FileEdits, TextEdit
from htam_server.convert import workspace_edit
from htam_server.documents import Documents

KERNEL = "__global__ void k(float* x) { x[0] = 1.0f; }\n"
LAUNCH = "// héllo\nvoid launch(float* x) { k<<<1, 1>>>(x); }\n"


def _ls(docs: Documents, document_changes: bool) -> SimpleNamespace:
    caps = types.ClientCapabilities(workspace=types.WorkspaceClientCapabilities(
        workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=document_changes)))
    return SimpleNamespace(docs=docs, client_capabilities=caps,
                           workspace=SimpleNamespace(position_encoding=types.PositionEncodingKind.Utf16))


def test_edits_of_two_files_make_one_workspace_edit(tmp_path: Path) -> None:
    kpath, lpath = tmp_path / "k.cu", tmp_path / "launch.cu"
    kpath.write_text(KERNEL)
    lpath.write_text(LAUNCH)
    docs = Documents()
    od = docs.open(types.TextDocumentItem(uri=from_fs_path(str(kpath)), language_id="cuda", version=7, text=KERNEL))
    assert od is not None
    at = LAUNCH.encode().index(b"<<<1, 1>>>")
    files = [FileEdits(None, (TextEdit(11, 15, "void "),)),
             FileEdits(str(lpath), (TextEdit(at, at + len(b"<<<1, 1>>>"), "<<<2, 32>>>"),))]
    we = workspace_edit(_ls(docs, True), od, files)
    kernel_edit, launch_edit = we.document_changes
    assert (kernel_edit.text_document.uri, kernel_edit.text_document.version) == (od.uri, 7)
    assert (launch_edit.text_document.uri, launch_edit.text_document.version) == (from_fs_path(str(lpath)), None)
    r = launch_edit.edits[0].range  # line 1, after "void launch(float* x) { k": the é on line 0 does not shift it
    assert (r.start.line, r.start.character, r.end.character) == (1, 25, 35)
    assert kernel_edit.edits[0].range.start == types.Position(line=0, character=11)
    # a client without documentChanges gets the same edits by URI
    plain = workspace_edit(_ls(docs, False), od, files)
    assert set(plain.changes) == {od.uri, from_fs_path(str(lpath))} and plain.document_changes is None


def test_another_file_open_in_the_editor_is_edited_at_its_version(tmp_path: Path) -> None:
    kpath, lpath = tmp_path / "k.cu", tmp_path / "launch.cu"
    lpath.write_text("stale text on disk\n")
    docs = Documents()
    od = docs.open(types.TextDocumentItem(uri=from_fs_path(str(kpath)), language_id="cuda", version=1, text=KERNEL))
    docs.open(types.TextDocumentItem(uri=from_fs_path(str(lpath)), language_id="cuda", version=3, text=LAUNCH))
    end = len(LAUNCH.encode())
    we = workspace_edit(_ls(docs, True), od, [FileEdits(str(lpath), (TextEdit(end, end, "// more\n"),))])
    (edit,) = we.document_changes
    assert edit.text_document.version == 3 and edit.edits[0].range.start == types.Position(line=2, character=0)
