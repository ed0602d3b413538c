"""Small workspaces (written into a temporary folder) where a kernel is launched from somewhere else: the shared
fixtures of the workspace launch index's tests and of the tests of the steps that edit both places."""

from __future__ import annotations

from pathlib import Path

VADD = """__global__ void vadd(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""

MAIN_CPP = """#include <cstdio>
__global__ void vadd(const float *a, const float *b, float *c, int n);
void run(const float *a, const float *b, float *c, int n) {
    const int threads = 256;
    vadd<<<(n + threads - 1) / threads, threads>>>(a, b, c, n);
}
"""

MACRO_CU = """#define LAUNCH_VADD(n, ...) vadd<<<((n) + 255) / 256, 256>>>(__VA_ARGS__)
__global__ void vadd(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
void run(const float *a, const float *b, float *c, int n) { LAUNCH_VADD(n, a, b, c, n); }
"""

CUPY_PY = """import cupy as cp

THREADS = 256
mod = cp.RawModule(code=open("k.cu").read())
f = mod.get_function("vadd")


def run(a, b, c, n):
    f(((n + THREADS - 1) // THREADS,), (THREADS,), (a, b, c, n))
"""

LOAD_INLINE_PY = '''from torch.utils.cpp_extension import load_inline

LAUNCHER = r"""
void run(const float *a, const float *b, float *c, int n) {
    vadd<<<(n + 127) / 128, 128>>>(a, b, c, n);
}
"""
mod = load_inline(name="vadd", cpp_sources="", cuda_sources=open("k.cu").read() + LAUNCHER, functions=["run"])
'''

TRITON_KERNELS = """import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
"""

TRITON_MAIN = """import torch
import triton
from kernels import add_kernel


def add(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out
"""

#: a kernel in a Python string launched through cupy in the same file, its block a module constant
CUPY_VADD_PY = '''import cupy as cp

SRC = r"""
extern "C" __global__ void vadd(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""

BLOCK = 256
kern = cp.RawKernel(SRC, "vadd")


def add(a, b):
    n = a.size
    c = cp.empty_like(a)
    kern(((n + BLOCK - 1) // BLOCK,), (BLOCK,), (a, b, c, cp.int32(n)))
    return c
'''

#: a 2-D transpose in a Python string (single quotes), launched through ``RawModule.get_function`` with 16x16 blocks
CUPY_TRANSPOSE_PY = """import cupy as cp

code = '''
extern "C" __global__ void transpose(const float *in, float *out, int rows, int cols) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < cols && y < rows) out[x * rows + y] = in[y * cols + x];
}
'''
mod = cp.RawModule(code=code)
tr = mod.get_function("transpose")


def transpose(a):
    rows, cols = a.shape
    out = cp.empty((cols, rows), dtype=a.dtype)
    tr(((cols + 15) // 16, (rows + 15) // 16), (16, 16), (a, out, cp.int32(rows), cp.int32(cols)))
    return out
"""

#: a kernel and its load_inline launcher in two strings of one Python file (``cuda_sources=KERNEL + LAUNCHER``)
LOAD_INLINE_TWO_STRINGS_PY = '''from torch.utils.cpp_extension import load_inline

KERNEL = r"""
__global__ void scale_kernel(const float *x, float *y, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = s * x[i];
}
"""

LAUNCHER = r"""
torch::Tensor scale(torch::Tensor x, double s) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    const int threads = 256;
    scale_kernel<<<(n + threads - 1) / threads, threads>>>(x.data_ptr<float>(), y.data_ptr<float>(), (float)s, n);
    return y;
}
"""
mod = load_inline(name="scale", cpp_sources="torch::Tensor scale(torch::Tensor x, double s);",
                  cuda_sources=KERNEL + LAUNCHER, functions=["scale"])
'''


def workspace(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (name -> text) under ``root`` and return ``root``."""
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root

PARTIAL_SUM = """__global__ void partial_sum(const float *x, float *partials, int n) {
    __shared__ float s[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[tid] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];
        __syncthreads();
    }
    if (tid == 0) partials[blockIdx.x] = s[0];
}
"""

PARTIAL_SUM_HOST = """__global__ void partial_sum(const float *x, float *partials, int n);
void run(const float *x, float *partials, int n) {
    partial_sum<<<(n + 255) / 256, 256>>>(x, partials, n);
}
"""

SCALE_CUH = """template <typename scalar_t>
__global__ void scale_kernel(const scalar_t *__restrict__ x, scalar_t *__restrict__ y, scalar_t a, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
"""

TORCH_EXT_CU = """#include <torch/extension.h>
#include "kern.cuh"

torch::Tensor scale(torch::Tensor x, double a) {
    auto y = torch::empty_like(x);
    const int64_t n = x.numel();
    const int threads = 256;
    const int blocks = (n + threads - 1) / threads;
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "scale", ([&] {
        scale_kernel<scalar_t><<<blocks, threads>>>(x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(),
                                                   static_cast<scalar_t>(a), n);
    }));
    return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("scale", &scale, "scale"); }
"""


def needs_nvcc_mark():  # noqa: ANN201 - a pytest mark
    """A ``skipif`` mark for tests that compile with nvcc."""
    import shutil

    import pytest

    return pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")


def propose_first(path: Path, tid: str) -> list:
    """The candidates of transform ``tid`` on the first kernel of ``path`` (the test fails with the refusal
    reason when it does not apply)."""
    from htam_core.source import load
    from htam_core.transforms import registry

    model = load(path)
    res = registry.propose(tid, model, model.kernels[0])
    assert isinstance(res, list), res.reason
    return res
