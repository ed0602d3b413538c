"""Regression tests for the direct-launch template of a ``.cu`` kernel with no launch site: a 2-D kernel gets a
2-D block and a grid over its bounds check, a hard-coded block extent sets the block and grid, a store in a
``__device__`` helper names the output, and a ``const T*`` is never taken as the output."""

from __future__ import annotations

import tomllib

from htam_core.harness.template import write_template
from htam_core.source.analysis.callee_writes import callee_writes
from htam_core.source.api import parse_text

MATMUL = """
__global__ void matmul(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}
"""

FIXED = """
__global__ void scale4(const float* in, float* out, int n) {
    int i = 64 * blockIdx.x + 4 * threadIdx.x;
    if (i + 3 < n) {
        out[i] = 2.0f * in[i];
        out[i + 1] = 2.0f * in[i + 1];
        out[i + 2] = 2.0f * in[i + 2];
        out[i + 3] = 2.0f * in[i + 3];
    }
}
"""

HELPER = """
__device__ void apply(float* out, const float* in, int i) { out[i] = 2.0f * in[i]; }

__global__ void k(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) apply(out, in, i);
}
"""

NO_STORE = """
__global__ void k(float* out, const float* in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    (void)i;
}
"""


def _table(src: str, name: str) -> dict:
    model = parse_text(src, "cuda", "k.cu")
    return tomllib.loads(write_template(model, model.kernel(name)))["kernel"][name]


def test_a_2d_kernel_without_launch_gets_a_2d_block_and_a_grid_over_its_bounds() -> None:
    t = _table(MATMUL, "matmul")
    assert t["block"] == "(16, 16, 1)"
    assert t["grid"] == "(cdiv(N, 16), cdiv(M, 16))"
    assert t["outputs"] == ["C"]


def test_a_hard_coded_block_extent_sets_block_and_grid() -> None:
    t = _table(FIXED, "scale4")
    assert t["block"] == "16"  # 64 elements per block, 4 per thread
    assert t["grid"] == "(cdiv(N, 64),)"


def test_a_store_in_a_device_helper_names_the_output() -> None:
    model = parse_text(HELPER, "cuda", "k.cu")
    assert callee_writes(model, model.kernel("k")) == {"out": "apply"}
    t = _table(HELPER, "k")
    assert t["outputs"] == ["out"]
    assert next(i for i in t["inputs"] if i["name"] == "out")["init"] == "empty"
    assert next(i for i in t["inputs"] if i["name"] == "in_")["init"] == "randn"


def test_a_const_pointer_is_never_the_guessed_output() -> None:
    t = _table(NO_STORE, "k")
    assert t["outputs"] == ["out"]


def test_an_unreadable_fixed_extent_is_a_todo() -> None:
    src = FIXED.replace("64 * blockIdx.x + 4 * threadIdx.x", "66 * blockIdx.x + 4 * threadIdx.x")
    model = parse_text(src, "cuda", "k.cu")
    text = write_template(model, model.kernel("scale4"))
    assert "TODO: the index i = 66*blockIdx.x + 4*threadIdx.x implies a fixed block" in text
