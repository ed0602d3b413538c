"""``cuda.fast_math`` on overloaded math calls (``exp(v)``, ``std::log(s)``, ``pow(a, b)``): rewritten when the
argument is a float in every instantiation of the kernel in the file, refused in one line when some
instantiation runs it in double, left alone when its type is double or unknown."""

from __future__ import annotations

import shutil

import pytest

from htam_core.source.api import parse_text
from htam_core.transforms.registry import propose
from tests.support.nvcc_check import assert_compiles

TEMPLATE = """#include <cuda_runtime.h>
template <typename scalar_t, typename acc_t>
__global__ void row_lse(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    acc_t m = (acc_t)x[r * cols];
    for (int c = 1; c < cols; ++c) m = max(m, static_cast<acc_t>(x[r * cols + c]));
    acc_t s = 0;
    for (int c = 0; c < cols; ++c) s += BODY;
    y[r] = (scalar_t)(m + TAIL);
}
void run_f(const float* x, float* y, int rows, int cols) { row_lse<float, float><<<(rows + 127) / 128, 128>>>(x, y, rows, cols); }
EXTRA
"""

DOUBLE_LAUNCH = ("void run_d(const double* x, double* y, int rows, int cols) "
                 "{ row_lse<double, double><<<(rows + 127) / 128, 128>>>(x, y, rows, cols); }")

#: (exp-side spelling, log-side spelling, the calls rewritten): float in every instantiation
FLOAT_SPELLINGS = [
    ("exp((acc_t)x[r * cols + c] - m)", "log(s)", ["exp", "log"]),
    ("std::exp(static_cast<acc_t>(x[r * cols + c]) - m)", "std::log(s)", ["exp", "log"]),
    ("pow((acc_t)x[r * cols + c] - m, 2.0f)", "log2(s + 1.0f)", ["log2", "pow"]),
    ("exp(-(m - (acc_t)x[r * cols + c]))", "log10(s > 0.0f ? s : 1.0f)", ["exp", "log10"]),
]


def _fast(text: str, path: str = "k.cu"):
    model = parse_text(text, "cuda", path)
    return propose("cuda.fast_math", model, model.kernels[0])


def _nvcc(tmp_path, text: str) -> None:
    assert_compiles(text, tmp=tmp_path, name="k.cu")


def _file(body: str, tail: str, extra: str = "") -> str:
    return TEMPLATE.replace("BODY", body).replace("TAIL", tail).replace("EXTRA", extra)


@pytest.mark.parametrize(("body", "tail", "names"), FLOAT_SPELLINGS)
def test_float_instantiation_is_rewritten(tmp_path, body: str, tail: str, names: list[str]) -> None:
    cands = _fast(_file(body, tail))
    assert isinstance(cands, list) and len(cands) == 1, cands
    assert cands[0].params["calls"] == names
    new = cands[0].new_text
    for n in names:
        assert f"__{n}f(" in new
    assert "std::__" not in new
    if shutil.which("nvcc"):
        _nvcc(tmp_path, new)


@pytest.mark.parametrize(("body", "tail", "names"), FLOAT_SPELLINGS[:2])
def test_a_double_instantiation_refuses_in_one_line(body: str, tail: str, names: list[str]) -> None:
    r = _fast(_file(body, tail, DOUBLE_LAUNCH))
    assert not isinstance(r, list)
    assert "runs in double for an instantiation of row_lse" in r.reason and "\n" not in r.reason


@pytest.mark.parametrize(("body", "tail"), [
    ("exp((double)x[r * cols + c] - m)", "log((double)s)"),  # cast to double: a double call
    ("exp(x[r * cols + c] * 2.0)", "log(s * 1.0)"),  # a double literal promotes
    ("exp(unknown_value(c))", "log(unknown_value(s))"),  # unknown type: left out
])
def test_double_or_unknown_arguments_are_not_rewritten(body: str, tail: str) -> None:
    extra = "__device__ float unknown_value(float v) { return v; }"
    text = _file(body, tail).replace("template <typename scalar_t", extra + "\ntemplate <typename scalar_t", 1)
    r = _fast(text)
    assert not isinstance(r, list) and "has no single-precision math call" in r.reason


def test_plain_kernel_with_float_locals_and_an_alias(tmp_path) -> None:
    text = """typedef float real;
__global__ void act(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    real v = x[i];
    float w = 0.5f;
    if (i < n) y[i] = tanh(v) * w + sin(x[i]) + cos(v * w);
}
"""
    cands = _fast(text)
    assert isinstance(cands, list) and cands[0].params["calls"] == ["cos", "sin", "tanh"]
    if shutil.which("nvcc"):
        _nvcc(tmp_path, cands[0].new_text)


def test_a_name_declared_with_two_types_is_not_read() -> None:
    text = """__global__ void two(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    { double v = x[i]; y[i] = (float)v; }
    { float v = x[i]; y[i] += exp(v); }
}
"""
    r = _fast(text)
    assert not isinstance(r, list) and "has no single-precision math call" in r.reason
