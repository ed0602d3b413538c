"""On a GPU: the server profiles a kernel, an applied code action records a *measured* outcome, and a kernel
that faults (illegal address) is reported while the next profile in the same server session still works.

Run on the lent H200 through ``bench/gpu_session.sh`` (stage ``lsp``). When ``HTAM_LSP_GPU_LOG`` names a file,
every step is appended to it as one JSON line (the committed log under ``bench/results/``).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from htam_core.memory import open_store
from tests.lsp.support import (
    apply_save_and_record,
    apply_text_edits,
    code_actions,
    edits_of,
    hover_until,
    open_file,
    pos_of,
    start,
    wait_for,
)

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]


def _log(event: str, **data: Any) -> None:
    path = os.environ.get("HTAM_LSP_GPU_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"event": event, "t": round(time.time(), 3), **data}, default=str) + "\n")


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


async def test_profile_apply_records_a_measured_outcome(client, tmp_path):
    memory = await start(client, tmp_path)
    for name in ("vector_add.py", "htam.toml"):
        shutil.copy(ROOT / "examples" / name, tmp_path / name)
    path = tmp_path / "vector_add.py"
    text = path.read_text()
    uri = open_file(client, path)
    pos = pos_of(text, "add_kernel(", offset=2)

    md = await hover_until(client, uri, pos, "measured on", timeout=240)
    _log("hover-measured", markdown=md)
    actions = await code_actions(client, uri, pos)
    _log("code-actions", titles=[a.title for a in actions])
    step = next(a for a in actions if (a.data or {}).get("type") == "step" and "BLOCK" in a.title.upper())
    resolved = await client.code_action_resolve_async(step)
    new_text = apply_text_edits(text, edits_of(resolved.edit, uri))
    assert new_text != text
    _log("resolved", title=step.title, step=resolved.data.get("step"))

    result = await apply_save_and_record(client, uri, path, new_text, resolved)
    _log("record-applied", result=result)

    rec = await wait_for(lambda: client.recorded, 240, "htam/recorded")
    outcome = _get(rec[0], "outcome")
    _log("recorded", outcome=outcome)
    assert _get(outcome, "measured") is True
    assert _get(outcome, "speedup") is not None and _get(outcome, "speedup") > 0

    with open_store(memory) as store:
        recs = list(store.records())
    assert len(recs) == 1 and recs[0].outcome.measured
    _log("memory", records=[{"step": r.step, "speedup": r.outcome.speedup, "status": r.outcome.status,
                             "device": r.device} for r in recs])


async def test_illegal_address_then_a_normal_profile_in_the_same_session(client, tmp_path):
    await start(client, tmp_path)
    gpu = ROOT / "tests" / "fixtures" / "gpu"
    for name in ("kernels.cu", "htam.toml"):
        shutil.copy(gpu / name, tmp_path / name)
    bad = tmp_path / "kernels.cu"
    uri = open_file(client, bad)
    res = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="htam.profile", arguments=[{"uri": uri, "kernel": "illegal_write"}]))
    _log("profile-illegal-address", result=res)
    entry = res["profiles"][0]
    assert entry["error"] and ("fault" in entry["error"] or "illegal" in entry["error"].lower()), entry

    (tmp_path / "ok").mkdir()
    for name in ("vector_add.py", "htam.toml"):
        shutil.copy(ROOT / "examples" / name, tmp_path / "ok" / name)
    good = tmp_path / "ok" / "vector_add.py"
    uri2 = open_file(client, good)
    res2 = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="htam.profile", arguments=[{"uri": uri2, "kernel": "add_kernel"}]))
    _log("profile-after-fault", result=res2)
    entry2 = res2["profiles"][0]
    assert entry2["error"] is None and entry2["mode"] == "gpu" and entry2["timeMs"] > 0, entry2
