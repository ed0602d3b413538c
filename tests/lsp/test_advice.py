"""Offer only what can be made, through a real client: a strategy with no mechanical transform
is advice in the hover (with how to apply it) and never a code action with the rules engine; a step whose
transform refuses the kernel is not listed; every listed action resolves to an edit. With the LLM engine
configured, the advice is a code action too (the model writes it)."""

from __future__ import annotations

import re

from lsprotocol import types

from htam_core.memory import load_knowledge
from tests.lsp.support import code_actions, copy_corpus, edits_of, open_file, pos_of, start

KB = load_knowledge()


async def _hover(client, uri: str, pos: types.Position) -> str:
    h = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=pos))
    return h.contents.value


def _advice_titles(md: str) -> list[str]:
    if "**Advice**" not in md:
        return []
    return re.findall(r"^- .+? → \*\*(.+?)\*\* · expected", md.split("**Advice**", 1)[1], re.MULTILINE)


def _titles(acts: list[types.CodeAction]) -> list[str]:
    return [a.title.split(" → ", 1)[1].split(" · ")[0] for a in acts if a.kind == "refactor.rewrite.htam"]


async def _open_sgemm(client, tmp_path, **options) -> tuple[str, types.Position, str]:
    """Start with ``options``, open the naive SGEMM and hover it: ``(uri, position, hover Markdown)``."""
    await start(client, tmp_path, options={"topN": 6, **options})
    (path,) = copy_corpus(tmp_path, "sgemm_naive.cu")
    uri = open_file(client, path)
    pos = pos_of(path.read_text(), "sgemm_naive(", offset=2)
    return uri, pos, await _hover(client, uri, pos)


async def test_advice_is_in_the_hover_not_in_the_code_actions(client, tmp_path):
    uri, pos, md = await _open_sgemm(client, tmp_path)
    advice = _advice_titles(md)
    assert advice, md
    no_transform = {s.title for s in KB.strategies if not s.transform}
    assert set(advice) <= no_transform, advice
    assert "How: " in md.split("**Advice**", 1)[1]  # each advice says how to apply it by hand
    acts = [a for a in await code_actions(client, uri, pos) if a.kind == "refactor.rewrite.htam"]
    titles = _titles(acts)
    assert titles and not set(titles) & no_transform, titles
    # the hover's recommendation is the first code action
    rec = re.search(r"\*\*Recommended next step:\*\* .+? → \*\*(.+?)\*\*", md)
    assert rec and rec.group(1) == titles[0], (md, titles)
    # vectorized loads refuse this kernel (its B and C accesses are strided along x): not listed
    assert "vectorize loads (float4)" not in titles
    for a in acts:  # every listed action resolves to an edit, none fails on click
        res = await client.code_action_resolve_async(a)
        assert res.edit is not None and edits_of(res.edit, uri), a.title
    assert not [m for m in client.messages if "cannot make" in m.message]


async def test_with_the_llm_engine_the_advice_is_a_code_action(client, tmp_path):
    uri, pos, md = await _open_sgemm(client, tmp_path, engine="llm")
    advice = _advice_titles(md)
    assert advice and "asks the LLM to write it" in md, md
    titles = _titles(await code_actions(client, uri, pos))
    assert set(advice) <= set(titles), (advice, titles)
