"""A dereferenced const view of an element's address, ``*reinterpret_cast<const T *>(&p[i])`` (the form htam's
vectorized loads write), reads ``p``: it lets no pointer escape, so ``p`` stays read-only. Kernels written for
this test."""

from __future__ import annotations

import pytest

from htam_core.source import parse_text
from htam_core.source.analysis import analyze
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

_VIEW = """struct alignas(16) quad { int v[4]; };
__global__ void k(const int* idx, int* out, int n)
{
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i + 3 < n && (reinterpret_cast<unsigned long long>(&idx[i]) & 15ull) == 0ull) {
        const quad q = READ;
        out[i] = q.v[0] + q.v[3];
    } else if (i < n) out[i] = idx[i];
}
"""


@pytest.mark.parametrize("read", ["*reinterpret_cast<const quad *>(&idx[i])", "*(const quad *)(&idx[i])",
                                  "*reinterpret_cast<const quad *>(idx + i)"])
def test_a_dereferenced_const_view_is_a_read(read):
    model = parse_text(_VIEW.replace("READ", read), "cuda", "v.cu")
    pf = analyze(model, model.kernel("k")).pointer("idx")
    assert pf is not None and pf.mode == "read"
    res = registry.propose("cuda.ldg", model, model.kernel("k"))
    assert isinstance(res, NotApplicable) and "escapes" not in res.reason  # __ldg has no overload for quad


def test_a_mutable_view_still_escapes():
    model = parse_text(_VIEW.replace("const int* idx", "int* idx").replace("READ", "*reinterpret_cast<quad *>(&idx[i])"),
                       "cuda", "v.cu")
    pf = analyze(model, model.kernel("k")).pointer("idx")
    assert pf is None or pf.mode != "read"
