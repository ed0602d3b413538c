"""The analysis fact "a float output filled by a long float32 accumulation" (:class:`LongSum`,
:func:`htam_core.source.analysis.long_sums.long_sums`) and its term count at a launch
(:func:`~htam_core.source.analysis.long_sums.terms_at`). Kernels written for these tests."""

from __future__ import annotations

import pytest

from htam_core.source import parse_text
from htam_core.source.analysis import analyze
from htam_core.source.analysis.long_sums import terms_at


def _sums(text: str, name: str = "k"):
    model = parse_text(text, "cuda")
    return analyze(model, model.kernel(name)).long_sums


_ATOMIC = """
__global__ void k(const float *x, const float *y, float *loss, float *out, int n, int cols)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    BODY
}
"""


@pytest.mark.parametrize(("body", "pointer", "scope"), [
    ("if (i < n) { float d = x[i] - y[i]; atomicAdd(loss, d * d / (float)n); }", "loss", "grid"),
    ("if (i >= n) return; atomicAdd(&out[0], x[i] * y[i]);", "out", "grid"),
    ("if (i < cols) atomicAdd(out + blockIdx.y, x[blockIdx.y * cols + i]);", "out", "block"),
    ("for (int j = i; j < n; j += blockDim.x * gridDim.x) atomicAdd(&(loss[0]), fabsf(x[j]));", "loss", "grid"),
])
def test_a_shared_float_atomic_is_a_long_sum(body, pointer, scope):
    (s,) = _sums(_ATOMIC.replace("BODY", body))
    assert (s.pointer, s.kind, s.scope) == (pointer, "atomic", scope)


_LOOPS = [
    # a dot product per row: K terms per output
    """__global__ void k(const float *a, const float *b, float *c, int M, int K) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += a[row * K + k] * b[k];
    c[row] = acc;
}""",
    # one thread sums everything, result through a pointer
    """__global__ void k(const float *a, float *res, int n) {
    if (threadIdx.x != 0) return;
    float s = 0;
    for (int j = 0; j < n; j++) { s = s + a[j]; }
    *res = 0.5f * s;
}""",
    # the output updated in place in the loop
    """__global__ void k(const float *a, float *c, int rows, int n) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) for (int j = 0; j < n; ++j) c[r] += a[r * n + j];
}""",
]


@pytest.mark.parametrize("text", _LOOPS)
def test_a_sequential_float_sum_over_a_runtime_bound_is_a_long_sum(text):
    (s,) = _sums(text)
    assert (s.kind, s.scope) == ("loop", "thread")
    assert s.terms is not None and s.terms.free_symbols
    n = {sym.name: 1000 for sym in s.terms.free_symbols}
    assert terms_at(s, None, None, n) == 1000


@pytest.mark.parametrize("text", [
    # a histogram: a bin per datum, few terms each, bins chosen by the data
    """__global__ void k(const int *data, float *hist, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&hist[data[i] % 64], 1.0f);
}""",
    # elementwise
    """__global__ void k(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}""",
    # a constant-length loop (a 3-tap filter), and a double accumulator (already precise)
    """__global__ void k(const float *x, float *y, double *z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i + 3 >= n) return;
    float s = 0.0f;
    for (int t = 0; t < 3; ++t) s += x[i + t];
    y[i] = s;
    double d = 0.0;
    for (int t = 0; t < n; ++t) d += x[t];
    z[i] = d;
}""",
    # an int counter
    """__global__ void k(const float *x, int *count, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] > 0.0f) atomicAdd(count, 1);
}""",
])
def test_what_is_not_a_long_float_sum(text):
    assert _sums(text) == ()


def test_terms_of_an_atomic_at_a_launch():
    (g,) = _sums(_ATOMIC.replace("BODY", "if (i < n) atomicAdd(loss, x[i]);"))
    assert terms_at(g, (1 << 17, 1), (256,), {}) == (1 << 17) * 256
    (b,) = _sums(_ATOMIC.replace("BODY", "if (i < cols) atomicAdd(out + blockIdx.y, x[i]);"))
    assert terms_at(b, (64, 1000), (128,), {}) == 64 * 128
    assert terms_at(b, None, (128,), {}) is None
    (own,) = _sums(_ATOMIC.replace("BODY", "if (i < n) atomicAdd(&out[blockIdx.x], x[i]);"))
    assert terms_at(own, (64,), (128,), {}) == 128  # each block of a 1-D grid its own element
    assert terms_at(own, (64, 1000), (128,), {}) == 128 * 1000  # the blocks along y share it
