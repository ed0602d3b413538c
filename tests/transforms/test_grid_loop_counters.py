"""Regression: a grid-stride loop a transform writes must not wrap where the kernel it replaces was right.

``for (int i = gid; i < n; i += blockDim.x * gridDim.x)`` overflows on its last step for ``n > INT_MAX - stride``
(undefined for ``int``; an ``unsigned`` wraps below ``n`` and takes elements again), where the kernel's ``int i =
gid; if (i < n)`` is right up to about ``INT_MAX - blockDim.x`` (2^31 floats are 8 GiB: a real input). Every writer
of such a loop counts in 64 bits (``htam_core.transforms._grid_loop``): the kernel's 32-bit index is declared in
the body from a ``long long`` counter, a transform's own counter is ``long long``; a start that is already 64-bit
(``long long``, ``int64_t``, ``size_t``, an alias of one) keeps its type and its variable. Each writer is checked
for both, and the candidates compile with nvcc (sm_90) where it is installed.
"""

from __future__ import annotations

import re
import shutil

import pytest
from transform_helpers import assert_nvcc_compiles, fixture_path, only_candidate

from htam_core.source import parse_text
from htam_core.transforms import registry

HEAD = "#include <cstdint>\n#include <cstddef>\ntypedef int64_t idx_t;\n"
NARROW = ["int", "unsigned", "unsigned int"]
WIDE = ["long long", "int64_t", "size_t", "idx_t"]
NVCC = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")

ELEMENTWISE = HEAD + """
__global__ void scale(float *x, float a, IDX n) {
    IDX i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        x[i] = a * x[i];
    }
}
void run(float *x, float a, IDX n) { scale<<<(n + 255) / 256, 256>>>(x, a, n); }
"""

REDUCTION = HEAD + """
__global__ void total(const float *in, float *out, IDX n) {
    __shared__ float sdata[256];
    unsigned int tid = threadIdx.x;
    IDX i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(out, sdata[0]);
}
void run(const float *in, float *out, IDX n) { total<<<(n + 255) / 256, 256>>>(in, out, n); }
"""

STRIDED = HEAD + """
__global__ void axpy(const float *x, float *y, float a, IDX n) {
    for (IDX i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        y[i] = a * x[i] + y[i];
    }
}
void run(const float *x, float *y, float a, IDX n) { axpy<<<256, 256>>>(x, y, a, n); }
"""


def _body(text: str, kernel: str) -> str:
    start = text.index(f"__global__ void {kernel}(")
    return text[start: text.index("\n}\n", start)]


def _texts(tid: str, src: str, kernel: str) -> list[str]:
    model = parse_text(src, "cuda")
    res = registry.propose(tid, model, model.kernel(kernel))
    assert isinstance(res, list), res.reason
    return [_body(c.new_text, kernel) for c in res]


# ---------------------------------------------------------------- cuda.grid_stride (grid_stride_body_edits)
@pytest.mark.parametrize("idx", NARROW)
def test_grid_stride_declares_a_32_bit_index_from_a_64_bit_counter(idx):
    for body in _texts("cuda.grid_stride", ELEMENTWISE.replace("IDX", idx), "scale"):
        assert ("for (long long htam_gi = blockIdx.x * blockDim.x + threadIdx.x; htam_gi < n; "
                "htam_gi += (long long)blockDim.x * gridDim.x) {") in body
        assert f"{idx} i = ({idx})htam_gi;" in body
        assert not re.search(r"\bi \+=", body)  # the 32-bit index is never stepped


@pytest.mark.parametrize("idx", WIDE)
def test_grid_stride_keeps_a_64_bit_index_as_the_loop_variable(idx):
    for body in _texts("cuda.grid_stride", ELEMENTWISE.replace("IDX", idx), "scale"):
        assert f"for ({idx} i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += ({idx})blockDim.x * gridDim.x)" \
            in body
        assert "htam_gi" not in body


def test_grid_stride_of_an_auto_index_names_its_type_by_decltype():
    src = ELEMENTWISE.replace("IDX i", "auto i").replace("IDX", "int")
    for body in _texts("cuda.grid_stride", src, "scale"):
        assert "decltype(blockIdx.x * blockDim.x + threadIdx.x) i = (decltype(blockIdx.x * blockDim.x + " \
               "threadIdx.x))htam_gi;" in body


# ---------------------------------------------------------------- cuda.coarsen_reduction (_accumulation_text)
@pytest.mark.parametrize(("idx", "counter"), [("int", "long long"), ("unsigned int", "long long"),
                                              ("int64_t", "int64_t"), ("size_t", "size_t")])
