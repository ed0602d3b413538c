"""An elementwise bound check with terms that are the same for every element (``if (i < n && n > 0)``, ``if (i >=
n || !enabled) return;``): the grid-stride loop and the float4 body keep them as a condition of the whole loop; a
term that reads the index or a thread index is not such a term, and the kernel is refused as before."""

from __future__ import annotations

import shutil

import pytest
from transform_helpers import assert_nvcc_compiles

from htam_core.source import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

KERNEL = """
__global__ void scale(const float *x, float *y, int n, int enabled) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    GUARD
}
void run(const float *x, float *y, int n) { scale<<<(n + 255) / 256, 256>>>(x, y, n, 1); }
"""
BODY = "y[i] = 2.0f * x[i];"


def _propose(tid: str, guard: str):
    text = KERNEL.replace("GUARD", guard)
    model = parse_text(text, "cuda")
    return registry.propose(tid, model, model.kernel("scale"))


@pytest.mark.parametrize("guard, cond", [
    (f"if (i < n && n > 0) {{ {BODY} }}", "(n > 0)"),
    (f"if (i >= n || !enabled) return;\n    {BODY}", "(enabled)"),
])
def test_the_grid_stride_loop_keeps_the_invariant_terms(guard, cond, tmp_path):
    res = _propose("cuda.grid_stride", guard)
    assert not isinstance(res, NotApplicable), res.reason
    assert f"htam_gi < n && ({cond})" in res[0].new_text
    if shutil.which("nvcc"):
        assert_nvcc_compiles(res[0].new_text, tmp_path)


def test_the_float4_body_runs_no_element_when_an_invariant_term_is_false(tmp_path):
    res = _propose("cuda.vectorize_float4", f"if (i < n && n > 0) {{ {BODY} }}")
    assert not isinstance(res, NotApplicable), res.reason
    assert "const long long htam_n = ((n > 0)) ? (long long)(n) : 0ll;" in res[0].new_text
    if shutil.which("nvcc"):
        assert_nvcc_compiles(res[0].new_text, tmp_path)


@pytest.mark.parametrize("guard", [f"if (i < n && x[i] > 0.0f) {{ {BODY} }}",
                                   f"if (i < n && threadIdx.x < 128) {{ {BODY} }}",
                                   f"if (i < n && n-- > 0) {{ {BODY} }}"])
@pytest.mark.parametrize("tid", ["cuda.grid_stride", "cuda.vectorize_float4"])
def test_a_term_that_varies_per_element_is_refused(tid, guard):
    if tid == "cuda.grid_stride" and "x[i]" in guard:
        pytest.skip("an element test is kept inside the grid-stride loop "
                    "(test_transforms_cuda_grid_stride_element_tests.py)")
    res = _propose(tid, guard)
    assert isinstance(res, NotApplicable)
    assert "bound check" in res.reason
