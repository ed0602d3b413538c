"""A loop whose operands the threads of a block share ranks the shared-memory tile before 16-byte loads.

``matmul_like`` is read off the affine index facts: the loop combines two pointers indexed by the loop variable
with different thread dimensions (``P[i * d + k]`` with ``i`` along y, ``Q[j * d + k]`` with ``j`` along x), so every
thread of a block row re-reads the same row of ``P`` and every thread of a column the same row of ``Q``. A tile cuts
that traffic by the tile size; float4 loads only cut instructions, and the float4 form is not the loop the tile
reads. The GPU's profile of such a kernel is memory-bound with uncoalesced reads (``Q``'s rows are ``d`` apart
along x), which lifts the memory-access direction: the ranking must hold there too. Kernels without cross-thread
reuse (elementwise, a dot of two rows per thread, a row sum) still put vector loads first among the makeable steps.
Kernels written for this test.
"""

from __future__ import annotations

import pytest

from htam_core.memory import Ranker, state_from_profile
from htam_core.memory.facts import compute_facts
from htam_core.memory.knowledge import load_knowledge
from htam_core.source import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable
from htam_core.types.profile import Bottleneck, Profile

SQDIST = """__global__ void k(const float *P, const float *Q, float *D, int m, int n, int d) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i < m && j < n) {
    float acc = 0.f;
    for (int k = 0; k < d; ++k) { float diff = P[i * d + k] - Q[j * d + k]; acc += diff * diff; }
    D[i * n + j] = acc;
  }
}
void run(const float* a, const float* b, float* c, int m, int n, int d) {
    dim3 block(16, 16), grid((n + 15) / 16, (m + 15) / 16);
    k<<<grid, block>>>(a, b, c, m, n, d);
}
"""
SGEMM = """__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float s = 0.0f;
        for (int t = 0; t < K; t++) s += A[row * K + t] * B[t * N + col];
        C[row * N + col] = s;
    }
}
void run(const float* a, const float* b, float* c, int m, int n, int d) {
    dim3 block(16, 16), grid((n + 15) / 16, (m + 15) / 16);
    k<<<grid, block>>>(a, b, c, m, n, d);
}
"""
GRAM = """__global__ void k(const float* __restrict__ X, float* __restrict__ G, int rows, int dim) {
    const int a = blockIdx.y * blockDim.y + threadIdx.y;
    const int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (a >= rows || b >= rows) return;
    float dot = 0.f;
    for (int c = 0; c < dim; ++c) dot += X[a * dim + c] * X[b * dim + c];
    G[a * rows + b] = dot;
}
void run(const float* x, float* g, int rows, int dim) {
    dim3 block(16, 16), grid((rows + 15) / 16, (rows + 15) / 16);
    k<<<grid, block>>>(x, g, rows, dim);
}
"""
BATCHED = """__global__ void k(const float* A, const float* B, float* C, int batch, int m, int n, int d) {
    int z = blockIdx.z;
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (z < batch && r < m && c < n) {
        const float* a = A + (size_t)z * m * d;
        const float* b = B + (size_t)z * n * d;
        float acc = 0;
        for (int e = 0; e < d; ++e) acc += a[r * d + e] * b[c * d + e];
        C[((size_t)z * m + r) * n + c] = acc;
    }
}
void run(const float* a, const float* b, float* c, int batch, int m, int n, int d) {
    dim3 block(16, 16), grid((n + 15) / 16, (m + 15) / 16, batch);
    k<<<grid, block>>>(a, b, c, batch, m, n, d);
}
"""
ELEMENTWISE = """__global__ void k(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] * 2.0f + y[i];
}
"""
ROW_DOT = """__global__ void k(const float* x, const float* y, float* out, int rows, int d) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float s = 0.f;
        for (int e = 0; e < d; ++e) s += x[r * d + e] * y[r * d + e];
        out[r] = s;
    }
}
"""
ROW_SUM = """__global__ void k(const float* x, float* out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.f;
    for (int c = 0; c < cols; ++c) s += x[r * cols + c];
    out[r] = s;
}
"""
REUSE = {"sqdist": SQDIST, "sgemm": SGEMM, "gram": GRAM, "batched": BATCHED}
NO_REUSE = {"elementwise": ELEMENTWISE, "row_dot": ROW_DOT, "row_sum": ROW_SUM}
#: the steps the rules engine makes on these kernels, among which the first is tried first
MAKEABLE = ("smem_tiling", "vectorize_loads", "warp_per_row", "block_per_row", "grid_stride_loop", "cuda_block_size")


