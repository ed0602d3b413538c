"""``cuda.block_size`` on 3-D blocks: the x-y shapes are retuned, z is kept, and the grid follows."""

from __future__ import annotations

import shutil
import subprocess

import pytest


def test_an_8x8x1_block_gets_the_2d_shapes_with_z_kept(cand):
    cs = cand("cuda.block_size", "block3d_variants.cu", "add3")
    assert {tuple(c.params["block"]) for c in cs} == {(32, 8, 1), (32, 16, 1), (16, 16, 1), (32, 32, 1), (64, 4, 1),
                                                      (16, 8, 1)}
    c = next(c for c in cs if c.params["block"] == [32, 8, 1])
    assert "dim3 block(32, 8, 1);" in c.new_text and "dim3 grid((nx + 31) / 32, (ny + 7) / 8, nz);" in c.new_text


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_3d_candidates_compile(cand, tmp_path):
    for i, c in enumerate(cand("cuda.block_size", "block3d_variants.cu", "add3")[:2]):
        src = tmp_path / f"c{i}.cu"
        src.write_text(c.new_text)
        p = subprocess.run(["nvcc", "-arch=sm_90", "-c", str(src), "-o", str(tmp_path / f"c{i}.o")],
                           capture_output=True, text=True, timeout=180)
        assert p.returncode == 0, p.stderr[-2000:]
