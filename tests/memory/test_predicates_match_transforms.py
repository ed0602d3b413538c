"""A strategy whose predicate holds is one its transform makes: the facts a predicate reads are the forms its
transform rewrites (the unroll step's compile-time trip counts, the grid-stride step's elementwise shape, the
coarsening step's one-element load, the warp-shuffle finish's shared tree). Kernels written for this test."""

from __future__ import annotations

import pytest

from htam_core.memory.facts import compute_facts
from htam_core.memory.knowledge import load_knowledge
from htam_core.source import parse_text
from htam_core.transforms.registry import NotApplicable, propose

_RUNTIME_LOOP = """__global__ void rowsum(const float* x, float* out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) s += x[r * cols + c];
    out[r] = s;
}
void launch(const float* x, float* out, int rows, int cols) { rowsum<<<(rows + 255) / 256, 256>>>(x, out, rows, cols); }
"""
_CONST_LOOP = """#define TAPS 8
__global__ void fir(const float* x, const float* w, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0.0f;
    for (int t = 0; t < TAPS; ++t) s += w[t] * x[i + t];
    y[i] = s;
}
void launch(const float* x, const float* w, float* y, int n) { fir<<<(n + 255) / 256, 256>>>(x, w, y, n); }
"""
_TWO_D = """__global__ void scale2d(const float* a, float* b, int M, int N) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < M && j < N) b[i * N + j] = 2.0f * a[i * N + j];
}
void launch(const float* a, float* b, int M, int N) {
    dim3 t(16, 16), g((N + 15) / 16, (M + 15) / 16); scale2d<<<g, t>>>(a, b, M, N);
}
"""
_ONE_D = """__global__ void scale1d(const float* a, float* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = 2.0f * a[i];
}
void launch(const float* a, float* b, int n) { scale1d<<<(n + 255) / 256, 256>>>(a, b, n); }
"""
_SERIAL_ROW_MAX = """__global__ void rowmax(const float* x, float* out, int rows, int cols) {
    int r = blockIdx.x;
    if (threadIdx.x != 0) return;
    float m = -1e30f;
    for (int c = 0; c < cols; ++c) m = fmaxf(m, x[r * cols + c]);
    out[r] = m;
}
void launch(const float* x, float* out, int rows, int cols) { rowmax<<<rows, 32>>>(x, out, rows, cols); }
"""
_TREE = """__global__ void bsum(const float* in, float* out, int n) {
    __shared__ float s[256];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + tid;
    s[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = s[0];
}
float launch(const float* in, int n) {
    int blocks = (n + 255) / 256;
    float* partial;
    cudaMalloc(&partial, blocks * sizeof(float));
    bsum<<<blocks, 256>>>(in, partial, n);
    float* host = new float[blocks];
    cudaMemcpy(host, partial, blocks * sizeof(float), cudaMemcpyDeviceToHost);
    float total = 0.0f;
    for (int b = 0; b < blocks; ++b) total += host[b];
    cudaFree(partial);
    delete[] host;
    return total;
}
"""

CASES = [
    ("unroll_loops", _RUNTIME_LOOP, "rowsum"), ("unroll_loops", _CONST_LOOP, "fir"),
    ("grid_stride_loop", _TWO_D, "scale2d"), ("grid_stride_loop", _ONE_D, "scale1d"),
    ("thread_coarsening", _SERIAL_ROW_MAX, "rowmax"), ("thread_coarsening", _TREE, "bsum"),
    ("warp_shuffle_reduction", _SERIAL_ROW_MAX, "rowmax"), ("warp_shuffle_reduction", _TREE, "bsum"),
]


@pytest.mark.parametrize(("strategy", "text", "name"), CASES)
def test_predicate_agrees_with_transform(strategy: str, text: str, name: str) -> None:
    model = parse_text(text, "cuda", "k.cu")
    kernel = model.kernel(name)
    s = load_knowledge().strategy(strategy)
    facts = compute_facts(kernel.features, kernel.language, None, kernel, model)
    made = not isinstance(propose(s.transform, model, kernel), NotApplicable)
    assert (s.applies.evaluate(facts) is not False) == made, (strategy, name, made)


def test_cases_cover_both_verdicts() -> None:
    """Each strategy above is tried on a kernel it makes and on one it refuses (the test can fail either way)."""
    model_made: dict[str, set[bool]] = {}
    for strategy, text, name in CASES:
        model = parse_text(text, "cuda", "k.cu")
        r = propose(load_knowledge().strategy(strategy).transform, model, model.kernel(name))
        model_made.setdefault(strategy, set()).add(not isinstance(r, NotApplicable))
    assert all(v == {True, False} for v in model_made.values()), model_made
