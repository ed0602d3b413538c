"""The column guard of a column sum in its two forms, one normal form (the analysis layer's ``open_guarded_block``):
``if (c < cols) { … }`` ending the body is read as the early return ``if (c >= cols) return;``, so
``cuda.vector_columns`` and ``cuda.lane_columns`` make the same rewrite for both; a guarded block whose meaning
differs from an early return (an else branch, statements after it) is refused in one clear line. Kernels written
here."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from transform_helpers import assert_nvcc_compiles

from htam_core.source import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

LAUNCH = """
void go(const float* A, float* s, int rows, int cols) {
    column_sum<<<(cols + 127) / 128, 128>>>(A, s, rows, cols);
}
"""

EARLY = """__global__ void column_sum(const float* A, float* sums, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float s = 0.0f;
    for (int r = 0; r < rows; ++r)
        s += A[r * cols + c];
    sums[c] = s;
}"""

GUARDED = {
    "braces": """__global__ void column_sum(const float* A, float* sums, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) {
    float s = 0.0f;
    for (int r = 0; r < rows; ++r)
        s += A[r * cols + c];
    sums[c] = s; }
}""",
    "flipped": """__global__ void column_sum(const float* A, float* sums, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if ((cols > c)) {
        float s = 0.0f;
        // sum down the column
        for (int r = 0; r < rows; ++r) { s += A[r * cols + c]; }
        sums[c] = s;
    }
}""",
}

REFUSED = {
    "else": ("""__global__ void column_sum(const float* A, float* sums, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) {
        float s = 0.0f;
        for (int r = 0; r < rows; ++r) s += A[r * cols + c];
        sums[c] = s;
    } else {
        sums[0] = 0.0f;
    }
}""", "has an else branch"),
    "after": ("""__global__ void column_sum(const float* A, float* sums, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) {
        float s = 0.0f;
        for (int r = 0; r < rows; ++r) s += A[r * cols + c];
        sums[c] = s;
    }
    if (c == 0) sums[cols] = 1.0f;
}""", "statements follow that block"),
}


def _propose(tid: str, text: str, kernel: str = "column_sum"):
    model = parse_text(text, "cuda")
    return registry.propose(tid, model, model.kernel(kernel))


def _body(text: str) -> str:
    return text.split("{", 1)[1].rsplit("void go", 1)[0]


@pytest.mark.parametrize("name", sorted(GUARDED))
def test_a_guarded_block_gets_the_same_vector_columns_as_an_early_return(name):
    res = _propose("cuda.vector_columns", GUARDED[name] + LAUNCH)
    assert not isinstance(res, NotApplicable), res.reason
    early = _propose("cuda.vector_columns", EARLY + LAUNCH)
    assert not isinstance(early, NotApplicable), early.reason
    assert "if (c >= cols) return;" in res[0].new_text
    strip = lambda t: [ln.strip() for ln in _body(t).splitlines() if ln.strip() and "if (c" not in ln]  # noqa: E731
    assert strip(res[0].new_text) == strip(early[0].new_text)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_guard_that_is_no_early_return_is_refused_in_one_line(name):
    text, needle = REFUSED[name]
    res = _propose("cuda.vector_columns", text + LAUNCH)
    assert isinstance(res, NotApplicable)
    assert needle in res.reason and "\n" not in res.reason, res.reason


LANES = """#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
__global__ void colsum_warp(float *out, const float *x, int rows, int cols)
{
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int c = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
    GUARD_OPEN
    float s = 0.0f;
    for (int r = warp.thread_rank(); r < rows; r += warp.size()) {
        s += x[r * cols + c];
    }
    s = cg::reduce(warp, s, cg::plus<float>{});
    if (warp.thread_rank() == 0) {
        out[c] = out[c] + s;
    }
    GUARD_CLOSE
}
void run(float *out, const float *x, int rows, int cols, int block_size) {
    colsum_warp<<<(cols * 32 + block_size - 1) / block_size, block_size>>>(out, x, rows, cols);
}
"""


def test_lane_columns_reads_the_guarded_block_as_the_early_return():
    early = _propose("cuda.lane_columns", LANES.replace("GUARD_OPEN", "if (c >= cols) { return; }").replace(
        "GUARD_CLOSE", ""), "colsum_warp")
    guarded = _propose("cuda.lane_columns", LANES.replace("GUARD_OPEN", "if (c < cols) {").replace(
        "GUARD_CLOSE", "}"), "colsum_warp")
    assert not isinstance(early, NotApplicable), early.reason
    assert not isinstance(guarded, NotApplicable), guarded.reason
    assert guarded[0].new_text == early[0].new_text


def test_lane_columns_refuses_statements_after_the_guarded_block():
    res = _propose("cuda.lane_columns", LANES.replace("GUARD_OPEN", "if (c < cols) {").replace(
        "GUARD_CLOSE", "}\n    __syncwarp();"), "colsum_warp")
    assert isinstance(res, NotApplicable)
    assert "statements follow that block" in res.reason, res.reason


def test_the_guarded_result_compiles(tmp_path: Path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    res = _propose("cuda.vector_columns", GUARDED["flipped"] + LAUNCH)
    assert not isinstance(res, NotApplicable), res.reason
    assert_nvcc_compiles(res[0].new_text, tmp_path)


def test_an_outer_block_that_is_not_the_column_guard_becomes_its_own_early_return():
    text = """__global__ void column_sum(const float* A, float* sums, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    if (rows > 0) {
        float s = 0.0f;
        for (int r = 0; r < rows; ++r) s += A[r * cols + c];
        sums[c] = s;
    }
}"""
    res = _propose("cuda.vector_columns", text + LAUNCH)
    assert not isinstance(res, NotApplicable), res.reason
    body = _body(res[0].new_text)
    assert "if (c >= cols) return;" in body and "if (rows <= 0) return;" in body
    assert body.index("if (rows <= 0) return;") < body.index("for (int r = 0")
