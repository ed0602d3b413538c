"""Open documents: file selection, cheap incremental changes (no parse on the event loop), kernel lookup."""

from __future__ import annotations

from lsprotocol import types

from htam_server.documents import Documents, is_binary, language_of

CU = "__global__ void k(float* x) { x[0] = 1; }\n"


def _change(uri: str, version: int, line: int, col: int, text: str) -> types.DidChangeTextDocumentParams:
    pos = types.Position(line=line, character=col)
    return types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangePartial(range=types.Range(start=pos, end=pos), text=text)])


def test_language_and_binary_selection():
    assert language_of("file:///a/k.cu", None) == "cuda" and language_of("file:///a/k.py", "plaintext") == "python"
    assert language_of("untitled:1", "cuda-cpp") == "cuda" and language_of("file:///a/k.txt", "text") is None
    assert is_binary("a\x00b") and not is_binary(CU)


def test_changes_are_applied_without_parsing_then_one_sync():
    docs = Documents()
    od = docs.open(types.TextDocumentItem(uri="file:///w/k.cu", language_id="cuda", version=1, text=CU))
    assert od is not None and od.snapshot_model is None
    od.buf.sync()
    for i in range(20):
        docs.change(_change(od.uri, 2 + i, 0, 0, "\n"), "utf-16")
    assert od.version == 21 and od.text == "\n" * 20 + CU
    assert od.buf.pending and od.snapshot_model.text == CU  # nothing parsed on the change path
    k = od.kernel_at(types.Position(line=20, character=17), "utf-16")
    assert k is not None and k.name == "k"  # found in the last parse through the pending changes
    assert od.model.text == od.text and not od.buf.pending


def test_python_without_kernels_is_not_served_and_binary_changes_close():
    docs = Documents()
    od = docs.open(types.TextDocumentItem(uri="file:///w/plain.py", language_id="python", version=1,
                                          text="print('hello')\n"))
    assert od is not None and not od.served()
    docs.change(_change(od.uri, 2, 0, 0, "\x00"), "utf-16")
    assert docs.get(od.uri) is None


def test_document_over_the_size_limit_is_refused_with_a_reason_and_the_hover_says_it():
    import asyncio
    from types import SimpleNamespace

    from htam_core.source import MAX_SOURCE_BYTES
    from htam_server import hover

    docs = Documents()
    big = CU * (MAX_SOURCE_BYTES // len(CU) + 1)
    uri = "file:///w/huge.cu"
    assert docs.open(types.TextDocumentItem(uri=uri, language_id="cuda", version=1, text=big)) is None
    reason = docs.refused(uri)
    assert reason is not None and reason.startswith("huge.cu is 1.0 MB") and "\n" not in reason
    params = types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri),
                               position=types.Position(line=0, character=17))
    got = asyncio.run(hover.hover(SimpleNamespace(docs=docs), params))
    assert got is not None and got.contents.value == reason
    # a served document grown past the limit by an edit is dropped with the same reason
    od = docs.open(types.TextDocumentItem(uri="file:///w/k.cu", language_id="cuda", version=1, text=CU))
    assert od is not None and docs.refused(od.uri) is None
    assert docs.change(_change(od.uri, 2, 0, 0, big), "utf-16") is None
    assert docs.get(od.uri) is None and (docs.refused(od.uri) or "").startswith("k.cu is")
    docs.close(od.uri)
    assert docs.refused(od.uri) is None
