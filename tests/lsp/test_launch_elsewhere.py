"""A kernel launched from another file of the workspace: its grid-stride step is listed with a title that says the
launcher is edited too, and resolves into one workspace edit over both files (``documentChanges``)."""

from __future__ import annotations

from tests.lsp.support import apply_text_edits, code_actions, edits_of, open_file, pos_of, start
from tests.support.workspace_fixtures import MAIN_CPP, VADD, workspace


async def test_step_edits_kernel_and_launcher_in_one_workspace_edit(client, tmp_path):
    await start(client, tmp_path, options={"topN": 8})
    ws = workspace(tmp_path / "ws", {"k.cu": VADD, "main.cpp": MAIN_CPP})
    uri = open_file(client, ws / "k.cu")
    acts = await code_actions(client, uri, pos_of(VADD, "vadd(", offset=1))
    step = next((a for a in acts if "launch in main.cpp edited too" in a.title and "grid-stride" in a.title), None)
    assert step is not None, [a.title for a in acts]
    resolved = await client.code_action_resolve_async(step)
    assert resolved.edit is not None and len(resolved.edit.document_changes) == 2
    host_uri = (ws / "main.cpp").resolve().as_uri()
    new_kernel = apply_text_edits(VADD, edits_of(resolved.edit, uri))
    new_host = apply_text_edits(MAIN_CPP, edits_of(resolved.edit, host_uri))
    assert "gridDim.x" in new_kernel and "htam_sm_grid(" in new_host
