"""Hover and code actions come from one ranking of one profile (for the same kernel, in the same
second, the hover recommended one step while the first code action was another, because a background profile
landed between the two requests and each request ranked on its own)."""

from __future__ import annotations

import re

from lsprotocol import types

from tests.lsp.support import _get, code_actions, copy_corpus, open_file, pos_of, start, wait_for


async def _hover_step(client, uri: str, pos: types.Position) -> tuple[str, str]:
    h = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=pos))
    md = h.contents.value
    m = re.search(r"\*\*Recommended next step:\*\* .+? → \*\*(.+?)\*\*", md)
    assert m, md
    return m.group(1), md


async def _first_action(client, uri: str, pos: types.Position) -> str:
    acts = [a for a in await code_actions(client, uri, pos) if a.kind == "refactor.rewrite.htam"]
    assert acts
    return acts[0].title.split(" → ", 1)[1].split(" · ")[0]


async def test_hover_and_code_actions_agree_across_a_profile_landing(client, tmp_path):
    await start(client, tmp_path)
    (path,) = copy_corpus(tmp_path, "softmax_rows.py")
    text = path.read_text()
    uri = open_file(client, path)
    pos = pos_of(text, "def row_softmax_kernel", offset=6)
    step, md = await _hover_step(client, uri, pos)
    # the hover published the source-only stage, ranked with it and queued the compile
    assert "static: from the source only" in md and "follow…" in md
    assert await _first_action(client, uri, pos) == step
    # the compiled profile lands (no hover in between): the list still starts with what the hover recommended
    await wait_for(lambda: any((_get(s, "lastProfile") or "").startswith("row_softmax_kernel")
                               and "source only" not in _get(s, "lastProfile") for s in client.statuses),
                   60, "the background compile")
    assert await _first_action(client, uri, pos) == step
    # the next hover shows the profile and the ranking made with it, and the list follows that hover
    new_step, md = await _hover_step(client, uri, pos)
    assert re.search(r"\| registers \| \d+/thread", md), md
    # (the recommendation is the first step that can be made; for this kernel the static profile re-ranks the
    # steps but keeps that one first, so it may equal the step before: the pin itself is tested in
    # tests/editor/test_ranking.py)
    assert await _first_action(client, uri, pos) == new_step
