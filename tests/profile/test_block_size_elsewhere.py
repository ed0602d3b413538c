"""The static profile reads the block size of a kernel launched from another file of the workspace (a new user's
trial: `htam kernels` showed `main.cu:15 ... block=256`, while `profile` and `suggest` said "block size unknown")."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htam_core.profile.api import profile_kernel
from tests.support.workspace_fixtures import CUPY_TRANSPOSE_PY

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "launched_elsewhere"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_the_block_of_a_launch_in_another_file_sizes_the_occupancy(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(FIX / "proto", ws)
    p = profile_kernel(ws / "vectorAdd.cu", "vectorAdd", static=True)
    assert p.block_size == 256, p.warnings
    assert p.extra["block_size_source"].startswith("launch in main.cu line ")
    assert not any(w.startswith("block size unknown") for w in p.warnings)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_with_no_launch_anywhere_the_size_stays_unknown(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text((FIX / "proto" / "vectorAdd.cu").read_text())
    p = profile_kernel(tmp_path / "k.cu", "vectorAdd", static=True)
    assert p.block_size is None and any(w.startswith("block size unknown") for w in p.warnings)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_the_block_of_a_cupy_launch_in_the_kernels_own_file(tmp_path: Path) -> None:
    """A kernel in a Python string launched through cupy in the same file: the call's block sizes the profile."""
    (tmp_path / "t.py").write_text(CUPY_TRANSPOSE_PY)
    p = profile_kernel(tmp_path / "t.py", "transpose", static=True)
    assert p.block_size == 256, p.warnings
    assert p.extra["block_size_source"] == "launch in t.py line 17: block (16, 16) = 256"
    assert not any(w.startswith("block size unknown") for w in p.warnings)
