"""A convolution's tap loop is not a matmul's K loop (``KernelFacts.matmul_loops``): its image read moves with the
loop variable along the thread's own axis (a window of the thread's neighbourhood), whatever the spelling: a 2-D
depthwise tap nest over a channel plane, a 1-D filter, a read through a pointer-offset local, taps written as
``y - R + dy``. A real dot over a shared k (sgemm, NT layout, Gram X X^T, batched) stays one, as does the channel
loop of a direct convolution (the k of its implicit GEMM)."""

from __future__ import annotations

import pytest

from htam_core.source.analysis import analyze
from htam_core.source.api import parse_text

CONVS = {
    "depthwise_plane": """
__global__ void k(const float* in, const float* w, float* out, int C, int H, int W) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int c = blockIdx.z;
    if (x >= W || y >= H) return;
    float acc = 0.f;
    for (int dy = 0; dy < 3; ++dy)
        for (int dx = 0; dx < 3; ++dx) {
            int yy = y + dy - 1, xx = x + dx - 1;
            if (yy >= 0 && yy < H && xx >= 0 && xx < W)
                acc += in[((size_t)c * H + yy) * W + xx] * w[c * 9 + dy * 3 + dx];
        }
    out[((size_t)c * H + y) * W + x] = acc;
}""",
    "conv1d": """
__global__ void k(const float* in, const float* w, float* out, int n, int taps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int f = blockIdx.y;
    if (i >= n) return;
    float s = 0.0f;
    for (int j = 0; j < taps; ++j) s += in[i + j] * w[f * taps + j];
    out[f * n + i] = s;
}""",
    "pointer_local": """
__global__ void k(const float* in, const float* w, float* out, int H, int W) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int c = blockIdx.z;
    if (x >= W - 2 || y >= H - 2) return;
    const float* p = in + ((size_t)c * H + y) * W + x;
    float acc = 0.0f;
    for (int dy = 0; dy < 3; ++dy)
        for (int dx = 0; dx < 3; ++dx)
            acc += p[dy * W + dx] * w[c * 9 + dy * 3 + dx];
    out[((size_t)c * H + y) * W + x] = acc;
}""",
    "radius": """
#define R 2
__global__ void k(const float* img, const float* filt, float* out, int H, int W) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int f = blockIdx.z;
    if (col < R || row < R || col >= W - R || row >= H - R) return;
    float v = 0.0f;
    for (int i = 0; i <= 2 * R; i++)
        for (int j = 0; j <= 2 * R; j++)
            v += img[(row - R + i) * W + (col - R + j)] * filt[f * 25 + i * 5 + j];
    out[(f * H + row) * W + col] = v;
}""",
}

MATMULS = {
    "sgemm": """
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int kk = 0; kk < K; ++kk) acc += A[row * K + kk] * B[kk * N + col];
        C[row * N + col] = acc;
    }
}""",
    "small_k": """
__global__ void k(const float* A, const float* B, float* C, int M, int N) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int kk = 0; kk < 3; ++kk) acc += A[row * 3 + kk] * B[kk * N + col];
        C[row * N + col] = acc;
    }
}""",
    "gram": """
__global__ void k(const float* X, float* G, int n, int d) {
    int a = blockIdx.y * blockDim.y + threadIdx.y;
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (a < n && b < n) {
        float s = 0.0f;
        for (int c = 0; c < d; ++c) s += X[a * d + c] * X[b * d + c];
        G[a * n + b] = s;
    }
}""",
    "batched": """
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    int bt = blockIdx.z;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int kk = 0; kk < K; ++kk)
            acc += A[(size_t)bt * M * K + row * K + kk] * B[(size_t)bt * K * N + kk * N + col];
        C[(size_t)bt * M * N + row * N + col] = acc;
    }
}""",
    "direct_conv_channels": """
__global__ void k(const float* in, const float* w, float* out, int Cin, int H, int W) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int oc = blockIdx.z;
    if (x >= W || y >= H) return;
    float acc = 0.0f;
    for (int ic = 0; ic < Cin; ++ic) acc += in[(ic * H + y) * W + x] * w[oc * Cin + ic];
    out[(oc * H + y) * W + x] = acc;
}""",
}


def _facts(src: str):
    model = parse_text(src, "cuda")
    return analyze(model, model.kernel("k"))


@pytest.mark.parametrize("src", CONVS.values(), ids=CONVS.keys())
def test_a_tap_loop_is_not_a_matmul_loop(src):
    f = _facts(src)
    assert f.accumulation_loops()  # it still accumulates: a reduction over the window
    assert not f.matmul_loops()


@pytest.mark.parametrize("src", MATMULS.values(), ids=MATMULS.keys())
def test_a_dot_over_a_shared_dimension_stays_a_matmul_loop(src):
    assert _facts(src).matmul_loops()
