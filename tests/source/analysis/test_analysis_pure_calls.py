"""The analysis fact "a function of the unit the kernel calls is pure" (:attr:`KernelFacts.pure_calls`,
:func:`htam_core.source.analysis.pure_calls.pure_device_calls`): a helper whose body has no effect visible outside it
and reads no thread index is a value like ``fabsf``; a write through a pointer, a reference or to a global, an atomic,
a barrier, an unknown call or an index read is not. Kernels written for these tests."""

from __future__ import annotations

import pytest

from htam_core.source import parse_text
from htam_core.source.analysis import analyze

_KERNEL = """
__device__ float g_acc;
__device__ int g_count[4];
HELPER
__global__ void k(const float *x, float *out, int n, float thr)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = f(x[i], thr) ? 1.0f : 0.0f;
}
"""


def _pure(helper: str) -> tuple[str, ...]:
    model = parse_text(_KERNEL.replace("HELPER", helper), "cuda")
    facts = analyze(model, model.kernel("k"))
    assert "f" in facts.device_calls
    return facts.pure_calls


@pytest.mark.parametrize("helper", [
    "__device__ bool f(float v, float t) { return v > t; }",
    "__device__ __forceinline__ bool f(float v, float t) { return v > t; }",
    "__host__ __device__ inline bool f(float v, float t) { return fabsf(v) > t; }",
    "static __device__ bool f(float v, float t) { float d = v - t; d *= 2.0f; return d > 0.0f; }",
    "__device__ bool f(float v, float t) { float a[2]; a[0] = v; a[1] = t; return a[0] > a[1]; }",
    "__device__ bool f(float v, float t) { for (int k = 0; k < 3; ++k) v = v * 0.5f; return v > t; }",
    "__device__ float sq(float v) { return v * v; }\n__device__ bool f(float v, float t) { return sq(v) > t; }",
    "__device__ bool f(float v, float t) { return static_cast<double>(v) > (double)t; }",
    "__device__ bool f(float v, float t) { return v > g_acc * t; }",  # reads a global: no effect
])
def test_a_helper_without_effect_is_pure(helper):
    assert _pure(helper) == ("f",)


@pytest.mark.parametrize("helper", [
    "__device__ bool f(float v, float t) { g_acc = v; return v > t; }",  # a global
    "__device__ bool f(float v, float t) { g_count[0] += 1; return v > t; }",
    "__device__ bool f(float v, float t) { atomicAdd(&g_acc, v); return v > t; }",
    "__device__ bool f(float v, float t) { __syncthreads(); return v > t; }",
    "__device__ bool f(float v, float t) { printf(\"%f\", v); return v > t; }",
    "__device__ bool f(float v, float t) { return v > t + threadIdx.x; }",  # differs between threads
    "__device__ bool f(float v, float t) { static int calls = 0; calls++; return v > t; }",
    "__device__ bool f(float &v, float t) { v = t; return v > t; }",  # a reference parameter
    "__device__ bool f(float v, float t, float *p = nullptr) { p[0] = v; return v > t; }",
    "__device__ bool f(float v, float t, float p[2] = nullptr) { p[0] = v; return v > t; }",  # a pointer parameter
    "__device__ bool f(float v, float t) { float *q = &g_acc; *q = v; return v > t; }",
    "__device__ bool f(float v, float t) { __shared__ float s; s = v; return s > t; }",
    "__device__ void bump() { g_acc += 1.0f; }\n__device__ bool f(float v, float t) { bump(); return v > t; }",
    "__device__ bool f(float v, float t) { return v > t && f(v * 0.5f, t); }",  # recursion is not followed
    "__device__ bool f(float v, float t) { asm volatile(\"\" ::: \"memory\"); return v > t; }",
])
def test_a_helper_with_an_effect_is_not_pure(helper):
    assert _pure(helper) == ()


def test_an_overloaded_helper_is_not_followed():
    helper = ("__device__ bool f(float v, float t) { return v > t; }\n"
              "__device__ bool f(double v, float t) { return v > t; }")
    assert _pure(helper) == ()