def test_coarsen_accumulation_counts_in_64_bits(idx, counter):
    bodies = _texts("cuda.coarsen_reduction", REDUCTION.replace("IDX", idx), "total")
    assert bodies
    for body in bodies:
        assert (f"for ({counter} htam_j = i; htam_j < n; htam_j += ({counter})blockDim.x * gridDim.x)"
                in body), body


# ---------------------------------------------------------------- cuda.vectorize_float4 (vector loops)
@pytest.mark.parametrize("idx", NARROW)
def test_vector_loop_main_and_tail_count_in_64_bits(idx):
    (body,) = _texts("cuda.vectorize_float4", STRIDED.replace("IDX", idx), "axpy")
    assert "long long htam_tail = 0;" in body
    assert ("for (long long htam_v4 = blockIdx.x * blockDim.x + threadIdx.x; htam_v4 < htam_n4; "
            "htam_v4 += blockDim.x * gridDim.x) {") in body
    # the tail starts at htam_tail + start, past INT_MAX for n near it: 64-bit, the loop's variable declared from it
    assert ("for (long long htam_gi = htam_tail + blockIdx.x * blockDim.x + threadIdx.x; htam_gi < n; "
            "htam_gi += blockDim.x * gridDim.x) {") in body
    assert f"{idx} i = ({idx})htam_gi;" in body


@pytest.mark.parametrize("idx", WIDE)
def test_vector_loop_keeps_a_64_bit_variable(idx):
    (body,) = _texts("cuda.vectorize_float4", STRIDED.replace("IDX", idx), "axpy")
    assert f"{idx} htam_tail = 0;" in body and "htam_gi" not in body
    assert f"for ({idx} htam_v4 = " in body
    assert f"for ({idx} i = htam_tail + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)" \
        in body


LANE_ROW = HEAD + """
__global__ void row_scale(const float *x, float *y, IDX rows, IDX cols) {
    IDX row = blockIdx.x;
    if (row >= rows) return;
    for (IDX j = threadIdx.x; j < cols; j += blockDim.x) {
        y[row * cols + j] = 2.0f * x[row * cols + j];
    }
}
void run(const float *x, float *y, IDX rows, IDX cols) { row_scale<<<rows, 256>>>(x, y, rows, cols); }
"""


@pytest.mark.parametrize("idx", NARROW)
def test_a_block_stride_vector_loop_keeps_its_32_bit_counters(idx):
    # only a grid's step can carry a 32-bit counter past the top of its type where the start was right; a block's
    # (or a warp's) step passes the bound by less than a block, and 64-bit counters would cost the row's inner loop
    (body,) = _texts("cuda.vectorize_float4", LANE_ROW.replace("IDX", idx), "row_scale")
    assert f"{idx} htam_tail = 0;" in body and "long long htam" not in body and "htam_gi" not in body
    assert f"for ({idx} htam_v4 = threadIdx.x; htam_v4 < htam_n4; htam_v4 += blockDim.x)" in body
    assert f"for ({idx} j = htam_tail + threadIdx.x; j < cols; j += blockDim.x)" in body


# ---------------------------------------------------------------- cuda.lane_columns (rows split over gridDim.y)
@pytest.mark.parametrize(("idx", "split"), [("int", True), ("int64_t", False)])
def test_lane_columns_row_split_counts_in_64_bits(idx, split):
    text = fixture_path("bias_grad_variants.cu").read_text()
    text = "#include <cstdint>\n" + text.replace("for (int i = tid; i < B * T;", f"for ({idx} i = tid; i < B * T;")
    c = only_candidate("cuda.lane_columns", text, "bias_grad")
    assert c.params["row_groups"]  # the rows are split over the grid's y
    body = _body(c.new_text, "bias_grad")
    if split:
        assert "for (long long htam_gi = blockIdx.y * blockDim.y + threadIdx.y; htam_gi < B * T;" in body
        assert "int i = (int)htam_gi;" in body
    else:
        assert (f"for ({idx} i = blockIdx.y * blockDim.y + threadIdx.y; i < B * T; i += gridDim.y * blockDim.y)"
                in body) and "htam_gi" not in body


# ---------------------------------------------------------------- compile checks
@NVCC
@pytest.mark.parametrize("idx", ["int", "unsigned", "size_t"])
def test_the_written_loops_compile(idx, tmp_path):
    cases = [("cuda.grid_stride", ELEMENTWISE, "scale"), ("cuda.coarsen_reduction", REDUCTION, "total"),
             ("cuda.vectorize_float4", STRIDED, "axpy")]
    for k, (tid, src, kernel) in enumerate(cases):
        model = parse_text(src.replace("IDX", idx), "cuda")
        res = registry.propose(tid, model, model.kernel(kernel))
        assert isinstance(res, list), res.reason
        for j, c in enumerate(res):
            assert_nvcc_compiles(c.new_text, tmp_path, f"{kernel}_{k}_{j}.cu")
