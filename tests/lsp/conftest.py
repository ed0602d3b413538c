"""pytest-lsp fixtures: a real client driving ``python -m htam_server`` over stdio.

Every test starts its own server with its own memory store (``htam.memoryPath`` in the initialization
options) and a compile cache shared by the test session (``HTAM_CACHE_DIR`` in a temp dir).
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any, Union

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

CACHE_DIR = tempfile.mkdtemp(prefix="htam-lsp-cache-")
SERVER_ENV = {**os.environ, "HTAM_CACHE_DIR": CACHE_DIR, "PYTHONUNBUFFERED": "1",
              "HTAM_MEMORY": os.path.join(CACHE_DIR, "default-memory.sqlite3")}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "htam_server"],
                                              server_env=SERVER_ENV))
async def client(lsp_client: LanguageClient):
    """A started (not yet initialized) client; tests call ``support.start`` to initialize it."""
    prepare(lsp_client)
    yield
    await lsp_client.shutdown_session()


def prepare(lsp_client: LanguageClient) -> None:
    """Give a client what the tests read: ``applied_edits``, ``statuses``, ``recorded`` and the handlers that
    fill them (also for fixtures of other server environments)."""
    lsp_client.applied_edits = []
    lsp_client.statuses = []
    lsp_client.recorded = []
    lsp_client.apply_result = True

    # lsprotocol 2025's structure hook for ``Command | CodeAction`` returns a Command for every object that
    # has a "command" key, so a CodeAction carrying a command would reach the test as a Command. Real
    # editors tell them apart by the type of "command" (a string only in a Command); so does this hook.
    conv = lsp_client.protocol._converter

    def command_or_action(obj: Any, _: type) -> types.Command | types.CodeAction:
        if isinstance(obj.get("command"), str):
            return conv.structure(obj, types.Command)
        return conv.structure(obj, types.CodeAction)

    conv.register_structure_hook(Union[types.Command, types.CodeAction], command_or_action)  # noqa: UP007

    @lsp_client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        lsp_client.applied_edits.append(params)
        return types.ApplyWorkspaceEditResult(applied=lsp_client.apply_result)

    @lsp_client.feature("htam/status")
    def status(params) -> None:
        lsp_client.statuses.append(params)

    @lsp_client.feature("htam/recorded")
    def recorded(params) -> None:
        lsp_client.recorded.append(params)
