"""Regression: ``cuda.vectorize_float4`` on a strided loop whose bound is written on the left (``n > i``) read the
variable as the bound (``htam_n4 = (i) / 4``, a tail loop ``i < i``, a candidate that does not compile). The loop's
header now comes from the analysis layer's one reader of a ``for`` header
(:func:`~htam_core.source.analysis.loops.for_parts`), which reads ``n > i`` as ``i < n``. Kernel written here."""

from __future__ import annotations

import shutil

import pytest
from transform_helpers import assert_nvcc_compiles, only_candidate

TEXT = """__global__ void scale(const float *x, float *y, int n) {
    for (int i = threadIdx.x; COND; i += blockDim.x) y[blockIdx.x * n + i] = 2.0f * x[blockIdx.x * n + i];
}
void run(const float *x, float *y, int n) { scale<<<64, 256>>>(x, y, n); }
"""


@pytest.mark.parametrize("cond", ["i < n", "n > i"])
def test_the_bound_is_read_on_either_side(cond, tmp_path):
    c = only_candidate("cuda.vectorize_float4", TEXT.replace("COND", cond), "scale")
    assert "htam_n4 = (n) / 4;" in c.new_text and "i < n; i += blockDim.x)" in c.new_text
    assert "int htam_tail = 0;" in c.new_text and "long long htam" not in c.new_text  # a block's step keeps int counters
    assert "(i) / 4" not in c.new_text and "i < i" not in c.new_text
    if shutil.which("nvcc") is not None:
        assert_nvcc_compiles(c.new_text, tmp_path, "k.cu")
