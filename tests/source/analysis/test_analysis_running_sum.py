"""Running sums (:mod:`htam_core.source.analysis.running_sum`): a loop that stores its sum accumulator at each step
is a prefix scan, whatever the spelling (inclusive or exclusive, a scaled store, a 64-bit counter, a row pointer);
a reduction stored once after its loop is not one."""

from __future__ import annotations

import pytest

from htam_core.source.analysis import analyze
from htam_core.source.analysis.forms import KernelText
from htam_core.source.analysis.running_sum import RunningSum, running_sum
from htam_core.source.analysis.unit import CudaSource, cuda_source
from htam_core.source.api import parse_text

KERNEL = """__global__ void k(const float *in, float *out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
BODY
}
void launch(const float *in, float *out, int rows, int cols) { k<<<(rows + 127) / 128, 128>>>(in, out, rows, cols); }
"""


def _found(body: str) -> RunningSum | None:
    model = parse_text(KERNEL.replace("BODY", body), "cuda")
    k = model.kernel("k")
    src = cuda_source(model, k)
    assert isinstance(src, CudaSource)
    return running_sum(KernelText(src, analyze(model, k)))


RUNNING = {
    "inclusive": ("float acc = 0;\nfor (int c = 0; c < cols; ++c) {\n acc += in[r * cols + c];\n"
                  " out[r * cols + c] = acc;\n}", "acc"),
    "exclusive": ("float s = 0.0f;\nfor (int c = 0; c < cols; c++) {\n out[r * cols + c] = s;\n"
                  " s += in[r * cols + c];\n}", "s"),
    "scaled store, 64-bit": ("float run = 0;\nfor (size_t c = 0; c < (size_t)cols; ++c) {\n"
                             " run = run + in[(size_t)r * cols + c];\n out[(size_t)r * cols + c] = 0.5f * run;\n}",
                             "run"),
    "row pointers": ("const float *x = in + r * cols;\nfloat *y = out + r * cols;\nfloat a = 0;\n"
                     "for (int c = 0; c < cols; ++c) { a += x[c]; y[c] = a; }", "a"),
}


@pytest.mark.parametrize("name", sorted(RUNNING))
def test_a_loop_that_stores_its_sum_at_each_step_is_a_running_sum(name):
    body, acc = RUNNING[name]
    got = _found(body)
    assert got is not None and got.acc == acc and got.line >= 4 and acc in got.store


@pytest.mark.parametrize("body", [
    "float acc = 0;\nfor (int c = 0; c < cols; ++c) acc += in[r * cols + c];\nout[r] = acc;",
    "for (int c = 0; c < cols; ++c) out[r * cols + c] = 2.0f * in[r * cols + c];",
])
def test_a_reduction_or_a_map_is_not_a_running_sum(body):
    assert _found(body) is None


def test_a_running_max_is_a_scan_too():
    got = _found("float m = -1e30f;\nfor (int c = 0; c < cols; ++c) { m = fmaxf(m, in[r * cols + c]); "
                 "out[r * cols + c] = m; }")
    assert got is not None and (got.acc, got.op) == ("m", "max")
