"""``overlapping_views``: shared arrays (or views carved out of one shared buffer) whose first ``extent`` elements
may share memory, from the offsets the analysis layer derives for local pointers."""

from __future__ import annotations

import pytest

from htam_core.source import parse_text
from htam_core.source.analysis import analyze, sym
from htam_core.source.analysis.views import overlapping_views

_KERNEL = """
__global__ void k(const float *x, float *out) {
    extern __shared__ float smem[];
    __shared__ float other[256];
    DECLS
    a[threadIdx.x] = x[threadIdx.x];
    b[threadIdx.x] = x[threadIdx.x];
    other[threadIdx.x] = 0.0f;
    __syncthreads();
    out[threadIdx.x] = a[0] + b[0] + other[0];
}
"""


def _overlap(decls: str, extent: object) -> tuple[str, str] | None:
    model = parse_text(_KERNEL.replace("DECLS", decls), "cuda")
    facts = analyze(model, model.kernel("k"))
    return overlapping_views(facts, ["a", "b"], extent)  # type: ignore[arg-type]


@pytest.mark.parametrize(("decls", "extent"), [
    ("float *a = smem, *b = smem + blockDim.x;", sym("blockDim.x")),
    ("float *a = smem; float *b = &smem[blockDim.x];", sym("blockDim.x")),
    ("float *b = smem; float *a = smem + 2 * blockDim.x;", sym("blockDim.x")),
    ("float *a = smem, *b = smem + 256;", 256),
    ("float *a = smem; float *b = other;", sym("blockDim.x")),
])
def test_views_a_whole_extent_apart_do_not_overlap(decls, extent):
    assert _overlap(decls, extent) is None


@pytest.mark.parametrize(("decls", "extent"), [
    ("float *a = smem, *b = smem + 16;", sym("blockDim.x")),
    ("float *a = smem, *b = smem + 128;", 256),
    ("float *a = smem, *b = smem;", sym("blockDim.x")),
    ("float *a = smem + blockDim.x / 2, *b = smem;", sym("blockDim.x")),
])
def test_views_that_may_share_entries_are_named(decls, extent):
    assert _overlap(decls, extent) == ("a", "b")
