"""The direct-launch template reads each pointer's shape from its indices and their ranges (loop bounds, the bounds
check, ``e % m``), not from the parameter names: a per-column vector indexed ``gamma[c]`` with ``c < cols`` is a
vector of ``COLS``, ``bias[idx % hidden]`` a vector of ``HIDDEN`` (and ``hidden`` its size symbol, not a guessed
``1``); where the index is not such a range the guess stays and says why."""

from __future__ import annotations

import tomllib

import pytest

from htam_core.harness.template import write_template
from htam_core.harness.template_cuda import kernel_shapes
from htam_core.source.analysis import sym
from htam_core.source.api import parse_text

LAYERNORM = '''
import cupy as cp
_src = r"""
extern "C" __global__
void row_norm(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
              float* __restrict__ y, int rows, int cols, float eps)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* xr = x + (long long)r * cols;
    float m = 0.f;
    for (int c = 0; c < cols; ++c) m += xr[c];
    m /= cols;
    for (int c = 0; c < cols; c++) y[(long long)r * cols + c] = (xr[c] - m) * w[c] + b[c];
}
"""
_k = cp.RawKernel(_src, "row_norm")
'''

BIAS = '''
from torch.utils.cpp_extension import load_inline
src = r"""
__global__ void bias_act(const float* __restrict__ x, const float* __restrict__ bias, float* __restrict__ out,
                         int64_t total, int64_t width)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        out[i] = fmaxf(x[i] + bias[i % width], 0.0f);
    }
}
"""
'''

GRID_STRIDE_2D = """
__global__ void add_rows(const float* a, const float* v, float* o, int m, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < m * n; i += blockDim.x * gridDim.x)
        o[i] = a[i] + v[i % n];
}
"""

COLUMNS = """
__global__ void col_scale(const float* in, const float* s, float* out, int rows, int cols)
{
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows && c < cols)
        out[r * cols + c] = in[r * cols + c] * s[r];
}
"""


def _inputs(text: str, lang: str, name: str, path: str) -> dict[str, dict]:
    model = parse_text(text, lang, path=path)
    table = tomllib.loads(write_template(model, model.kernel(name)))["kernel"][name]
    return {i["name"]: i for i in table["inputs"]}


def test_a_per_column_vector_is_read_from_its_loop_bound_not_the_matrix_guess() -> None:
    ins = _inputs(LAYERNORM, "python", "row_norm", "row_norm.py")
    assert ins["x"]["shape"] == ["ROWS", "COLS"] and ins["y"]["shape"] == ["ROWS", "COLS"]
    assert ins["w"]["shape"] == ["COLS"] and ins["b"]["shape"] == ["COLS"]
    assert ins["rows"]["value"] == "ROWS" and ins["cols"]["value"] == "COLS"


def test_a_modulo_index_is_a_vector_of_its_divisor_and_the_divisor_becomes_a_size() -> None:
    model = parse_text(BIAS, "python", path="bias_act.py")
    text = write_template(model, model.kernel("bias_act"))
    ins = {i["name"]: i for i in tomllib.loads(text)["kernel"]["bias_act"]["inputs"]}
    assert ins["bias"]["shape"] == ["WIDTH"] and ins["width"]["value"] == "WIDTH"
    assert ins["x"]["shape"] == ins["out"]["shape"] == [ins["total"]["value"]]
    assert "WIDTH" in tomllib.loads(text)["kernel"]["bias_act"]["sizes"][0]


def test_a_grid_stride_loop_bound_and_a_modulo_give_a_flat_matrix_and_a_row_vector() -> None:
    model = parse_text(GRID_STRIDE_2D, "cuda", path="add_rows.cu")
    shapes = kernel_shapes(model, model.kernel("add_rows"))
    assert shapes["a"] == shapes["o"] == [sym("m") * sym("n")]
    assert shapes["v"] == [sym("n")]


def test_a_2d_bounds_check_gives_rows_and_columns_and_a_row_indexed_vector() -> None:
    model = parse_text(COLUMNS, "cuda", path="col_scale.cu")
    shapes = kernel_shapes(model, model.kernel("col_scale"))
    assert shapes["in"] == shapes["out"] == [sym("rows"), sym("cols")]
    assert shapes["s"] == [sym("rows")]


def test_a_guarded_variable_bounds_its_whole_index_even_with_an_offset() -> None:
    text = """
__global__ void twice(const float* in, float* out, int n, int pad)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x + pad;
    if (i < n) out[i] = in[i] * 2.0f;
}
"""
    model = parse_text(text, "cuda", path="twice.cu")
    assert kernel_shapes(model, model.kernel("twice"))["in"] == [sym("n")]


def test_an_index_without_a_bounds_check_keeps_the_guess_and_says_why() -> None:
    text = """
__global__ void twice(const float* in, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i] * 2.0f;
}
"""
    model = parse_text(text, "cuda", path="twice.cu")
    shapes = kernel_shapes(model, model.kernel("twice"))
    assert isinstance(shapes["in"], str) and "line 5" in shapes["in"]
    written = write_template(model, model.kernel("twice"))
    assert "guessed shape (its index i (line 5)" in written


@pytest.mark.parametrize(("body", "bounded"), [
    ("sm[threadIdx.x] = (i < n) ? in[i] : 0.0f;", True),                       # a ?: guard
    ("if (threadIdx.x < 128 && i < n) { sm[threadIdx.x] = in[i]; }", True),     # an && term of an if
    ("if (i >= n) { sm[threadIdx.x] = 0.0f; } else { sm[threadIdx.x] = in[i]; }", False),  # else: not read
    ("sm[threadIdx.x] = (i < n) ? 0.0f : in[i];", False),                       # the false branch
])
def test_the_bound_of_the_condition_around_an_access_is_its_range(body: str, bounded: bool) -> None:
    text = f"""
__global__ void load_sum(const float* in, float* out, unsigned int n)
{{
    __shared__ float sm[256];
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    {body}
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = sm[0];
}}
"""
    model = parse_text(text, "cuda", path="load_sum.cu")
    shape = kernel_shapes(model, model.kernel("load_sum"))["in"]
    assert (shape == [sym("n")]) is bounded
    assert bounded or isinstance(shape, str)
