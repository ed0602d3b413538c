"""Shared-memory and register tiling of matmuls written with row pointers (``const float *w = weight + o * C;``
then ``w[i]``), an accumulator starting from a bias (``(bias != NULL) ? bias[o] : 0.0f``), the output row on
``threadIdx.x`` and the column on ``threadIdx.y``, B stored as ``[out][in]`` (NT), and a block size set at run time.

The analysis layer resolves the row pointers (:class:`~htam_core.source.analysis.facts.PointerAlias`), so the
operands match; the rewrites spell each load at the parameter (``weight[(htam_nb * C) + (htam_ka)]``), keep the
bias read under the bounds check and size the new grid from the launch's own M and N. The structural tests read
the facts of the result; the numeric tests run the original and each rewrite on the CPU, one host thread per CUDA
thread (:func:`cpu_emulation.run_block_main`), on ragged sizes, with and without a bias; integer-valued inputs
make every summation order give the same sums, so the outputs must be equal. The ``nvcc`` test compiles them.
"""

from __future__ import annotations

import shutil

import pytest
from cpu_emulation import compiler, run_block_main
from transform_helpers import facts_of_text as _facts
from transform_helpers import fixture_path
from transform_helpers import global_reads as _global_reads

from tests.support.nvcc_check import assert_compiles

FILE = "matmul_rowptr_variants.cu"
SMEM, REG = "cuda.smem_tiling_matmul", "cuda.register_tile_matmul"


def test_row_pointers_on_the_transposed_mapping_tile_through_shared_memory(cand):
    cs = cand(SMEM, FILE, "linear_rowptr")
    assert [c.params["tile"] for c in cs] == [16, 32] and all(c.params["layout"] == "NT" for c in cs)
    text = cs[0].new_text
    assert "const float *wrow" not in text and "const float *irow" not in text  # spelled out in the loads
    assert "weight[(htam_nb * C) + (htam_ka)]" in text and "inp[(r * C) + (htam_ka)]" in text
    # the bias is read only where the original read it
    assert "float val = (r < R && o < O) ? ((bias != NULL) ? bias[o] : 0.0f) : (float)0;" in text
    f = _facts(text, "linear_rowptr")
    (a,), (b,) = _global_reads(f, "inp"), _global_reads(f, "weight")
    assert a.coalesced("x") is True and b.coalesced("x") is True  # both tile loads walk along threadIdx.x
    (w,) = [x for x in f.accesses if x.pointer == "out" and x.kind == "write"]
    assert w.coalesced("x") is True  # the column moved to threadIdx.x: the store is coalesced too
    (la,) = f.launches
    assert la.block_shape == (16, 16, 1)  # the run-time sqrt_block gave way to the tile
    assert [d.text for d in la.grid] == ["((R) + 15) / 16", "((O) + 15) / 16"]


def test_row_pointers_and_bias_register_tile(cand):
    big, small = cand(REG, FILE, "linear_rowptr")
    assert (big.params["layout"], small.params["tm"]) == ("NT", 4)
    f = _facts(small.new_text, "linear_rowptr")
    assert f.launches[0].block_shape == (256, 1, 1)
    assert [d.text for d in f.launches[0].grid] == ["((R) + 63) / 64", "((O) + 63) / 64"]
    (bias,) = _global_reads(f, "bias")
    # each output's own bias, in the TM x TN init loops: `o`, declared in each of the form's blocks, read in scope
    assert {"blockIdx.y", "htam_j"} <= {str(s) for s in bias.index.free_symbols} and len(bias.loops) == 2
    assert f.pointer_aliases == ()


def test_an_address_of_row_pointer_in_the_nn_layout(cand):
    (c16, c32) = cand(SMEM, FILE, "mm_arow")
    assert c16.params["layout"] == "NN" and "A[(row * K) + (htam_ka)]" in c16.new_text
    (a,) = _global_reads(_facts(c16.new_text, "mm_arow"), "A")
    assert a.coalesced("x") is True
    assert cand(REG, FILE, "mm_arow")[0].params["layout"] == "NN"


@pytest.mark.parametrize("tid", [SMEM, REG])
def test_a_moved_pointer_is_refused(refuse, tid):
    assert "the k loop moves the pointer a;" in refuse(tid, FILE, "mm_moving_ptr")
    assert "the loads are not A[row * K + k]" in refuse(tid, FILE, "mm_shifted_ptr")
    f = _facts(fixture_path(FILE).read_text(), "mm_shifted_ptr")
    assert f.pointer_aliases == () and f.pointer("A").mode == "unknown"


