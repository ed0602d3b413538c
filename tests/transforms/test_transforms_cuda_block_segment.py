"""The block as a segment: ``cuda.block_size`` is not offered where the block size decides which elements a kernel
combines (a segmented scan, a per-block maximum stored per element), and stays offered where it only sets how many
threads share the work (elementwise, a tree reduction whose partials an ``atomicAdd`` sums). A block-size step on a
kernel whose threads combine values is marked as changing the order of float operations, so a static run follows
it only where that is all it changes.

The kernels are written here for these tests.
"""

from __future__ import annotations

import shutil

import pytest

from htam_core.optimize.loop import follows_in_static
from htam_core.source import parse_text
from htam_core.source.analysis import analyze
from htam_core.source.analysis.contracts import block_segment_results, block_size_numerics
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable
from tests.support.nvcc_check import assert_compiles

SCAN_MACRO = """
#define BLOCK 512
__global__ void seg_scan(const float* __restrict__ in, float* __restrict__ out, int n) {
    __shared__ float buf[2][BLOCK];
    int tid = threadIdx.x, gid = blockIdx.x * BLOCK + tid, pout = 0;
    buf[0][tid] = (gid < n) ? in[gid] : 0.0f;
    __syncthreads();
    for (int offset = 1; offset < BLOCK; offset <<= 1) {
        pout = 1 - pout;
        buf[pout][tid] = buf[1 - pout][tid] + (tid >= offset ? buf[1 - pout][tid - offset] : 0.0f);
        __syncthreads();
    }
    if (gid < n) out[gid] = buf[pout][tid];
}
void run(const float* in, float* out, int n) { seg_scan<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(in, out, n); }
"""

SCAN_TEMPLATE = """
template <int BS>
__global__ void seg_scan_t(const float* in, float* out, int n) {
    __shared__ float s[BS];
    int tid = threadIdx.x;
    int gid = blockIdx.x * BS + tid;
    s[tid] = gid < n ? in[gid] : 0.0f;
    __syncthreads();
    for (int d = 1; d < BS; d *= 2) {
        float v = tid >= d ? s[tid - d] : 0.0f;
        __syncthreads();
        s[tid] += v;
        __syncthreads();
    }
    if (gid < n) out[gid] = s[tid];
}
constexpr int kThreads = 256;
void run(const float* in, float* out, int n) {
    seg_scan_t<kThreads><<<(n + kThreads - 1) / kThreads, kThreads>>>(in, out, n);
}
"""

# a scan kept in place in the input (one pointer read and written), block size from a const local
SCAN_INPLACE = """
__global__ void scan_inplace(float* data, int n) {
    __shared__ float t[256];
    unsigned lane = threadIdx.x;
    unsigned g = blockIdx.x * blockDim.x + lane;
    t[lane] = g < n ? data[g] : 0.f;
    __syncthreads();
    for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
        float add = lane >= stride ? t[lane - stride] : 0.f;
        __syncthreads();
        t[lane] += add;
        __syncthreads();
    }
    if (g < n) data[g] = t[lane];
}
void run(float* data, int n) {
    const int threads = 256;
    scan_inplace<<<(n + threads - 1) / threads, threads>>>(data, n);
}
"""

BLOCK_MAX = """
__global__ void block_max_bcast(const float* x, float* y, int n) {
    extern __shared__ float red[];
    unsigned t = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + t;
    red[t] = i < n ? x[i] : -INFINITY;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) red[t] = fmaxf(red[t], red[t + s]);
        __syncthreads();
    }
    if (i < n) y[i] = x[i] - red[0];
}
void launch(const float* x, float* y, int n) {
    const int threads = 128;
    block_max_bcast<<<(n + threads - 1) / threads, threads, threads * sizeof(float)>>>(x, y, n);
}
"""

# a block scan through warp shuffles and the warps' totals in shared memory
SCAN_SHUFFLE = """
__global__ void block_scan_shfl(const float* in, float* out, int n) {
    __shared__ float warp_sums[32];
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    float v = gid < n ? in[gid] : 0.f;
    for (int o = 1; o < 32; o <<= 1) {
        float t = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += t;
    }
    if (lane == 31) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float w = lane < blockDim.x / 32 ? warp_sums[lane] : 0.f;
        for (int o = 1; o < 32; o <<= 1) {
            float t = __shfl_up_sync(0xffffffffu, w, o);
            if (lane >= o) w += t;
        }
        warp_sums[lane] = w;
    }
    __syncthreads();
    if (warp > 0) v += warp_sums[warp - 1];
    if (gid < n) out[gid] = v;
}
void run(const float* in, float* out, int n) { block_scan_shfl<<<(n + 511) / 512, 512>>>(in, out, n); }
"""

# a scan of each warp's 32 elements alone: its segment is the warp, whatever the block
WARP_SCAN = """
__global__ void warp_scan(const float* in, float* out, int n) {
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    float v = gid < n ? in[gid] : 0.f;
    for (int o = 1; o < 32; o <<= 1) {
        float t = __shfl_up_sync(0xffffffffu, v, o);
        if ((threadIdx.x & 31) >= o) v += t;
    }
    if (gid < n) out[gid] = v;
}
void run(const float* in, float* out, int n) { warp_scan<<<(n + 255) / 256, 256>>>(in, out, n); }
"""

