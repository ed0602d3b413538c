"""Kernels whose bounds check is an early return (``if (row >= M || col >= N) return;`` or ``if (!(row < M && col
< N)) return;``) get the same transforms as the guarded-body form (the analysis layer's one bounds-check reader,
:mod:`htam_core.source.analysis.guards`), and a check the transforms still cannot take is refused by its form.

Structure: the rewrite keeps the epilogue under the positive check; numerics: the original and each rewrite run
on the CPU, one host thread per CUDA thread (:func:`cpu_emulation.run_block_main`), on ragged sizes with
integer-valued inputs (every summation order gives the same sums), so the outputs must be equal.
"""

from __future__ import annotations

import pytest
from cpu_emulation import compiler, run_block_main
from transform_helpers import facts_of_text, fixture_path

FILE = "early_return_variants.cu"
SMEM, REG = "cuda.smem_tiling_matmul", "cuda.register_tile_matmul"
MATMULS = ("mm_early_return", "mm_not_return")


@pytest.mark.parametrize("kernel", MATMULS)
@pytest.mark.parametrize("tid", [SMEM, REG])
def test_an_early_return_matmul_is_tiled(cand, tid, kernel):
    cs = cand(tid, FILE, kernel)
    assert len(cs) == 2
    text = cs[0].new_text
    body = text[text.index(f"__global__ void {kernel}"):]
    body = body[: body.index("\n}\n")]
    assert "return;" not in body  # the early exit became the check around the epilogue: every thread loads tiles
    assert "if (row < M && col < N) {" in body
    assert "__syncthreads();" in body


def test_the_grid_stride_loop_takes_a_negated_early_return(cand):
    (c, *_) = cand("cuda.grid_stride", FILE, "scale_not_return")
    body = c.new_text[c.new_text.index("__global__ void scale_not_return"):]
    assert "htam_gi < n" in body[: body.index("\n}\n")] and "int i = (int)htam_gi;" in body  # 64-bit counter


def test_the_transpose_tile_takes_an_early_return(cand):
    cs = cand("cuda.transpose_smem_tile", FILE, "transpose_early_return")
    body = cs[0].new_text[cs[0].new_text.index("__global__ void transpose_early_return"):]
    assert "htam_tile[32][33]" in body and "return;" not in body[: body.index("\n}\n")]


@pytest.mark.parametrize("tid", [SMEM, REG, "cuda.grid_stride"])
def test_a_branch_that_works_before_returning_is_refused_by_its_form(refuse, tid):
    assert "returns after other statements" in refuse(tid, FILE, "mm_return_after_work")


def test_a_matmul_with_an_early_return_is_not_a_transpose(refuse):
    assert "not a transpose" in refuse("cuda.transpose_smem_tile", FILE, "mm_return_after_work")


def test_a_two_index_early_return_is_named_where_a_one_index_check_is_needed(refuse):
    why = refuse("cuda.grid_stride", FILE, "mm_early_return")
    assert "the early return `if (row >= M || col >= N) return;`" in why


_MAIN = """
int main() {
    const int M = 37, N = 45, K = 29;
    std::vector<float> A((size_t)M * K), B((size_t)K * N), C((size_t)M * N, 1e30f);
    for (int i = 0; i < M * K; ++i) A[i] = (float)((i * 7) % 13) - 6.0f;
    for (int i = 0; i < K * N; ++i) B[i] = (float)((i * 5) % 11) - 5.0f;
    htam_launch2(GX, GY, BX, BY, [&] { KERNEL(A.data(), B.data(), C.data(), M, N, K); });
    for (float v : C) std::printf("%.9g\\n", v);
    return 0;
}
"""


def _run(text: str, kernel: str, tmp_path, tag: str) -> list[float]:
    """Run ``kernel`` of ``text`` with the grid and block its own launch writes (analysis-layer launch facts)."""
    la = next(la for la in facts_of_text(text, kernel).launches)
    grid = [d.text for d in la.grid] + ["1"]
    block = [d.text for d in la.block] + ["1"]
    main = (_MAIN.replace("GX", grid[0]).replace("GY", grid[1]).replace("BX", block[0]).replace("BY", block[1])
            .replace("KERNEL", kernel))
    d = tmp_path / tag
    d.mkdir()
    return run_block_main(text, kernel, main, d)


@pytest.mark.skipif(compiler() is None, reason="needs a host C++ compiler")
@pytest.mark.parametrize("kernel", MATMULS)
@pytest.mark.parametrize(("tid", "which"), [(SMEM, 0), (SMEM, 1), (REG, 1)])
def test_rewrites_compute_the_original_outputs_on_the_cpu(tid, which, kernel, cand, tmp_path):
    want = _run(fixture_path(FILE).read_text(), kernel, tmp_path, "o")
    got = _run(cand(tid, FILE, kernel)[which].new_text, kernel, tmp_path, "n")
    assert len(want) == 37 * 45 and 1e30 not in want
    assert got == want
