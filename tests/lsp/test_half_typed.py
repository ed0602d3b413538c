"""A half-typed file: answers stay sensible while the user types, and nothing produces a broken edit."""

from __future__ import annotations

from lsprotocol import types

from tests.lsp.support import code_actions, open_file, pos_of, start, wait_for

COMPLETE = (
    "__global__ void scale(float* x, float a, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) x[i] = a * x[i];\n"
    "}\n"
)


async def test_half_typed_kernel(client, tmp_path):
    await start(client, tmp_path)
    path = tmp_path / "scale.cu"
    half = COMPLETE[: COMPLETE.index("if (i < n)") + len("if (i < n) x[i] = a *")]
    path.write_text(half)
    uri = open_file(client, path)
    pos = pos_of(half, "scale(")
    h = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=pos))
    assert h is not None and "`scale`" in h.contents.value
    assert "incomplete" in h.contents.value
    acts = await code_actions(client, uri, pos)
    steps = [a for a in acts if a.kind == "refactor.rewrite.htam"]
    for a in steps:
        res = await client.code_action_resolve_async(a)
        assert res.edit is None and res.command is None
    if steps:
        await wait_for(lambda: [m for m in client.messages if "incomplete" in m.message], 10)

    # keep typing until the kernel is complete: incremental changes, then a normal hover
    rest = COMPLETE[len(half):]
    end = pos_of(half + "\0", "\0")
    line, col = end.line, end.character
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=line, character=col),
                              end=types.Position(line=line, character=col)), text=rest)]))
    h = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=pos))
    assert h is not None and "incomplete" not in h.contents.value


async def test_python_syntax_error_keeps_last_good_model(client, tmp_path):
    await start(client, tmp_path)
    from tests.lsp.support import copy_corpus

    (path,) = copy_corpus(tmp_path, "vector_add_small_block.py")
    text = path.read_text()
    uri = open_file(client, path)
    name = text[text.index("@triton.jit"):].split("def ", 1)[1].split("(", 1)[0]
    pos = pos_of(text, f"def {name}(", offset=5)
    assert (await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=pos))) is not None
    # an unclosed bracket at the top of the file
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
            text="x = foo(\n")]))
    shifted = types.Position(line=pos.line + 1, character=pos.character)
    h = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=shifted))
    # either the kernel (from the last good parse, said so) or nothing; never an error
    if h is not None:
        assert "does not parse" in h.contents.value or "incomplete" in h.contents.value
    acts = await code_actions(client, uri, shifted)
    for a in [a for a in acts if a.kind == "refactor.rewrite.htam"][:2]:
        res = await client.code_action_resolve_async(a)
        assert res.edit is None
