"""A half-typed file: answers stay sensible while the user types, and nothing produces a broken edit."""

from __future__ import annotations

from lsprotocol import types

from tests.lsp.support import code_actions, open_file, pos_of, start, wait_for
from tests.support.half_typed import TRITON_COMPLETE

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
    # one diagnostic where the text breaks (line 3, 0-based 2), not at the kernel's first line
    diags = await wait_for(lambda: [d for d in client.diagnostics.get(uri, []) if d.code == "does-not-parse"], 10,
                           "the does-not-parse diagnostic")
    assert diags[0].range.start.line == 2 and "scale is incomplete (it does not parse at line 3" in diags[0].message
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
    await wait_for(lambda: not [d for d in client.diagnostics.get(uri, []) if d.code == "does-not-parse"], 10,
                   "the does-not-parse diagnostic to go once the kernel parses")


async def test_python_syntax_error_keeps_the_kernel_in_place(client, tmp_path):
    """An unclosed bracket at the top collapses the Python tree; the kernel is recovered from the
    current text (one line down) and keeps its hover, never an error."""
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
    _insert(client, uri, 2, 0, "x = foo(\n")
    shifted = types.Position(line=pos.line + 1, character=pos.character)
    h = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=shifted))
    assert h is not None and f"`{name}`" in h.contents.value and "incomplete" not in h.contents.value


def _insert(client, uri: str, version: int, line: int, text: str) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=line, character=0),
                              end=types.Position(line=line, character=0)), text=text)]))


TWO_CUDA = COMPLETE + "\n" + COMPLETE.replace("scale", "shift").replace("a * x[i]", "x[i] + a")
# their launches: code actions are listed only for steps that can be made, and most CUDA steps need a launch site
TWO_CUDA += ("\nvoid run(float* x, float a, int n) {\n    scale<<<(n + 255) / 256, 256>>>(x, a, n);\n"
             "    shift<<<(n + 255) / 256, 256>>>(x, a, n);\n}\n")
async def _complete_kernels_survive(client, tmp_path, fname: str, text: str, names: list[str], line: int,
                                    half: str) -> None:
    """Open ``text``, type ``half`` before 0-based ``line``: every kernel in ``names`` keeps its hover
    (not incomplete) and its code actions, and ``htam.profile`` answers with a profile for each."""
    await start(client, tmp_path)
    path = tmp_path / fname
    path.write_text(text)
    uri = open_file(client, path)
    _insert(client, uri, 2, line, half)
    new_text = "\n".join(text.split("\n")[:line]) + "\n" + half + "\n".join(text.split("\n")[line:])
    for name in names:
        pos = pos_of(new_text, f" {name}(", offset=1)
        h = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=pos))
        assert h is not None and f"`{name}`" in h.contents.value, name
        assert "incomplete" not in h.contents.value and "does not parse" not in h.contents.value, name
        acts = await code_actions(client, uri, pos)
        assert [a for a in acts if a.kind == "refactor.rewrite.htam"], f"no code actions on {name}"
    res = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="htam.profile", arguments=[{"uri": uri}]))
    assert isinstance(res, dict) and "profiles" in res, res
    got = {p["kernel"]: p for p in res["profiles"]}
    for name in names:
        assert name in got, (name, res)
        assert got[name]["mode"] == "static" and got[name]["error"] is None, got[name]


async def test_half_typed_cuda_between_kernels_hides_nothing(client, tmp_path):
    from htam_core.profile.static_cuda import find_nvcc

    if find_nvcc() is None:
        import pytest

        pytest.skip("needs nvcc")
    await _complete_kernels_survive(client, tmp_path, "two.cu", TWO_CUDA, ["scale", "shift"], 5,
                                    "__global__ void half(float* y,\n")


async def test_half_typed_triton_def_between_kernels_hides_nothing(client, tmp_path):
    import pytest

    pytest.importorskip("triton")
    await _complete_kernels_survive(client, tmp_path, "two.py", TRITON_COMPLETE, ["first", "second"], 9,
                                    "@triton.jit\ndef half(x_ptr,\n")
