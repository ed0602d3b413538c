"""A pointer converted to an integer only to test its address (an alignment test) is no escape of the pointer:
its reads and writes stay the pointer's mode, whatever the spelling (``reinterpret_cast<unsigned long long>(p +
off)``, the test htam's own float4 step writes; ``(uintptr_t)p % 16``; ``(size_t)&p[i] & 15``; a functional cast
``uintptr_t(p + i)``; a detour through ``const void *``; several pointers or-ed). An integer made back into a
pointer is an escape. Kernels written here.
"""

from __future__ import annotations

import pytest

from htam_core.source import parse_text
from htam_core.source.analysis import analyze

SRC = r"""
#include <cstdint>
#include <cstddef>
__global__ void own_float4(const float *a, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n / 4 && (reinterpret_cast<unsigned long long>(a + (i * 4)) & 15ull) == 0ull) {
    float4 v = reinterpret_cast<const float4 *>(a + (i * 4))[0];
    out[4 * i] = v.x + v.y + v.z + v.w;
  }
}
__global__ void uintptr_mod(const float *p, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if ((uintptr_t)p % 16 == 0 && i < n) out[i] = p[i];
}
__global__ void element_mask(const float *a, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  bool ok = ((size_t)&a[4 * i] & 15) == 0;
  if (ok && i < n) out[i] = a[4 * i];
}
__global__ void functional_cast(const float *a, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n || uintptr_t(a + 4 * i) % 16) return;
  out[i] = a[4 * i];
}
__global__ void through_void(const float *a, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && !(reinterpret_cast<uintptr_t>((const void *)(a + i)) & 15)) out[i] = a[i];
}
__global__ void or_of_two(const float *a, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  const bool aligned = (((size_t)a | (size_t)(out + i)) % 16) == 0;
  if (aligned && i < n) out[i] = a[i];
}
__global__ void back_to_pointer(const float *a, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = reinterpret_cast<const float *>(reinterpret_cast<uintptr_t>(a + i) + 4)[0];
}
__global__ void stored_address(const float *a, unsigned long long *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = reinterpret_cast<unsigned long long>(a + i);
}
"""


def _modes(kernel: str) -> dict[str, str]:
    model = parse_text(SRC, "cuda")
    return {p.name: p.mode for p in analyze(model, model.kernel(kernel)).pointers}


@pytest.mark.parametrize(("kernel", "reads"), [
    ("own_float4", "a"), ("uintptr_mod", "p"), ("element_mask", "a"), ("functional_cast", "a"),
    ("through_void", "a"), ("or_of_two", "a"),
])
def test_an_alignment_test_leaves_the_pointer_read_only(kernel, reads):
    assert _modes(kernel) == {reads: "read", "out": "write"}


def test_the_alignment_test_is_no_access():
    model = parse_text(SRC, "cuda")
    f = analyze(model, model.kernel("element_mask"))
    assert [a.kind for a in f.accesses if a.pointer == "a"] == ["read"]  # a[4 * i] only, not &a[4 * i]


@pytest.mark.parametrize("kernel", ["back_to_pointer", "stored_address"])
def test_an_address_made_back_into_a_pointer_or_stored_is_not_a_test(kernel):
    assert _modes(kernel)["a"] == "unknown"