def test_a_row_pointer_read_after_the_loop_is_kept(tmp_path, monkeypatch):
    """An alias that the epilogue reads stays declared (shared memory) and keeps the register tile out (it
    depends on the output index, which moves)."""
    import transform_helpers

    text = fixture_path(FILE).read_text().replace("out[r * O + o] = val;", "out[r * O + o] = val + wrow[0];")
    (tmp_path / FILE).write_text(text)
    monkeypatch.setattr(transform_helpers, "OWN", tmp_path)
    (c, _) = transform_helpers.candidates(SMEM, FILE, "linear_rowptr")
    assert "const float *wrow = weight + o * C;" in c.new_text and "const float *irow" not in c.new_text
    assert "use r or o" in transform_helpers.refusal(REG, FILE, "linear_rowptr")


_MAIN = """
int main() {
    const int R = 70, C = 37, O = 45, sqrt_block = 8;
    std::vector<float> inp((size_t)R * C), w((size_t)O * C), b(O), out((size_t)R * O, 1e30f);
    for (int i = 0; i < R * C; ++i) inp[i] = (float)((i * 7) % 13) - 6.0f;
    for (int i = 0; i < O * C; ++i) w[i] = (float)((i * 5) % 11) - 5.0f;
    for (int i = 0; i < O; ++i) b[i] = (float)(i % 9) - 4.0f;
    const float *bias = BIAS;
    htam_launch2(GX, GY, BX, BY, [&] { linear_rowptr(out.data(), inp.data(), w.data(), bias, R, C, O); });
    for (float v : out) std::printf("%.9g\\n", v);
    return 0;
}
"""


def _run(text: str, tmp_path, tag: str, bias: str) -> list[float]:
    """Run ``linear_rowptr`` of ``text`` with the launch its own host function writes (grid and block from the
    analysis layer's launch facts, evaluated in C)."""
    (la,) = _facts(text, "linear_rowptr").launches
    grid = [d.text for d in la.grid] + ["1"]
    block = [d.text for d in la.block] + ["1"]
    main = (_MAIN.replace("GX", grid[0]).replace("GY", grid[1]).replace("BX", block[0]).replace("BY", block[1])
            .replace("BIAS", bias))
    d = tmp_path / tag
    d.mkdir()
    return run_block_main(text, "linear_rowptr", main, d)


@pytest.mark.skipif(compiler() is None, reason="needs a host C++ compiler")
@pytest.mark.parametrize(("tid", "which"), [(SMEM, 0), (SMEM, 1), (REG, 0), (REG, 1)])
def test_rewrites_compute_the_original_outputs_on_the_cpu(tid, which, cand, tmp_path):
    original = fixture_path(FILE).read_text()
    new = cand(tid, FILE, "linear_rowptr")[which].new_text
    for bias in ("b.data()", "nullptr"):
        want = _run(original, tmp_path, f"o{bias[0]}", bias)
        got = _run(new, tmp_path, f"n{bias[0]}", bias)
        assert len(want) == 70 * 45 and 1e30 not in want  # every output written (1e30: not yet)
        assert got == want


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("tid", [SMEM, REG])
def test_rewrites_compile_with_nvcc(tid, cand, tmp_path):
    for kernel in ("linear_rowptr", "mm_arow"):
        for i, c in enumerate(cand(tid, FILE, kernel)):
            assert_compiles(c.new_text, flags=("-std=c++17",), tmp=tmp_path, name=f"{kernel}_{i}.cu")


def test_the_coalescing_swap_and_the_tiles_compose(cand):
    """Swapping x and y first (``cuda.coalesce_remap``: the column on x) leaves a kernel the tiles still take."""
    from htam_core.source.api import parse_text
    from htam_core.transforms import registry
    from htam_core.transforms.base import NotApplicable

    (swap,) = cand("cuda.coalesce_remap", FILE, "linear_rowptr")
    model = parse_text(swap.new_text, "cuda", str(fixture_path(FILE)))
    for tid in (SMEM, REG):
        res = registry.propose(tid, model, model.kernel("linear_rowptr"))
        assert not isinstance(res, NotApplicable), res.reason
        assert res[0].params["layout"] == "NT"
    f = _facts(registry.propose(SMEM, model, model.kernel("linear_rowptr"))[0].new_text, "linear_rowptr")
    assert all(a.coalesced("x") for a in f.global_accesses() if a.pointer in ("inp", "weight", "out"))


def test_a_run_time_block_needs_sizes_the_grid_can_be_computed_from(tmp_path, monkeypatch):
    """With the block set at run time the new grid is computed from the launch's M and N: a size argument that
    calls a function would be evaluated twice, so the shared-memory tiling refuses and says why."""
    import transform_helpers

    text = fixture_path(FILE).read_text().replace(
        "linear_rowptr<<<grid, block>>>(out, inp, weight, bias, R, C, O);",
        "linear_rowptr<<<grid, block>>>(out, inp, weight, bias, rows_of(R), C, O);")
    (tmp_path / FILE).write_text(text)
    monkeypatch.setattr(transform_helpers, "OWN", tmp_path)
    reason = transform_helpers.refusal(SMEM, FILE, "linear_rowptr")
    assert "does not use a constant 2-D block" in reason
    assert "rows_of(R), O on line" in reason
