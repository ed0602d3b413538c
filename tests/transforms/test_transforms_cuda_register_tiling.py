"""``cuda.register_tile_matmul``: a naive matmul becomes shared tiles plus a TM x TN register tile per thread.

Where it applies (the corpus and suite ``sgemm_naive``, ``matmul_rowy``, an NT linear layer, a double GEMM) the
tests check the structure that carries the semantics: the original epilogue under the original bounds check per
output, the operands' index expressions with only row and k substituted, zero-filled edge tiles, and launches
resized from the launch's own size arguments. That every candidate compiles is checked with nvcc in
test_transforms_cuda_compile.py (same fixtures). Where it refuses, the reason is asserted.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from htam_core.source import load
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable
from tests.support.nvcc_check import nvcc_check

TID = "cuda.register_tile_matmul"
VARIANTS = "matmul_register_variants.cu"
SUITE = Path(__file__).resolve().parents[2] / "bench" / "suite" / "sgemm_naive.cu"


def test_sgemm_naive_gets_both_register_tiles(cand):
    cs = cand(TID, "sgemm_naive.cu", "sgemm_naive")
    assert [(c.params["bm"], c.params["tm"]) for c in cs] == [(128, 8), (64, 4)]
    big = cs[0].new_text
    assert "float htam_acc[8][8];" in big and "__shared__ alignas(16) float htam_As[8][128];" in big
    assert big.count("reinterpret_cast<const float4 *>") == 2  # A and B fragments, vectorized
    # row is on x in this kernel: the grid's x covers M in 128-row tiles, y covers N
    assert "dim3 block(256);" in big and "dim3 grid(((M) + 127) / 128, ((N) + 127) / 128);" in big
    # the operands keep their index expressions with only row and k substituted, zero-filled at the edges
    assert "A[(htam_r0 + htam_m) * K + (htam_k0 + htam_kk)] : (float)0" in big
    assert "B[(htam_k0 + htam_kk) * N + (htam_c0 + htam_n)] : (float)0" in big
    # the epilogue runs per output, unchanged, under the original bounds check
    assert re.search(r"if \(row < M && col < N\) \{\s*float acc = htam_acc\[htam_i\]\[htam_j\];\s*"
                     r"C\[row \* N \+ col\] = alpha \* acc \+ beta \* C\[row \* N \+ col\];", big)
    assert "threadIdx.y" not in big[big.index("__global__"):big.index("// Host")]


def test_the_suite_kernel_and_its_comment_note(cand):
    model = load(str(SUITE))
    res = registry.propose(TID, model, model.kernel("sgemm_naive"))
    assert not isinstance(res, NotApplicable), res
    assert "threads per block 16x16 → 256 (8x8 outputs each)" in res[0].new_text


def test_rowy_layout_maps_rows_to_y(cand):
    (big, _small) = cand(TID, "matmul_variants.cu", "matmul_rowy")
    text = big.new_text
    assert "const int htam_r0 = blockIdx.y * 128;" in text and "const int htam_c0 = blockIdx.x * 128;" in text
    assert "dim3 threads(256);" in text and "dim3 blocks(((n) + 127) / 128, ((m) + 127) / 128);" in text
    assert "sum += " not in text.split("__global__ void matadd")[0].split("register tile")[1]


def test_nt_layout_reads_b_rows_along_k(cand):
    cs = cand(TID, VARIANTS, "linear_nt")
    assert cs[0].params["layout"] == "NT"
    text = cs[0].new_text
    assert "const int htam_n = htam_l / 8, htam_kk = htam_l % 8;" in text  # consecutive threads: consecutive k
    assert "w[(htam_c0 + htam_n) * I + (htam_k0 + htam_kk)]" in text
    assert "out[r * O + o] = s + bias[o];" in text


def test_double_gemm_uses_scalar_fragments(cand):
    cs = cand(TID, VARIANTS, "dgemm_naive")
    assert not cs[0].params["float4"] and "float4" not in cs[0].new_text.split("__global__ void dgemm_naive")[1][:4000]
    assert "double htam_acc[8][8];" in cs[0].new_text
    assert "dim3(((O) + 127) / 128, ((R) + 127) / 128), dim3(256)" in cs[0].new_text


@pytest.mark.parametrize(("file", "kernel", "needle"), [
    ("matmul_variants.cu", "matadd", "not the naive matmul pattern"),
    (VARIANTS, "mm_sized", "the size arguments next_size(R), O on line"),
    ("transpose_naive.cu", "transpose_naive", "not the naive matmul pattern"),
    ("softmax_row_per_thread.cu", "softmax_row_per_thread", "not the naive matmul pattern"),
])
def test_refusals(refuse, file, kernel, needle):
    assert needle in refuse(TID, file, kernel)


def test_a_bound_that_is_not_a_parameter_is_refused(tmp_path):
    src = (Path(__file__).resolve().parents[1] / "fixtures" / "transforms" / "matmul_variants.cu").read_text()
    src = src.replace("if (i < m && j < n) {\n        float sum", "if (i < m && j < 2 * n) {\n        float sum")
    path = tmp_path / "mm.cu"
    path.write_text(src)
    model = load(str(path))
    res = registry.propose(TID, model, model.kernel("matmul_rowy"))
    assert isinstance(res, NotApplicable)
    assert "not the naive matmul pattern" in res.reason or "neither a kernel parameter nor a compile-time" in res.reason


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_suite_candidates_compile_without_spills(tmp_path):
    """Both configurations build for sm_90 with ptxas reporting no register spills."""
    model = load(str(SUITE))
    for i, c in enumerate(registry.propose(TID, model, model.kernel("sgemm_naive"))):  # type: ignore[arg-type]
        p = nvcc_check(c.new_text, flags=("-Xptxas", "-v"), tmp=tmp_path, name=f"c{i}.cu")
        assert p.returncode == 0, p.stderr[-2000:]
        assert "0 bytes spill stores" in p.stderr


def test_register_tile_after_smem_tiling_refuses(cand):
    """The register tile takes the naive kernel only: after shared-memory tiling it does not compose, which is
    why the knowledge base ranks it before shared-memory tiling on a naive GEMM."""
    from htam_core.source import parse_text

    tiled = cand("cuda.smem_tiling_matmul", "sgemm_naive.cu", "sgemm_naive")[0].new_text
    model = parse_text(tiled, "cuda")
    res = registry.propose(TID, model, model.kernel("sgemm_naive"))
    assert isinstance(res, NotApplicable) and "not the naive matmul pattern" in res.reason


def test_launch_bounds_that_admit_the_new_block_are_kept(cand):
    """``__launch_bounds__(256)`` on a 16x16 launch: the 256-thread register-tile block fits under it, so the
    kernel is tiled and the bounds stay as written."""
    cs = cand(TID, VARIANTS, "mm_bounded")
    assert cs and all("__launch_bounds__(256) mm_bounded" in c.new_text for c in cs)


NAIVE_BOUNDED = """#define LB(n) __launch_bounds__((n))
__global__ void LB(LIMIT) mm(const float *A, const float *B, float *C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}
void run(const float *A, const float *B, float *C, int M, int N, int K) {
    mm<<<dim3((N + BX - 1) / BX, (M + BY - 1) / BY), dim3(BX, BY)>>>(A, B, C, M, N, K);
}
"""


def _bounded(limit: int, bx: int, by: int):
    from htam_core.source import parse_text

    text = NAIVE_BOUNDED.replace("LIMIT", str(limit)).replace("BX", str(bx)).replace("BY", str(by))
    model = parse_text(text, "cuda")
    return registry.propose(TID, model, model.kernel("mm"))


def test_a_macro_limit_equal_to_the_old_block_follows_the_new_block():
    """ATen-style bounds through a macro, the limit the old 16x8 block: the macro's argument becomes 256."""
    res = _bounded(128, 16, 8)
    assert not isinstance(res, NotApplicable), res
    assert all("__global__ void LB(256) mm(" in c.new_text for c in res)


def test_a_deliberately_lower_limit_is_refused_in_one_line():
    """A limit below 256 that is not the old block size (64 threads under a cap of 128) is the author's choice:
    refused, saying why, not silently raised."""
    res = _bounded(128, 8, 8)
    assert isinstance(res, NotApplicable) and "smaller than 256 threads" in res.reason
