"""A step whose pattern is already in place is not ranked: ``coalesce_thread_mapping`` needs a global access
strided along threadIdx.x (``strided_along_x``), ``smem_bank_padding`` a shared access that puts lanes on one bank
(``shared_bank_conflicts``), ``warp_per_row`` a loop over global memory that a thread walks alone (not
``rows_split``). The kernels are written here for these tests; each "before" kernel keeps the step ranked.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htam_core.memory import Ranker, load_knowledge
from htam_core.memory.facts import compute_facts
from htam_core.source.api import parse_text
from tests.support.nvcc_check import assert_compiles

# coalesced 2-D kernels: threadIdx.x walks the contiguous column
BLUR_2D = """
__global__ void k(const float* in, float* out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    float s = 0.f;
    for (int d = -1; d <= 1; ++d) s += in[min(max(y + d, 0), h - 1) * w + x];
    out[y * w + x] = s / 3.f;
}
"""
SCALE_ROWS = """
__global__ void k(const float* in, float* out, const float* scale, int rows, int cols) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) out[row * cols + col] = in[row * cols + col] * scale[row];
}
"""
# the same, with x on the rows: lanes a row apart
SCALE_ROWS_STRIDED = SCALE_ROWS.replace("int col = blockIdx.x * blockDim.x + threadIdx.x;\n    int row = "
                                        "blockIdx.y * blockDim.y + threadIdx.y;",
                                        "int row = blockIdx.x * blockDim.x + threadIdx.x;\n    int col = "
                                        "blockIdx.y * blockDim.y + threadIdx.y;")

# a tile transpose through shared memory, padded ([32][33]) or not ([32][32])
TILE_T = """
__global__ void k(const float* in, float* out, int rows, int cols) {
    __shared__ float t[32][WIDTH];
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    if (x < cols && y < rows) t[threadIdx.y][threadIdx.x] = in[y * cols + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x; y = blockIdx.x * 32 + threadIdx.y;
    if (x < rows && y < cols) out[y * rows + x] = t[threadIdx.x][threadIdx.y];
}
"""
# a halo tile read along its rows: each warp reads consecutive words of one row
HALO_ROWS = """
#define TW 16
__global__ void k(const float* in, float* out, int w, int h) {
    __shared__ float t[TW + 2][TW + 2];
    int x = blockIdx.x * TW + threadIdx.x, y = blockIdx.y * TW + threadIdx.y;
    for (int ty = threadIdx.y; ty < TW + 2; ty += TW)
        for (int tx = threadIdx.x; tx < TW + 2; tx += TW) {
            int gx = min(max((int)(blockIdx.x * TW) + tx - 1, 0), w - 1);
            int gy = min(max((int)(blockIdx.y * TW) + ty - 1, 0), h - 1);
            t[ty][tx] = in[gy * w + gx];
        }
    __syncthreads();
    if (x < w && y < h) out[y * w + x] = t[threadIdx.y + 1][threadIdx.x] + t[threadIdx.y + 1][threadIdx.x + 2];
}
"""

# a row sum: one thread per row (the step applies), one warp per row with lanes striding by 32, a block per row
ROW_SUM_THREAD = """
__global__ void k(const float* x, float* y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.f;
    for (int c = 0; c < cols; ++c) s += x[r * cols + c];
    y[r] = s;
}
"""
ROW_SUM_WARP = """
__global__ void k(const float* x, float* y, int rows, int cols) {
    int r = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    unsigned lane = threadIdx.x % 32u;
    if (r >= rows) return;
    float s = 0.f;
    for (int c = lane; c < cols; c += 32) s += x[r * cols + c];
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) y[r] = s;
}
"""
ROW_MAX_WARP_WIDE = """
#define WARP 32
__global__ void k(const float* x, float* y, int rows, int cols) {
    int r = blockIdx.x * (blockDim.x / WARP) + threadIdx.x / WARP;
    int lane = threadIdx.x & (WARP - 1);
    if (r >= rows) return;
    float m = -1e30f;
    for (int c = lane; c < cols; c += 2 * WARP) { m = fmaxf(m, x[(size_t)r * cols + c]);
        if (c + WARP < cols) m = fmaxf(m, x[(size_t)r * cols + c + WARP]); }
    for (int o = WARP / 2; o > 0; o >>= 1) m = fmaxf(m, __shfl_down_sync(0xffffffffu, m, o));
    if (lane == 0) y[r] = m;
}
"""


def _facts(src: str) -> dict:
    model = parse_text(src, "cuda", "k.cu")
    k = model.kernels[0]
    return compute_facts(k.features, "cuda", kernel=k, model=model)


def _ranked(src: str) -> list[str]:
    model = parse_text(src, "cuda", "k.cu")
    k = model.kernels[0]
    ranked = Ranker(load_knowledge()).rank({}, [], k.features, k.language, None, top=64, kernel=k, model=model)
    return [r.strategy for r in ranked]


@pytest.mark.parametrize("src, strided", [(BLUR_2D, False), (SCALE_ROWS, False), (SCALE_ROWS_STRIDED, True)])
def test_the_thread_remap_is_ranked_only_where_x_strides(src: str, strided: bool) -> None:
    assert _facts(src)["strided_along_x"] is strided
    assert ("coalesce_thread_mapping" in _ranked(src)) is strided


@pytest.mark.parametrize("src, conflicts", [(TILE_T.replace("WIDTH", "32"), True),
                                            (TILE_T.replace("WIDTH", "33"), False),
                                            (TILE_T.replace("WIDTH", "34"), True), (HALO_ROWS, False)])
def test_bank_padding_is_ranked_only_where_lanes_share_a_bank(src: str, conflicts: bool) -> None:
    assert _facts(src)["shared_bank_conflicts"] is conflicts
    assert ("smem_bank_padding" in _ranked(src)) is conflicts


def test_a_shared_array_of_another_width_is_unknown_and_stays_ranked() -> None:
    src = TILE_T.replace("WIDTH", "33").replace("__shared__ float", "__shared__ double").replace(
        "const float* in, float* out", "const double* in, double* out")
    assert _facts(src)["shared_bank_conflicts"] is None
    assert "smem_bank_padding" in _ranked(src)


@pytest.mark.parametrize("src, split", [(ROW_SUM_THREAD, False), (ROW_SUM_WARP, True), (ROW_MAX_WARP_WIDE, True)])
def test_warp_per_row_is_ranked_only_where_a_thread_walks_its_row(src: str, split: bool) -> None:
    assert _facts(src)["rows_split"] is split
    assert ("warp_per_row" in _ranked(src)) is not split


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_kernels_are_valid_cuda(tmp_path: Path) -> None:
    srcs = [BLUR_2D, SCALE_ROWS, SCALE_ROWS_STRIDED, TILE_T.replace("WIDTH", "33"), HALO_ROWS, ROW_SUM_THREAD,
            ROW_SUM_WARP, ROW_MAX_WARP_WIDE]
    for i, src in enumerate(srcs):
        assert_compiles(src, tmp=tmp_path, name=f"k{i}.cu", context=i)
