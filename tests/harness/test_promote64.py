"""The float64 twin of a start (:func:`htam_core.harness.promote64.float64_twin`): what is promoted, what is
dropped, what is refused, and that nvcc compiles the twin of several spellings of a long float sum. Kernels written
for these tests."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from htam_core.harness.promote64 import float64_twin
from tests.support.nvcc_check import assert_compiles

_MSE = """#include <cuda_runtime.h>
#include <cstdio>
__global__ void mse(const float* pred, const float* target, float* loss, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float d = pred[i] - target[i];
    atomicAdd(loss, d * d / (float)n);
}
int main()
{
    const size_t n = 1 << 20;
    float *p, *t, *l;
    cudaMalloc(&p, n * sizeof(float)); cudaMalloc(&t, n * sizeof(float)); cudaMalloc(&l, sizeof(float));
    mse<<<(n + 255) / 256, 256>>>(p, t, l, n);
    float h = 0.0f;
    cudaMemcpy(&h, l, sizeof(float), cudaMemcpyDeviceToHost);
    printf("%f\\n", h);
    return 0;
}
"""

_DOT_ROWS = """typedef float real;
#define EPS 1e-6f
__device__ __forceinline__ real sq(real v) { return v * v; }
__global__ void rownorm(const real* __restrict__ x, real* out, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) atomicAdd(out + blockIdx.y, sq(x[(size_t)blockIdx.y * cols + c]) + EPS);
}
void launch(const float* x, float* out, int rows, int cols)
{
    dim3 grid((cols + 127) / 128, rows);
    rownorm<<<grid, 128>>>(x, out, cols);
}
"""

_SEQ = """__global__ void gemv(const float* A, const float* v, float* y, int M, int K, float alpha)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= M) return;
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc = fmaf(A[(size_t)r * K + k], v[k], acc);
    y[r] = alpha * sqrtf(fabsf(acc)) + __expf(-0.5F) * __fdividef(acc, (float)K);
}
"""

_WARP = """namespace ops {
__global__ void dot(const float* a, const float* b, float* out, int n)
{
    float s = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) s += a[i] * b[i];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(&out[0], static_cast<float>(s));
}
}
int main() { return 0; }
"""

_KERNELS = [(_MSE, "mse"), (_DOT_ROWS, "rownorm"), (_SEQ, "gemv"), (_WARP, "dot")]


@pytest.mark.parametrize(("text", "kernel"), _KERNELS)
def test_the_twin_promotes_every_float_of_the_device_code(text, kernel):
    twin = float64_twin(text, kernel)
    assert twin.text is not None, twin.reason
    code = re.sub(r"//.*", "", twin.text)
    assert not re.search(r"\bfloat\b", code)
    assert not re.search(r"\d[fF]\b", code)  # no float literal left
    assert not re.search(r"\b(sqrtf|fabsf|fmaf|__expf|__fdividef)\s*\(", code)
    assert "int main" not in code and "void launch" not in code  # host code is not the twin's
    assert f"{kernel}(" in code


def test_literals_that_are_not_floats_stay():
    twin = float64_twin("__global__ void k(float *o) { o[0x1f] = 2.5f + 1e3f + 3 + 0x2F; }", "k")
    assert twin.text is not None
    assert "o[0x1f] = 2.5 + 1e3 + 3 + 0x2F;" in twin.text


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not found")
@pytest.mark.parametrize(("text", "kernel"), _KERNELS)
def test_nvcc_compiles_the_twin(text, kernel, tmp_path: Path):
    twin = float64_twin(text, kernel)
    assert twin.text is not None
    assert_compiles(twin.text, tmp=tmp_path, name="twin.cu")


@pytest.mark.parametrize(("text", "why"), [
    ("#include <cuda_fp16.h>\n__global__ void k(const __half *x, float *o, int n) "
     "{ int i = threadIdx.x; if (i < n) atomicAdd(o, __half2float(x[i])); }", "half"),
    ("__global__ void k(const float4 *x, float *o) { float4 v = x[threadIdx.x]; atomicAdd(o, v.x + v.y); }",
     "vector"),
    ("__global__ void k(cudaTextureObject_t t, float *o) { atomicAdd(o, tex1Dfetch<float>(t, threadIdx.x)); }",
     "textures"),
    ("__global__ void k(const float *x, float *o) { float v; asm(\"mov.f32 %0, %1;\" : \"=f\"(v) : \"f\"(x[0])); "
     "atomicAdd(o, v); }", "PTX"),
    ("__global__ void k(const float *x, int *o) { atomicMax(o, __float_as_int(x[threadIdx.x])); }", "bit casts"),
    ("__global__ void k(const float *x, float *o) { extern __shared__ float s[]; s[threadIdx.x] = x[0]; "
     "atomicAdd(o, s[0]); }", "dynamic shared"),
    ("template <typename T> __global__ void k(const T *x, T *o) { atomicAdd(o, x[threadIdx.x]); }", "template"),
])
def test_what_has_no_float64_twin(text, why):
    twin = float64_twin(text, "k")
    assert twin.text is None
    assert why in twin.reason and "\n" not in twin.reason
    assert "start stays the reference" in twin.reason


def test_host_only_use_of_an_unpromotable_type_does_not_refuse():
    text = ("#include <cuda_fp16.h>\n__global__ void k(const float *x, float *o) { atomicAdd(o, x[threadIdx.x]); }\n"
            "int main() { __half h = __float2half(1.0f); (void)h; return 0; }\n")
    twin = float64_twin(text, "k")
    assert twin.text is not None and "__half" not in twin.text.split("#include <cuda_fp16.h>")[1]


def test_macros_are_promoted_and_read_for_refusals():
    twin = float64_twin("#define SQ(v) sqrtf((v) * 0.5f)\n#define CAST(v) ((float)(v))\n"
                        "__global__ void k(const float *x, float *o) { atomicAdd(o, SQ(CAST(x[threadIdx.x]))); }", "k")
    assert twin.text is not None
    assert "#define SQ(v) sqrt((v) * 0.5)" in twin.text and "((double)(v))" in twin.text
    refused = float64_twin("#define VEC float4\n__global__ void k(const VEC *x, float *o) { atomicAdd(o, x[0].x); }",
                           "k")
    assert refused.text is None and "vector" in refused.reason
