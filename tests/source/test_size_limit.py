"""The one size limit: a source file over MAX_SOURCE_BYTES is refused with one line before it is read (time and
memory stay flat however big it is), through the API and through ``htam kernels``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from htam_core.source import MAX_SOURCE_BYTES, SourceError, load, parse_text

KERNEL = "__global__ void k{i}(float* x) {{ x[threadIdx.x] = {i}; }}\n"


def _huge(path: Path, size: int) -> Path:
    """A CUDA file of ``size`` bytes: kernels up front, the rest a sparse hole of spaces-to-be (never written)."""
    with open(path, "wb") as fh:
        fh.write("".join(KERNEL.format(i=i) for i in range(1000)).encode())
        fh.truncate(size)
    return path


def test_50_mb_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = _huge(tmp_path / "huge.cu", 50 << 20)
    tracemalloc.start()
    t0 = time.perf_counter()
    with pytest.raises(SourceError) as info:
        load(path)
    took = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    msg = str(info.value)
    assert msg == (f"{path} is 50.0 MB; htam reads source files of up to 1 MB, so it did not read this one "
                   "(split the kernels you work on into a smaller file)")
    assert took < 1.0 and peak < (1 << 20)


def test_text_over_the_limit_is_refused_and_at_the_limit_is_read() -> None:
    with pytest.raises(SourceError, match="is 1.0 MB; htam reads source files of up to 1 MB"):
        parse_text("/" * (MAX_SOURCE_BYTES + 1), "cuda", "t.cu")
    ok = KERNEL.format(i=1)
    assert [k.name for k in parse_text(ok + " " * (MAX_SOURCE_BYTES - len(ok)), "cuda").kernels] == ["k1"]


def test_htam_kernels_on_a_huge_file_prints_one_line(tmp_path: Path) -> None:
    path = _huge(tmp_path / "huge.cu", 50 << 20)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run([sys.executable, "-m", "htam_core.cli.main", "kernels", str(path)], capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 2
    assert proc.stdout == "" and proc.stderr.strip().count("\n") == 0
    assert "is 50.0 MB; htam reads source files of up to 1 MB" in proc.stderr
