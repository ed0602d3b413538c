"""``cuda.vectorize_float4`` on a template kernel whose element type is a type template parameter that this file
launches only as ``<float>``: another translation unit may instantiate ``<double>`` (a header shared by several
.cu files), so the rewrite keeps the generic ``16 / sizeof(scalar_t)`` lanes instead of ``float4``, in the loop form
and the elementwise form. Each result is compiled with nvcc with a ``<double>`` instantiation added, as another
unit would write it (the generic form's other sizes are tested in ``test_transforms_cuda_vector_loops_typed``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htam_core.source import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import Candidate
from tests.support.nvcc_check import assert_compiles

TID = "cuda.vectorize_float4"

_ROWS = """template <typename scalar_t>
__global__ void row_scale(const scalar_t* in, scalar_t* out, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  for (int c = 0; c < cols; ++c) out[(size_t)r * cols + c] = in[(size_t)r * cols + c] * (scalar_t)2;
}
void run(const float* in, float* out, int rows, int cols) {
  row_scale<float><<<(rows + 127) / 128, 128>>>(in, out, rows, cols);
}
"""

_ELEMENTWISE = """template <class T>
__global__ void axpy(const T* __restrict__ x, T* y, T a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
void run(const float* x, float* y, int n) { axpy<float><<<(n + 255) / 256, 256>>>(x, y, 2.0f, n); }
"""

# a template kernel whose pointers are plain float (the parameter is a block size): float4 stays right
_FLOAT_POINTERS = """template <int kBlock>
__global__ void halve(const float* in, float* out, int rows, int cols) {
  int r = blockIdx.x * kBlock + threadIdx.x;
  if (r >= rows) return;
  for (int c = 0; c < cols; c++) out[r * cols + c] = 0.5f * in[r * cols + c];
}
void run(const float* in, float* out, int rows, int cols) { halve<128><<<(rows + 127) / 128, 128>>>(in, out, rows, cols); }
"""



def _one(text: str, kernel: str, tmp_path: Path) -> Candidate:
    m = parse_text(text, "cuda", str(tmp_path / "k.cu"))
    cands = registry.propose(TID, m, m.kernel(kernel))
    assert isinstance(cands, list) and cands, cands
    return cands[0]


def _compiles(text: str, tmp_path: Path) -> None:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not installed")
    assert_compiles(text, tmp=tmp_path, name="v.cu")


def test_row_loop_of_a_template_launched_as_float_stays_generic(tmp_path):
    c = _one(_ROWS, "row_scale", tmp_path)
    assert "float4" not in c.new_text
    assert "16 / sizeof(scalar_t)" in c.new_text and "scalar_t v[htam_V];" in c.new_text


def test_elementwise_template_launched_as_float_stays_generic(tmp_path):
    c = _one(_ELEMENTWISE, "axpy", tmp_path)
    assert "float4" not in c.new_text and "float htam_" not in c.new_text
    assert "16 / sizeof(T)" in c.new_text and "T v[htam_V];" in c.new_text
    assert "+ 3) / 4" in c.new_text  # this unit's <float> launch still shrinks by its own 4 lanes


def test_template_without_a_type_parameter_keeps_float4(tmp_path):
    c = _one(_FLOAT_POINTERS, "halve", tmp_path)
    assert "float4" in c.new_text and "htam_V" not in c.new_text


@pytest.mark.parametrize("text,kernel,inst", [
    (_ROWS, "row_scale", "template __global__ void row_scale<double>(const double*, double*, int, int);"),
    (_ELEMENTWISE, "axpy", "template __global__ void axpy<double>(const double* __restrict__, double*, double, int);"),
])
def test_a_double_instantiation_of_another_unit_compiles(text, kernel, inst, tmp_path):
    c = _one(text, kernel, tmp_path)
    _compiles(c.new_text + "\n" + inst + "\n", tmp_path)
