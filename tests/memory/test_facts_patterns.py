"""The pattern facts (``matmul_like``, ``reduction_like``) come from the analysis layer: what a kernel computes
(accumulators, strides, shared trees, collective calls), not how its syntax looks."""

from __future__ import annotations

import pytest

from htam_core.editor.audit import known_pattern
from htam_core.memory.facts import compute_facts, kernel_analysis
from htam_core.source.api import parse_text

KERNELS = {
    # elementwise with a grid-stride loop (llm.c add_bias): syntactically a loop with 1-D indices
    "grid_stride_bias": ("""
__global__ void grid_stride_bias(float* out, const float* bias, int B, int T, int OC) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int stride = blockDim.x * gridDim.x;
    for (int i = idx; i < B * T * OC; i += stride) {
        int col = i % OC;
        out[i] += bias[col];
    }
}""", None),
    # elementwise through float4 with a math call (llm.c gelu_forward_kernel2 style)
    "gelu_vec": ("""
__global__ void gelu_vec(float4* out, const float4* inp, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float4 v = inp[i];
        float r[4] = {v.x, v.y, v.z, v.w};
        for (int k = 0; k < 4; ++k) {
            r[k] = 0.5f * r[k] * (1.0f + tanhf(0.79788456f * r[k]));
        }
        out[i] = make_float4(r[0], r[1], r[2], r[3]);
    }
}""", None),
    "row_sum": ("""
__global__ void row_sum(float* out, const float* x, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float acc = 0.0f;
    for (int c = 0; c < cols; c++) {
        acc += x[r * cols + c];
    }
    out[r] = acc;
}""", "reduction"),
    "row_softmax": ("""
__global__ void row_softmax(float* out, const float* x, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float m = -1e30f;
    for (int c = 0; c < cols; c++) m = fmaxf(m, x[r * cols + c]);
    float s = 0.0f;
    for (int c = 0; c < cols; c++) s += expf(x[r * cols + c] - m);
    for (int c = 0; c < cols; c++) out[r * cols + c] = expf(x[r * cols + c] - m) / s;
}""", "softmax"),
    "tree": ("""
__global__ void tree(float* out, const float* in, int n) {
    __shared__ float sdata[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}""", "reduction"),
    "shuffle": ("""
__global__ void shuffle(float* out, const float* in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? in[i] : 0.0f;
    v += __shfl_down_sync(0xffffffff, v, 16);
    if ((threadIdx.x & 31) == 0) out[i / 32] = v;
}""", "reduction"),
    "atomic_sum": ("""
__global__ void atomic_sum(float* out, const float* in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(out, in[i]);
}""", "reduction"),
    "mm_nn": ("""
__global__ void mm_nn(float* C, const float* A, const float* B, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; k++) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}""", "matmul"),
    # llm.c matmul_forward_kernel1: both operands stride 1 in the loop variable (NT), different thread dims
    "mm_nt": ("""
__global__ void mm_nt(float* out, const float* inp, const float* weight, int BT, int C, int OC) {
    int bt = blockIdx.x * blockDim.x + threadIdx.x;
    int oc = blockIdx.y * blockDim.y + threadIdx.y;
    if (bt < BT && oc < OC) {
        float val = 0.0f;
        const float* inp_bt = inp + bt * C;
        const float* wrow = weight + oc * C;
        for (int i = 0; i < C; i++) val += inp_bt[i] * wrow[i];
        out[bt * OC + oc] = val;
    }
}""", "matmul"),
    # a matrix-vector product: y does not depend on the thread, no reuse across threads of one operand pair
    "matvec": ("""
__global__ void matvec(float* out, const float* A, const float* y, int M, int N) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= M) return;
    float acc = 0.0f;
    for (int c = 0; c < N; c++) acc += A[r * N + c] * y[c];
    out[r] = acc;
}""", "reduction"),
    # a prefix scan writes every element it reads: not a reduction
    "scan": ("""
__global__ void scan(float* out, const float* x, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float acc = 0.0f;
    for (int c = 0; c < cols; c++) {
        acc += x[r * cols + c];
        out[r * cols + c] = acc;
    }
}""", None),
}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_pattern_from_the_analysis(name: str):
    src, expected = KERNELS[name]
    k = parse_text(src, "cuda").kernel(name)
    facts = compute_facts(k.features, k.language, None, k)
    assert known_pattern(facts) == expected, kernel_analysis(k).reduction_evidence()


def test_reduction_evidence_names_its_reason():
    k = parse_text(KERNELS["tree"][0], "cuda").kernel("tree")
    ev = kernel_analysis(k).reduction_evidence()
    assert any("shared-memory tree" in e for e in ev)
    k = parse_text(KERNELS["atomic_sum"][0], "cuda").kernel("atomic_sum")
    # kernel_analysis reads the kernel's own text: line 3 of it
    assert kernel_analysis(k).reduction_evidence() == ("line 3: atomicAdd",)


def test_unknown_without_the_kernel():
    k = parse_text(KERNELS["row_sum"][0], "cuda").kernel("row_sum")
    facts = compute_facts(k.features, k.language, None, None)
    assert facts["matmul_like"] is None and facts["reduction_like"] is None


def test_triton_patterns():
    src = '''
import triton
import triton.language as tl

@triton.jit
def rowsum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n + cols, mask=cols < n, other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))

@triton.jit
def mm(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])
    b = tl.load(b_ptr + offs[:, None] * BLOCK + offs[None, :])
    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], tl.dot(a, b))
'''
    model = parse_text(src, "python")
    got = {k.name: known_pattern(compute_facts(k.features, k.language, None, k)) for k in model.kernels}
    assert got == {"rowsum": "reduction", "mm": "matmul"}
