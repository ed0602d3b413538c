"""The editor's two stages on a real GPU (marked gpu: skipped without CUDA): the timer's profile first, with its
method and CUPTI cross-check, then the Nsight Compute counters, both published for the same kernel version."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from htam_core.editor import Session
from htam_core.measure.ncu import find_ncu
from htam_core.source import load

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]


def test_timer_stage_then_counters_stage(tmp_path, monkeypatch):
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("vector_add.py", "htam.toml"):
        shutil.copy(ROOT / "examples" / name, tmp_path / name)
    path = tmp_path / "vector_add.py"
    s = Session(memory_path=str(tmp_path / "mem.sqlite3"))
    s.warm_up()
    assert s.gpu is not None
    seen = []
    s.profiles.subscribe(lambda e: seen.append((time.monotonic(), e)))
    kernel = load(path).kernel("add_kernel")
    t0 = time.monotonic()
    final = s.profile_blocking(str(path), kernel, path.read_text(), "python", timeout=600)
    assert final is not None and final.error is None, final and final.error
    first = seen[0][1]
    assert first.stage == "timer" and first.profile.mode == "gpu" and first.profile.time_ms is not None
    timing = first.profile.extra["timing"]
    assert timing["method"] and "cupti_ms" in timing and first.profile.harness
    if find_ncu() is not None:
        assert first.pending == "Nsight Compute counters" and final.stage == "counters"
        assert final.profile.sol and final.profile.time_ms == first.profile.time_ms
        print(f"stage 1 after {seen[0][0] - t0:.2f} s, stage 2 after {seen[-1][0] - t0:.2f} s")
    s.close()
