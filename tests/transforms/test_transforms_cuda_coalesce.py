"""``cuda.coalesce_remap``: swap the x and y thread dimensions where the analysis shows the swap coalesces.

Equivalence: the naive GEMM before and after the swap runs on the CPU (``cpu_emulation``), each with its own
launch shape, and gives bitwise the same C (every thread does the same work in the same order).
"""

from __future__ import annotations

import pytest
from cpu_emulation import compiler, run_main
from transform_helpers import fixture_path

TID = "cuda.coalesce_remap"


def test_sgemm_naive_gets_rows_on_y(cand):
    (c,) = cand(TID, "sgemm_naive.cu", "sgemm_naive")
    text = c.new_text
    assert "const int row = blockIdx.y * blockDim.y + threadIdx.y;" in text
    assert "const int col = blockIdx.x * blockDim.x + threadIdx.x;" in text
    assert "dim3 grid(CEIL_DIV(N, 16), CEIL_DIV(M, 16));" in text and "dim3 block(16, 16);" in text
    assert c.params == {"strided_before": 3, "strided_after": 0}
    assert "thread dimensions x and y swapped" in text  # the comment "x runs over rows" gets a note


_MAIN = """
int main() {{
    const int M = 37, N = 45, K = 29;
    std::vector<float> A(M * K), B(K * N), C(M * N);
    for (int i = 0; i < M * K; ++i) A[i] = std::sin(0.1f * i);
    for (int i = 0; i < K * N; ++i) B[i] = std::cos(0.07f * i);
    for (int i = 0; i < M * N; ++i) C[i] = 0.01f * (i % 17);
    HTAM_LAUNCH({gx}, {gy}, 16, 16, sgemm_naive(M, N, K, 1.5f, A.data(), B.data(), 0.5f, C.data()));
    for (float v : C) std::printf("%.9g\\n", v);
    return 0;
}}
"""


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
def test_the_swapped_gemm_computes_the_same_c(cand, tmp_path):
    (c,) = cand(TID, "sgemm_naive.cu", "sgemm_naive")
    start = fixture_path("sgemm_naive.cu").read_text()
    before = run_main(start, "sgemm_naive", _MAIN.format(gx="(M + 15) / 16", gy="(N + 15) / 16"), tmp_path)
    after = run_main(c.new_text, "sgemm_naive", _MAIN.format(gx="(N + 15) / 16", gy="(M + 15) / 16"), tmp_path)
    assert len(before) == 37 * 45 and before == after
    assert len(set(before)) > 100  # a real result, not a constant


@pytest.mark.parametrize(("file", "kernel", "needle"), [
    ("matmul_variants.cu", "matmul_rowy", "no global access of matmul_rowy is strided along threadIdx.x"),
    ("transpose_naive.cu", "transpose_naive", "does not make more accesses coalesced"),
    ("softmax_row_per_thread.cu", "softmax_row_per_thread", "uses no y thread or block index"),
    ("reduce_sum_smem.cu", "block_sum_interleaved", "uses no y thread or block index"),
])
def test_refusals(refuse, file, kernel, needle):
    assert needle in refuse(TID, file, kernel)


def test_a_warp_level_kernel_is_refused(tmp_path):
    from htam_core.source import load
    from htam_core.transforms import registry

    src = """__global__ void k(const float *a, float *o, int n) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    int c = blockIdx.y * blockDim.y + threadIdx.y;
    float v = a[r * n + c];
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    o[r * n + c] = v;
}
void run(const float *a, float *o, int n) { k<<<dim3(n / 16, n / 16), dim3(16, 16)>>>(a, o, n); }
"""
    path = tmp_path / "w.cu"
    path.write_text(src)
    model = load(str(path))
    res = registry.propose(TID, model, model.kernel("k"))
    assert "uses __shfl_xor_sync; swapping x and y changes which threads share a warp" in res.reason


def test_an_already_coalesced_kernel_without_a_launch_site_is_refused_as_coalesced():
    """The reason that decides comes first: a matmul whose threadIdx.x already maps to the column has nothing to
    gain from the swap, with or without a launch site in the file (a new user read "no launch site" for it)."""
    from htam_core.source.api import parse_text
    from htam_core.transforms import registry
    from htam_core.transforms.base import NotApplicable

    src = """__global__ void mm(const float *A, const float *B, float *C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}
"""
    model = parse_text(src, "cuda")
    res = registry.propose(TID, model, model.kernel("mm"))
    assert isinstance(res, NotApplicable) and "no global access of mm is strided along threadIdx.x" in res.reason
