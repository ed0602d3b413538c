"""Matmul tiling with A read transposed: ``C = A^T B``, A stored row-major ``K x M`` and read ``A[k * M + row]``
(through an index macro ``IDX2R(k, row, M)`` or written out), B either way round (``B[k * N + col]`` or ``B[col *
K + k]``). The analysis layer names each operand's layout
(:func:`~htam_core.source.analysis.matmul_operands.operand_layout`); the shared-memory tiling and the register
tiling load each tile with ``threadIdx.x`` (consecutive threads) along the operand's contiguous axis. Each rewrite:
the layouts are recorded, the tile loads are coalesced (read off the result's facts), it compiles with nvcc
(sm_90), and on the CPU (:func:`cpu_emulation.run_block_main`, one host thread per CUDA thread) it gives the
original's output for M, N, K (37, 45, 70) that are not multiples of any tile; integer-valued inputs make every
summation order give the same sums. The kernels are written for these tests."""

from __future__ import annotations

import shutil

import pytest
from cpu_emulation import compiler, run_block_main
from transform_helpers import candidate_texts
from transform_helpers import facts_of_text as _facts
from transform_helpers import global_reads as _global_reads

from htam_core.source.analysis.matmul_operands import operand_layout
from htam_core.source.api import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable
from tests.support.nvcc_check import assert_compiles

SMEM, REG = "cuda.smem_tiling_matmul", "cuda.register_tile_matmul"
DEFINE = "#define IDX2R(i, j, ld) (((i) * (ld)) + (j))\n"

#: name -> (the k loop's statement, B's layout)
KERNELS = {
    "macro": ("acc += A[IDX2R(k, row, M)] * B[IDX2R(k, col, N)];", "NN"),
    "plain": ("acc += A[k * M + row] * B[k * N + col];", "NN"),
    "both_transposed": ("acc += A[(size_t)k * M + row] * B[col * K + k];", "NT"),
}


def _kernel(name: str) -> str:
    return DEFINE + f"""__global__ void atb(const float *A, const float *B, float *C, int M, int N, int K) {{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {{
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) {KERNELS[name][0]}
        C[row * N + col] = acc;
    }}
}}

void run(const float *A, const float *B, float *C, int M, int N, int K) {{
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    atb<<<grid, block>>>(A, B, C, M, N, K);
}}
"""


def test_the_analysis_layer_names_each_operands_layout():
    f = _facts(_kernel("both_transposed"), "atb")
    (a,), (b,) = _global_reads(f, "A"), _global_reads(f, "B")
    assert operand_layout(a, "k", "y", "x") == "AT" and operand_layout(b, "k", "y", "x") == "NT"
    f = _facts(_kernel("macro"), "atb")
    (a,), (b,) = _global_reads(f, "A"), _global_reads(f, "B")
    assert operand_layout(a, "k", "y", "x") == "AT" and operand_layout(b, "k", "y", "x") == "NN"
    assert operand_layout(a, "k", "x", "y") == "NN"  # with the output axes swapped it is a B operand
    (c,) = [x for x in f.accesses if x.pointer == "C"]
    assert operand_layout(c, "k", "y", "x") is None  # moves with both output coordinates


@pytest.mark.parametrize("name", list(KERNELS))
@pytest.mark.parametrize("tid", [SMEM, REG])
def test_both_tilings_take_a_transposed_a_and_load_it_coalesced(name, tid):
    model = parse_text(_kernel(name), "cuda", "atb.cu")
    cs = registry.propose(tid, model, model.kernel("atb"))
    assert not isinstance(cs, NotApplicable), cs.reason
    for c in cs:
        assert (c.params["a_layout"], c.params["layout"]) == ("AT", KERNELS[name][1])
        f = _facts(c.new_text, "atb")
        for p in ("A", "B"):
            (r,) = _global_reads(f, p)
            assert r.coalesced("x") is True, (p, c.title)  # each tile load walks its contiguous axis


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_every_rewrite_compiles(tmp_path):
    for name in KERNELS:
        for tid in (SMEM, REG):
            for i, text in enumerate(candidate_texts(tid, _kernel(name), "atb", "atb.cu")):
                assert_compiles(text, flags=("-std=c++17",), tmp=tmp_path, name=f"{name}_{tid[5:9]}_{i}.cu")


_MAIN = """
#include <vector>
int main() {
    const int M = 37, N = 45, K = 70;
    std::vector<float> A((size_t)K * M), B((size_t)K * N), C((size_t)M * N, 1e30f);
    for (int i = 0; i < K * M; ++i) A[i] = (float)((i * 7) % 13) - 6.0f;
    for (int i = 0; i < K * N; ++i) B[i] = (float)((i * 5) % 11) - 5.0f;
    htam_launch2(GX, GY, BX, BY, [&] { atb(A.data(), B.data(), C.data(), M, N, K); });
    for (float v : C) std::printf("%.9g\\n", v);
    return 0;
}
"""


def _run(text: str, tmp_path, tag: str) -> list[float]:
    """Run ``atb`` of ``text`` with the launch its own host function writes (the analysis layer's launch facts,
    evaluated in C)."""
    (la,) = _facts(text, "atb").launches
    grid = [d.text for d in la.grid] + ["1"]
    block = [d.text for d in la.block] + ["1"]
    main = _MAIN.replace("GX", grid[0]).replace("GY", grid[1]).replace("BX", block[0]).replace("BY", block[1])
    d = tmp_path / tag
    d.mkdir()
    return run_block_main(text, "atb", main, d, prelude="#include <cstdio>\n#include <cstddef>\n" + DEFINE)


@pytest.mark.skipif(compiler() is None, reason="needs a host C++ compiler")
@pytest.mark.parametrize("name", list(KERNELS))
def test_rewrites_compute_the_original_outputs_on_the_cpu(name, tmp_path):
    want = _run(_kernel(name), tmp_path, "orig")
    assert len(want) == 37 * 45 and 1e30 not in want
    for tid in (SMEM, REG):
        for i, text in enumerate(candidate_texts(tid, _kernel(name), "atb", "atb.cu")):
            assert _run(text, tmp_path, f"{tid[5:9]}{i}") == want, (tid, i)


def test_the_shared_tiles_declare_only_the_k_indices_they_read():
    text = candidate_texts(SMEM, _kernel("macro"), "atb", "atb.cu")[0]
    assert "htam_ka" not in text  # A along its rows on y's k, B along its columns on y's k: no k on x
    assert "htam_As[threadIdx.x][threadIdx.y] = (htam_ma < M && htam_kb < K) ? A[IDX2R(htam_kb, htam_ma, M)]" in text
    assert "__shared__ float htam_As[16][16 + 1];" in text  # written transposed: padded against bank conflicts
