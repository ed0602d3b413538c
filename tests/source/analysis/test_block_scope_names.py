"""A local declared in several blocks is read, at each use, as the declaration in scope there (C++ block scope):
the index of each update follows its own ``b``. Kernels written for this test."""

from __future__ import annotations

from htam_core.source import parse_text
from htam_core.source.analysis import analyze

_TWO = """__global__ void k(const int* key, const int* other, unsigned* hist, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n / 2) {
        int b = key[i];
        atomicAdd(&hist[b], 1u);
    } else if (i < n) {
        int b = other[i] + 1;
        atomicAdd(&hist[b], 2u);
    }
}
"""


def test_each_use_reads_the_declaration_in_its_block():
    model = parse_text(_TWO, "cuda", "s.cu")
    ups = analyze(model, model.kernel("k")).histogram_updates()
    assert len(ups) == 2
    first, second = (str(u.index) for u in ups)
    assert "key" in first and "other" not in first
    assert "other" in second and "key" not in second


def test_an_assigned_name_stays_unknown():
    model = parse_text(_TWO.replace("atomicAdd(&hist[b], 2u);", "b += 1; atomicAdd(&hist[b], 2u);"), "cuda", "s.cu")
    assert analyze(model, model.kernel("k")).histogram_updates() == ()