ELEMENTWISE = """
#define THREADS 512
__global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * THREADS + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
void go(float a, const float* x, float* y, int n) {
    saxpy<<<(n + THREADS - 1) / THREADS, THREADS>>>(a, x, y, n);
}
"""

ATOMIC_SUM = """
#define BLOCK 512
__global__ void sum_atomic(const float* in, float* total, int n) {
    __shared__ float sdata[BLOCK];
    int tid = threadIdx.x;
    int i = blockIdx.x * BLOCK + tid;
    sdata[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(total, sdata[0]);
}
void go(const float* in, float* total, int n) {
    sum_atomic<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(in, total, n);
}
"""

# a halo'd stencil tile: neighbours at fixed offsets, the same for any block
STENCIL = """
#define B 256
__global__ void blur3(const float* in, float* out, int n) {
    __shared__ float tile[B + 2];
    int g = blockIdx.x * B + threadIdx.x;
    tile[threadIdx.x + 1] = g < n ? in[g] : 0.f;
    if (threadIdx.x == 0) tile[0] = g > 0 ? in[g - 1] : 0.f;
    if (threadIdx.x == B - 1) tile[B + 1] = g + 1 < n ? in[g + 1] : 0.f;
    __syncthreads();
    if (g < n) out[g] = (tile[threadIdx.x] + tile[threadIdx.x + 1] + tile[threadIdx.x + 2]) / 3.f;
}
void go(const float* in, float* out, int n) { blur3<<<(n + B - 1) / B, B>>>(in, out, n); }
"""

# one row per block: the block strides over a row of run-time length, whatever its size
ROW_SUM_BCAST = """
__global__ void row_center(const float* x, float* y, int cols) {
    __shared__ float acc[256];
    const float* row = x + blockIdx.x * cols;
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += row[c];
    acc[threadIdx.x] = s;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) acc[threadIdx.x] += acc[threadIdx.x + k];
        __syncthreads();
    }
    for (int c = threadIdx.x; c < cols; c += blockDim.x) y[blockIdx.x * cols + c] = row[c] - acc[0] / cols;
}
void go(const float* x, float* y, int rows, int cols) { row_center<<<rows, 256>>>(x, y, cols); }
"""


def _propose(src: str):
    model = parse_text(src, "cuda", "k.cu")
    return model, model.kernels[0], registry.propose("cuda.block_size", model, model.kernels[0])


@pytest.mark.parametrize("src, block, combined", [
    (SCAN_MACRO, 512, "buf["), (SCAN_TEMPLATE, 256, "s[tid - d]"), (SCAN_INPLACE, 256, "t[lane - stride]"),
    (BLOCK_MAX, 128, "red["), (SCAN_SHUFFLE, 512, "warp_sums["),
])
def test_block_size_is_not_offered_where_the_block_is_a_segment(src, block, combined):
    model, k, r = _propose(src)
    assert isinstance(r, NotApplicable), r
    assert "block size is part of" in r.reason and f"{block}-element segment" in r.reason, r.reason
    assert combined in r.reason and "\n" not in r.reason
    assert block_segment_results(analyze(model, k), "x", block) == r.reason


@pytest.mark.parametrize("src, exact", [(ELEMENTWISE, True), (ATOMIC_SUM, False), (STENCIL, True),
                                        (WARP_SCAN, True)])
def test_block_size_is_offered_where_the_block_only_shares_the_work(src, exact):
    model, k, r = _propose(src)
    assert not isinstance(r, NotApplicable), r.reason
    assert {c.changes_numerics for c in r} == {not exact}
    # order only: the static loop still follows them
    assert all(follows_in_static("rules", None, c.changes_numerics, c.reorders_only) for c in r)


def test_a_block_that_strides_over_a_row_is_not_a_segment():
    # the block size step refuses this launch for its grid (one block per row); the analysis says why not the block
    model = parse_text(ROW_SUM_BCAST, "cuda", "k.cu")
    facts = analyze(model, model.kernels[0])
    assert block_segment_results(facts, "x", 256) is None
    assert block_size_numerics(facts, "x", 256) == "order"


def test_numerics_of_a_combine_it_cannot_place_are_not_taken_as_equal():
    # a combine stored per element, whose segment is loaded through a pointer of unknown offset: not shown equal
    src = BLOCK_MAX.replace("x[i] : -INFINITY", "x[i * 2 + 1] : -INFINITY").replace(
        "unsigned i = blockIdx.x * blockDim.x + t;", "unsigned i = t;")
    model = parse_text(src, "cuda", "k.cu")
    facts = analyze(model, model.kernels[0])
    assert block_segment_results(facts, "x", 128) is None
    assert block_size_numerics(facts, "x", 128) == "unknown"
    r = registry.propose("cuda.block_size", model, model.kernels[0])
    if not isinstance(r, NotApplicable):
        assert all(not follows_in_static("rules", None, c.changes_numerics, c.reorders_only) for c in r)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("name", ["SCAN_MACRO", "SCAN_TEMPLATE", "SCAN_INPLACE", "BLOCK_MAX", "SCAN_SHUFFLE",
                                  "WARP_SCAN", "ELEMENTWISE", "ATOMIC_SUM", "STENCIL", "ROW_SUM_BCAST"])
def test_the_kernels_are_valid_cuda(name, tmp_path):
    assert_compiles("#include <cuda_runtime.h>\n#include <math.h>\n" + globals()[name], tmp=tmp_path, name="k.cu")
