"""Hover over a kernel: never blocks on a compile (the first hover shows the source-only stage), then shows the
compiled profile, with the recommended next step."""

from __future__ import annotations

import time

from lsprotocol import types

from tests.lsp.support import copy_corpus, hover_until, open_file, pos_of, start


async def test_hover_starts_background_profile_then_shows_it(client, tmp_path):
    await start(client, tmp_path)
    (path,) = copy_corpus(tmp_path, "transpose_naive.cu")
    text = path.read_text()
    uri = open_file(client, path)
    pos = pos_of(text, "transpose_naive(", offset=3)
    t0 = time.monotonic()
    first = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=pos))
    elapsed = time.monotonic() - t0
    assert first is not None
    md = first.contents.value
    assert "`transpose_naive`" in md
    # stage 1 (source only, no compile), published by the first hover (tests/lsp/test_first_profile.py holds the
    # compile to show it comes first); the compile runs in the background
    assert "static: from the source only, not compiled yet" in md
    assert "compile (registers, spills, occupancy) follow…" in md
    assert elapsed < 2.0, f"hover took {elapsed:.2f} s"
    assert "**Recommended next step:**" in md
    # the range is the kernel's name
    assert first.range is not None and first.range.start.line == pos.line

    # then stage 2 (the compile's registers, spills, occupancy)
    md = await hover_until(client, uri, pos, "static: compiled only, no GPU measurement")
    assert "follow" not in md.split("\n\n")[1]
    assert "bottleneck | **memory-bound**" in md
    assert "registers | " in md and "spills 0 B" in md
    assert "Evidence:" in md and "Why:" in md
    assert "transpose through a shared tile" in md  # the top-ranked strategy for this kernel
    assert "time | not measured" in md

    # editing the kernel makes the profile stale (and says so) without re-profiling on every keystroke
    line = pos.line + 2  # inside the body of transpose_naive
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=line, character=0),
                              end=types.Position(line=line, character=0)), text="    // tuned\n")]))
    md = await hover_until(client, uri, pos, "**stale**")
    assert "| registers |" in md


async def test_hover_outside_kernels_is_empty(client, tmp_path):
    await start(client, tmp_path)
    (path,) = copy_corpus(tmp_path, "transpose_naive.cu")
    uri = open_file(client, path)
    h = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=0, character=0)))
    assert h is None
