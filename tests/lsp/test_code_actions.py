"""Code actions on a kernel: ranked steps with lazy edits in ``codeAction/resolve``, the harness action, and a
clear message (never a broken edit) for a step that cannot be made."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types

from htam_core.source import parse_text
from tests.lsp.support import (
    apply_text_edits,
    code_actions,
    copy_corpus,
    edits_of,
    open_file,
    pos_of,
    start,
    wait_for,
)

TITLE_RE = r"^HTAM \d+ · .+ → .+ · (prior|[+-]\d+% \(\d+/\d+\))"


async def test_ranked_actions_resolve_lazily(client, tmp_path):
    await start(client, tmp_path, options={"topN": 4})
    (path,) = copy_corpus(tmp_path, "transpose_naive.cu")
    text = path.read_text()
    uri = open_file(client, path)
    pos = pos_of(text, "transpose_naive(", offset=2)
    acts = await code_actions(client, uri, pos)
    steps = [a for a in acts if a.kind == "refactor.rewrite.htam"]
    assert 0 < len(steps) <= 4  # topN from the settings; only steps that can be made on this kernel are listed
    import re

    for i, a in enumerate(steps, 1):
        assert re.match(TITLE_RE, a.title), a.title
        assert a.title.startswith(f"HTAM {i} · ")
        assert a.edit is None  # computed lazily
        assert a.command is not None and a.command.command == "htam.recordApplied"
    assert steps[0].title.endswith("· prior")  # empty memory: no statistics yet
    # the harness action: a .cu with main() has an inferred harness, so no template is offered; once the finder
    # answered, the inferred harness may be saved
    assert not [a for a in acts if a.title == "Create a profiling harness for this kernel"]
    save = []
    for _ in range(200):
        again = await code_actions(client, uri, pos)
        assert not [a for a in again if a.title == "Create a profiling harness for this kernel"]
        save = [a for a in again if a.kind == "refactor.rewrite.htam.harness"]
        if save:
            break
        await asyncio.sleep(0.05)
    assert [a.title for a in save] == ["Save the inferred harness to htam.toml"]

    top = next(a for a in steps if "transpose through a shared tile" in a.title)
    resolved = await client.code_action_resolve_async(top)
    assert resolved.edit is not None
    edits = edits_of(resolved.edit, uri)
    assert edits
    new = apply_text_edits(text, edits)
    assert "__shared__" in new
    model = parse_text(new, "cuda")
    assert any(k.name == "transpose_naive" and not k.incomplete for k in model.kernels)
    # the record command now knows the kernel's content before the edit
    assert resolved.command.arguments[0]["beforeHash"]

    # a step the rules engine cannot make here (the coalescing remap refuses a transpose, whose other side stays
    # strided) is not listed; an action for it (a client that kept an old list) gets a message with the
    # refusal, and no edit and no command
    assert not [a for a in steps if "map threadIdx.x to the contiguous index" in a.title]
    manual = types.CodeAction(title="HTAM 9 · Memory Access → map threadIdx.x to the contiguous index · prior",
                              kind=steps[0].kind, data={**steps[0].data, "step": "coalesce_thread_mapping"},
                              command=steps[0].command)
    res = await client.code_action_resolve_async(manual)
    assert res.edit is None and res.command is None
    msg = await wait_for(lambda: [m for m in client.messages if "does not apply to transpose_naive" in m.message
                                  or "no mechanical transform" in m.message], 10,
                         "a showMessage with the reason the step cannot be made")
    assert msg[0].type == types.MessageType.Warning


@pytest.mark.parametrize("document_changes", [True, False])
async def test_harness_action_when_none_exists(client, tmp_path, document_changes):
    # False: Neovim 0.11 lists the "create" resource operation without setting documentChanges (regression)
    await start(client, tmp_path, document_changes=document_changes)
    path = tmp_path / "scale.cu"
    text = "__global__ void scale(float* x, float a, int n) {\n" \
           "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) x[i] = a * x[i];\n}\n"
    path.write_text(text)
    uri = open_file(client, path)
    # the finder runs in a helper process: the action appears once it has answered
    harness = []
    for _ in range(200):
        acts = await code_actions(client, uri, pos_of(text, "scale("))
        harness = [a for a in acts if a.kind == "refactor.rewrite.htam.harness"]
        if harness:
            break
        await asyncio.sleep(0.05)
    assert [a.title for a in harness] == ["Create a profiling harness for this kernel"]
    res = await client.code_action_resolve_async(harness[0])
    changes = res.edit.document_changes
    assert isinstance(changes[0], types.CreateFile) and changes[0].uri.endswith("/htam.toml")
    body = changes[1].edits[0].new_text
    assert "[kernel.scale]" in body and 'reference = ""' in body

    # only= filters by kind
    only = await code_actions(client, uri, pos_of(text, "scale("), only=["refactor.rewrite.htam.harness"])
    assert [a.kind for a in only] == ["refactor.rewrite.htam.harness"]
    none = await code_actions(client, uri, pos_of(text, "scale("), only=["quickfix"])
    assert none == []


async def test_stale_resolve_after_edit_gives_no_edit(client, tmp_path):
    await start(client, tmp_path)
    (path,) = copy_corpus(tmp_path, "transpose_naive.cu")
    text = path.read_text()
    uri = open_file(client, path)
    acts = await code_actions(client, uri, pos_of(text, "transpose_naive(", offset=2))
    top = next(a for a in acts if "const __restrict__" in a.title)
    # the kernel is deleted before the action is resolved
    start_pos, end_pos = pos_of(text, "__global__ void transpose_naive"), pos_of(text, "static float time_kernel")
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=start_pos, end=end_pos), text="")]))
    res = await client.code_action_resolve_async(top)
    assert res.edit is None and res.command is None
    await wait_for(lambda: [m for m in client.messages if "no longer in the file" in m.message], 10)


async def test_save_inferred_harness_appends_a_new_table_and_hover_says_where_it_came_from(client, tmp_path):
    """An inferred harness (a .cu main()): the hover names its origin; the action appends a new [kernel.<name>]
    table to an htam.toml that holds other tables, keeping them; once saved the hover says htam.toml and the
    action is no longer offered."""
    from tests.lsp.support import hover_until

    await start(client, tmp_path)
    (path,) = copy_corpus(tmp_path, "transpose_naive.cu")
    spec = tmp_path / "htam.toml"
    other = '[kernel.other]\nversion = 1\nlauncher = "f"\ninputs = []\nreference = "0"\n'
    spec.write_text(other)
    text = path.read_text()
    uri = open_file(client, path)
    pos = pos_of(text, "transpose_naive(", offset=2)
    md = await hover_until(client, uri, pos, "**Harness:** inferred from main() of transpose_naive.cu")
    assert "oracle: the starting kernel" in md
    save = []
    for _ in range(200):
        save = [a for a in await code_actions(client, uri, pos) if a.kind == "refactor.rewrite.htam.harness"]
        if save:
            break
        await asyncio.sleep(0.05)
    assert [a.title for a in save] == ["Save the inferred harness to htam.toml"]
    res = await client.code_action_resolve_async(save[0])
    spec_uri = res.edit.document_changes[0].text_document.uri
    assert spec_uri.endswith("/htam.toml")
    new = apply_text_edits(other, res.edit.document_changes[0].edits)
    assert new.startswith(other)  # the existing table is kept as it was
    import tomllib

    tables = tomllib.loads(new)["kernel"]
    assert set(tables) == {"other", "transpose_naive"} and tables["transpose_naive"]["grid"]
    assert tables["transpose_naive"]["oracle"] is True
    spec.write_text(new)  # the client applied the edit and saved
    await hover_until(client, uri, pos, "**Harness:** htam.toml")
    after = await code_actions(client, uri, pos)
    assert not [a for a in after if a.kind == "refactor.rewrite.htam.harness"]
