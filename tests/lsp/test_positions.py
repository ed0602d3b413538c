"""UTF-16 against UTF-8 positions: an emoji comment before the kernel on the same line moves its columns
differently in each encoding, and the server answers in the negotiated one."""

from __future__ import annotations

import pytest
from lsprotocol import types

from tests.lsp.support import code_actions, open_file, pos_of, start

SOURCE = (
    "// vector scale\n"
    "/* 🚀🚀 fast ünïcode */ __global__ void scale(float* x, float a, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;  // é\n"
    "    if (i < n) x[i] = a * x[i];\n"
    "}\n"
    # its launch: code actions are listed only for steps that can be made, and most need a launch site
    "void run(float* x, float a, int n) { scale<<<(n + 255) / 256, 256>>>(x, a, n); }\n"
)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8"])
async def test_positions_follow_negotiated_encoding(client, tmp_path, encoding):
    await start(client, tmp_path, encoding=encoding)
    assert client.init_result.capabilities.position_encoding == encoding
    path = tmp_path / "scale.cu"
    path.write_text(SOURCE, encoding="utf-8")
    uri = open_file(client, path)
    name = pos_of(SOURCE, "scale(", encoding)
    other = pos_of(SOURCE, "scale(", "utf-8" if encoding == "utf-16" else "utf-16")
    assert name.character != other.character
    h = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=name))
    assert h is not None and "`scale`" in h.contents.value
    assert h.range.start == name
    assert h.range.end.character == name.character + len("scale")
    # inside the comment, before the kernel: nothing (the column means the emoji in this encoding)
    emoji = pos_of(SOURCE, "🚀", encoding, offset=1)
    h2 = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=emoji))
    assert h2 is None
    assert await code_actions(client, uri, name)

    # an incremental edit after the emoji, in the negotiated encoding: rename the parameter a -> alpha
    a_pos = pos_of(SOURCE, "float a,", encoding, offset=6)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=a_pos, end=types.Position(line=a_pos.line, character=a_pos.character + 1)),
            text="alpha")]))
    h3 = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=name))
    assert h3 is not None and h3.range.start == name
