"""The first static profile comes from the source at once, never from a compile: the first hover of a kernel
shows the source-only stage while the compile is still pending (here it is held: ``nvcc`` on the server's
``PATH`` waits for a gate file, so no compile can finish before the test opens the gate), and the compiled
stage follows once the compile can run."""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.lsp.conftest import SERVER_ENV, prepare
from tests.lsp.support import copy_corpus, hover_until, open_file, pos_of, start

_DIR = Path(tempfile.mkdtemp(prefix="htam-lsp-gated-"))
GATE = _DIR / "open"
REAL_NVCC = shutil.which("nvcc")
_fake = _DIR / "bin" / "nvcc"
_fake.parent.mkdir()
# held until the gate opens (60 s at most), then the real nvcc (or a failure without one)
_then = f'exec {REAL_NVCC} "$@"' if REAL_NVCC else "echo 'nvcc: not installed' >&2; exit 1"
_fake.write_text(f"#!/bin/sh\nfor i in $(seq 600); do [ -e '{GATE}' ] && break; sleep 0.1; done\n{_then}\n")
_fake.chmod(_fake.stat().st_mode | stat.S_IXUSR)
ENV = {**SERVER_ENV, "PATH": f"{_fake.parent}{os.pathsep}{os.environ.get('PATH', '')}",
       "HTAM_CACHE_DIR": str(_DIR / "cache")}  # a cold compile cache of its own


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "htam_server"], server_env=ENV))
async def gated(lsp_client: LanguageClient):
    """A client of a server whose compiles wait for :data:`GATE`."""
    prepare(lsp_client)
    yield
    GATE.touch()  # let a held compile end, so that nothing outlives the test
    await lsp_client.shutdown_session()


async def test_first_hover_shows_the_source_stage_while_the_compile_is_held(gated, tmp_path):
    await start(gated, tmp_path, options={"static": True})
    (path,) = copy_corpus(tmp_path, "transpose_naive.cu")
    text = path.read_text()
    uri = open_file(gated, path)
    pos = pos_of(text, "transpose_naive(", offset=3)
    ident = types.TextDocumentIdentifier(uri=uri)
    first = await gated.text_document_hover_async(types.HoverParams(text_document=ident, position=pos))
    md = first.contents.value
    head = next(ln for ln in md.splitlines() if ln.startswith("**Profile"))
    assert "static: from the source only, not compiled yet" in head, md
    assert "compile (registers, spills, occupancy) follow…" in head
    assert "| registers | unknown, spills unknown" in md and "bottleneck | **" in md
    assert "**Recommended next step:**" in md and "loading the HTAM memory" not in md  # ranked with that stage
    assert not GATE.exists()  # so no compile can have finished
    again = await gated.text_document_hover_async(types.HoverParams(text_document=ident, position=pos))
    assert "static: from the source only" in again.contents.value  # still held: the same stage

    GATE.touch()
    if REAL_NVCC:
        md = await hover_until(gated, uri, pos, "static: compiled only, no GPU measurement", timeout=90)
        assert "follow" not in md.split("\n\n")[1]
    else:  # the compile fails: the source-only stage stays, with the reason
        md = await hover_until(gated, uri, pos, "not collected", timeout=90)