def _profile(measured: bool) -> Profile:
    """The static profile, or one like the GPU's for these kernels: memory-bound, ncu's uncoalesced-access rule,
    memory speed-of-light far above compute."""
    if not measured:
        return Profile("k", bottleneck=Bottleneck("memory-bound"))
    return Profile("k", bottleneck=Bottleneck("memory-bound"), mode="gpu", sol={"memory_pct": 85.0, "compute_pct": 20.0},
                   ncu_rules=[{"rule": "UncoalescedGlobalAccess", "message": "", "estimated_speedup_pct": 40.0}])


def _ranked(text: str, measured: bool) -> list[str]:
    k = parse_text(text, "cuda", "r.cu").kernel("k")
    profile = _profile(measured)
    steps = Ranker(load_knowledge(), None).rank(state_from_profile(profile), [], k.features, k.language, profile,
                                                top=40, kernel=k)
    return [s.strategy for s in steps]


@pytest.mark.parametrize("measured", [False, True])
@pytest.mark.parametrize("name", sorted(REUSE))
def test_cross_thread_reuse_ranks_the_tile_before_vector_loads(name, measured):
    k = parse_text(REUSE[name], "cuda", "r.cu").kernel("k")
    assert compute_facts(k.features, k.language, kernel=k)["matmul_like"] is True
    names = _ranked(REUSE[name], measured)
    assert "smem_tiling" in names, names
    if "vectorize_loads" in names:
        assert names.index("smem_tiling") < names.index("vectorize_loads"), names
    assert [s for s in names if s in MAKEABLE][0] == "smem_tiling", names
    model = parse_text(REUSE[name], "cuda", "r.cu")
    made = registry.propose("cuda.smem_tiling_matmul", model, model.kernel("k"))
    assert not isinstance(made, NotApplicable), made.reason  # the step ranked first is made


@pytest.mark.parametrize("measured", [False, True])
@pytest.mark.parametrize("name", sorted(NO_REUSE))
def test_without_reuse_vector_loads_stay_ahead_of_any_tile(name, measured):
    k = parse_text(NO_REUSE[name], "cuda", "r.cu").kernel("k")
    assert compute_facts(k.features, k.language, kernel=k)["matmul_like"] is False
    names = _ranked(NO_REUSE[name], measured)
    assert "smem_tiling" not in names and "vectorize_loads" in names, names
    if name == "elementwise":  # the row loops rank the warp per row first; float4 is the next memory step
        assert [s for s in names if s in MAKEABLE][0] == "vectorize_loads", names


@pytest.mark.parametrize("name", sorted(REUSE))
def test_float4_defers_to_the_tile_it_would_make_unreachable(name):
    """The tile step reads the scalar loop: where it is made, the loop form of float4 is not, saying why (the NN
    sgemm's B walks k with stride N: float4 refuses it for that, before the tile is asked)."""
    model = parse_text(REUSE[name], "cuda", "r.cu")
    got = registry.propose("cuda.vectorize_float4", model, model.kernel("k"))
    assert isinstance(got, NotApplicable) and "\n" not in got.reason
    why = "is not a stride-1 access" if name == "sgemm" else "shared-memory tile is made on it"
    assert why in got.reason, got.reason


def test_float4_is_made_where_the_tile_is_not():
    """No launch in the file: the tile cannot size its blocks, so the loop form of float4 stays the step."""
    text = SQDIST.split("void run")[0]
    model = parse_text(text, "cuda", "r.cu")
    assert isinstance(registry.propose("cuda.smem_tiling_matmul", model, model.kernel("k")), NotApplicable)
    got = registry.propose("cuda.vectorize_float4", model, model.kernel("k"))
    assert not isinstance(got, NotApplicable), got.reason


def test_the_tiled_kernel_no_longer_defers():
    model = parse_text(SQDIST, "cuda", "r.cu")
    (tiled, *_) = registry.propose("cuda.smem_tiling_matmul", model, model.kernel("k"))
    again = parse_text(tiled.new_text, "cuda", "r.cu")
    got = registry.propose("cuda.vectorize_float4", again, again.kernel("k"))
    assert not (isinstance(got, NotApplicable) and "tile is made" in got.reason)
