"""Files that are not kernels get empty answers, fast."""

from __future__ import annotations

import time

from lsprotocol import types

from tests.lsp.support import code_actions, copy_corpus, open_file, pos_of, start


async def test_python_without_kernels_is_ignored(client, tmp_path):
    await start(client, tmp_path)
    path = tmp_path / "util.py"
    text = "\n".join(f"def f{i}(x):\n    return x * {i}\n" for i in range(1500))
    path.write_text(text)
    uri = open_file(client, path)
    pos = types.Position(line=1, character=8)
    t0 = time.monotonic()
    for _ in range(20):
        h = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=pos))
        assert h is None
        assert await code_actions(client, uri, pos) == []
    # a hang guard, not a performance claim (latency is measured in bench/bench_lsp.py)
    assert time.monotonic() - t0 < 30, "40 requests on a non-kernel file took over 30 s"


async def test_other_file_types_are_ignored(client, tmp_path):
    await start(client, tmp_path)
    path = tmp_path / "notes.md"
    path.write_text("__global__ void k() {}\n")
    uri = open_file(client, path)
    h = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=0, character=17)))
    assert h is None
    assert await code_actions(client, uri, types.Position(line=0, character=17)) == []


async def test_python_with_triton_kernel_is_served(client, tmp_path):
    await start(client, tmp_path)
    (path,) = copy_corpus(tmp_path, "vector_add_small_block.py")
    text = path.read_text()
    uri = open_file(client, path)
    name = text[text.index("@triton.jit"):].split("def ", 1)[1].split("(", 1)[0]
    h = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=pos_of(text, f"def {name}(", offset=5)))
    assert h is not None and f"`{name}`" in h.contents.value and "Triton kernel" in h.contents.value


async def test_huge_garbage_text_is_not_parsed_and_the_hover_says_why(client, tmp_path):
    """Regression (fuzz): 3 MB of garbage text without a NUL blocked the event loop for tens of seconds while
    tree-sitter recovered from errors; documents over MAX_SOURCE_BYTES are not tracked, and the hover (once
    silent) says so in one line."""
    await start(client, tmp_path)
    path = tmp_path / "huge.cu"
    text = "&S\ufffdM\n" * (3 << 18)
    path.write_text(text)
    uri = open_file(client, path)
    t0 = time.monotonic()
    h = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=0, character=1)))
    assert h is not None and h.contents.value.startswith("huge.cu is ") and "htam reads source files of up to 1 MB" \
        in h.contents.value and "\n" not in h.contents.value
    assert await code_actions(client, uri, types.Position(line=0, character=1)) == []
    assert time.monotonic() - t0 < 30, "the server blocked on a huge document"
