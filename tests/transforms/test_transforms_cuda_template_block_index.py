"""``i = blockIdx.x * BLOCK + threadIdx.x`` with ``BLOCK`` a template argument is the global index when every launch
uses a 1-D block of ``BLOCK`` threads: the elementwise steps apply; a launch with another block (the index then
skips or repeats elements) is not the elementwise shape, and is refused."""

from __future__ import annotations

import pytest

from htam_core.source import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

TEXT = """
template <int BLOCK>
__global__ void twice(float *x, int n) {
    int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) x[i] = 2.0f * x[i];
}
void run(float *x, int n) { twice<256><<<(n + 255) / 256, THREADS>>>(x, n); }
"""


def _propose(tid: str, threads: str):
    model = parse_text(TEXT.replace("THREADS", threads), "cuda")
    return registry.propose(tid, model, model.kernel("twice"))


@pytest.mark.parametrize("tid", ["cuda.grid_stride", "cuda.vectorize_float4"])
def test_a_template_block_equal_to_the_launch_block_is_the_global_index(tid):
    res = _propose(tid, "256")
    assert not isinstance(res, NotApplicable), res.reason


@pytest.mark.parametrize("tid", ["cuda.grid_stride", "cuda.vectorize_float4"])
def test_a_launch_with_another_block_is_refused(tid):
    res = _propose(tid, "128")
    assert isinstance(res, NotApplicable)
    assert "index declaration" in res.reason
