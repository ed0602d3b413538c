"""``cuda.vectorize_float4``: the elementwise vector form is not offered when it would widen only the stores while
the loads that carry the data stay scalar and strided (an RGBA-to-gray kernel: ``rgba[4 * i + 0..2]`` read,
``gray[i]`` written), since that step moves none of the traffic that matters; a kernel that also reads a pointer
at the element's own index keeps the step.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.source import load
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

TID = "cuda.vectorize_float4"

_GRAY = """#include <cstdint>
__global__ void to_gray(const {T} *px, {T} *gray, {IDX} n)
{
    {IDX} i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float r = px[{R}];
        float g = px[{G}];
        float b = px[{B}];
        gray[i] = ({T})(0.25f * r + 0.5f * g + 0.25f * b);
    }
}
void run(const {T} *px, {T} *gray, {IDX} n) { to_gray<<<(n + 255) / 256, 256>>>(px, gray, n); }
"""

_STRIDE_LOOP = """__global__ void to_gray(const float *__restrict__ xyz, float *__restrict__ norm, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        float x = xyz[3 * i], y = xyz[3 * i + 1], z = xyz[3 * i + 2];
        norm[i] = sqrtf(x * x + y * y + z * z);
    }
}
void run(const float *xyz, float *norm, int n) { to_gray<<<(n + 255) / 256, 256>>>(xyz, norm, n); }
"""


def _gray(t: str, idx: str, r: str, g: str, b: str) -> str:
    return (_GRAY.replace("{T}", t).replace("{IDX}", idx).replace("{R}", r).replace("{G}", g)
            .replace("{B}", b))


def _propose(src: str, tmp_path: Path) -> object:
    path = tmp_path / "k.cu"
    path.write_text(src)
    model = load(str(path))
    return registry.propose(TID, model, model.kernel("to_gray"))


@pytest.mark.parametrize("src", [
    _gray("unsigned char", "unsigned int", "4 * i + 0", "4 * i + 1", "4 * i + 2"),
    _gray("uint8_t", "int", "i * 4", "i * 4 + 1", "i * 4 + 2"),
    _gray("unsigned char", "size_t", "4 * i", "4 * i + 1", "4 * i + 2"),
    _gray("float", "int", "3 * i + 0", "3 * i + 1", "3 * i + 2"),
], ids=["uchar-uint", "uint8-int-i*4", "uchar-size_t", "float-rgb"])
def test_a_store_only_vector_form_is_not_offered(src, tmp_path):
    res = _propose(src, tmp_path)
    assert isinstance(res, NotApplicable)
    assert "would widen only the stores" in res.reason and "stay scalar" in res.reason
    assert "\n" not in res.reason


def test_a_grid_stride_loop_over_strided_loads_is_not_offered(tmp_path):
    res = _propose(_STRIDE_LOOP, tmp_path)
    assert isinstance(res, NotApplicable) and "not a stride-1 access" in res.reason


def test_a_kernel_that_also_reads_at_its_own_index_keeps_the_step(tmp_path):
    src = _gray("float", "int", "3 * i + 0", "3 * i + 1", "3 * i + 2").replace(
        "gray[i] = (float)(", "gray[i] = gray[i] + (float)(")
    res = _propose(src, tmp_path)
    assert not isinstance(res, NotApplicable), res.reason
    assert "float4" in res[0].new_text  # type: ignore[index]


def test_a_contiguous_read_keeps_the_step(tmp_path):
    src = _gray("float", "int", "i", "i", "i")
    res = _propose(src, tmp_path)
    assert not isinstance(res, NotApplicable), res.reason
