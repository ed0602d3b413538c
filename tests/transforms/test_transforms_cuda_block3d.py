"""``cuda.block_size`` on 3-D blocks: the x-y shapes are retuned, z is kept, and the grid follows."""

from __future__ import annotations

import shutil

import pytest

from tests.support.nvcc_check import assert_compiles


def test_an_8x8x1_block_gets_the_2d_shapes_with_z_kept(cand):
    cs = cand("cuda.block_size", "block3d_variants.cu", "add3")
    # a z extent of 1 does not count: the block is 2-D, its shapes are 2-D, and the text keeps the z component
    assert {tuple(c.params["block"]) for c in cs} == {(32, 8), (32, 16), (16, 16), (32, 32), (64, 4), (16, 8)}
    c = next(c for c in cs if c.params["block"] == [32, 8])
    assert "dim3 block(32, 8, 1);" in c.new_text and "dim3 grid((nx + 31) / 32, (ny + 7) / 8, nz);" in c.new_text


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_3d_candidates_compile(cand, tmp_path):
    for i, c in enumerate(cand("cuda.block_size", "block3d_variants.cu", "add3")[:2]):
        assert_compiles(c.new_text, tmp=tmp_path, name=f"c{i}.cu")


def test_a_block_whose_z_is_1_is_2d_for_tiling(cand):
    # the case: shared-memory tiling refused "the launch on line 19 has a 3-D block" for dim3(8, 8, 1)
    cs = cand("cuda.smem_tiling_matmul", "sgemm_block_z1.cu", "sgemm_naive")
    assert {c.params["tile"] for c in cs} == {16, 32}
    c = next(c for c in cs if c.params["tile"] == 16)
    assert "dim3 block(16, 16, 1);" in c.new_text and "dim3 grid((N + 15) / 16, (M + 15) / 16, 1);" in c.new_text


def test_trailing_unit_dimensions_do_not_count_in_the_analysis_layer():
    from htam_core.source import parse_text
    from htam_core.transforms._cuda import load_unit

    src = ("__global__ void k(float *x) { x[threadIdx.x] = 0; }\n"
           "void run(float *x) { dim3 b(256, 1, 1); dim3 g(4, 1); k<<<g, b>>>(x); k<<<dim3(1, 64, 1), 128>>>(x); }\n")
    model = parse_text(src, "cuda", "k.cu")
    unit = load_unit(model, model.kernel("k"))
    first, second = unit.launches
    assert [unit.t(d.expr) for d in unit.block_dims(first)] == ["256"]
    assert [unit.t(e) for e in unit.dims_of(first.grid, first.host)] == ["4"]
    assert [unit.t(e) for e in unit.dims_of(second.grid, second.host)] == ["1", "64"]  # a leading 1 stays
