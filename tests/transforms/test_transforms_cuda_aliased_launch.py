"""``cuda.ldg`` and ``cuda.restrict_const`` on a kernel whose launch in the same file passes one buffer as both an
input and an output (in place: ``k<<<g, b>>>(d_x, d_x, n)``, through casts, a host variable, from ``main()``): the
aliased input gets neither ``__ldg`` nor ``__restrict__`` (one reason line; the step is not offered when it was
the only one), also where it may be the output on some paths only (set in a branch or in the loop around the
launch), another input keeps its step, and a launch with distinct buffers or no launch at all keeps today's
behaviour. Two inputs given the same buffer (both only read) still get both steps."""

from __future__ import annotations

import shutil

import pytest
from transform_helpers import assert_nvcc_compiles

from htam_core.source.api import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

STEPS = ("cuda.ldg", "cuda.restrict_const")

AXPY = """__global__ void axpy(const float *x, float *y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
"""
IN_PLACE = {
    "same": "void run(float *d_x, int n) { axpy<<<(n + 255) / 256, 256>>>(d_x, d_x, 2.0f, n); }",
    "casts": "void run(float *d_x, int n) {\n  axpy<<<(n + 255) / 256, 256>>>((const float *)d_x, (d_x), 2.0f, n);\n}",
    "host_var": "void run(float *buf, int n) {\n  float *out = buf;\n  float *in;\n  in = out;\n"
                "  axpy<<<(n + 255) / 256, 256>>>(in, out, 2.0f, n);\n}",
    "main": "int main() {\n  const int n = 1 << 20;\n  float *d;\n  cudaMalloc(&d, n * sizeof(float));\n"
            "  axpy<<<(n + 255) / 256, 256>>>(reinterpret_cast<const float *>(d), &d[0], 3.0f, n);\n  return 0;\n}",
}
#: The input is the output on some paths only (set in a branch, in the loop around the launch).
MAY_ALIAS = {
    "branch": "void run(float *d_x, float *d_z, int n) {\n  const float *in = d_z;\n  if (n < 64) in = d_x;\n"
              "  axpy<<<(n + 255) / 256, 256>>>(in, d_x, 2.0f, n);\n}",
    "loop": "void run(float *d_x, float *d_z, int n) {\n  float *in = d_z;\n  for (int r = 0; r < 3; ++r) {\n"
            "    axpy<<<(n + 255) / 256, 256>>>(in, d_x, 2.0f, n);\n    in = d_x;\n  }\n}",
}
SEPARATE = {
    "distinct": "void run(float *d_x, float *d_y, int n) { axpy<<<(n + 255) / 256, 256>>>(d_x, d_y, 2.0f, n); }",
    "offset": "void run(float *d, int n) { axpy<<<(n + 255) / 256, 256>>>(d, d + n, 2.0f, n); }",
    "no_launch": "",
}

TWO_INPUTS = """__global__ void mix(const float *a, const float *b, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] * b[i];
}
void run(float *d_out, float *d_b, int n) { mix<<<(n + 127) / 128, 128>>>(LAUNCH, n); }
"""


def _propose(step: str, text: str, kernel: str):
    model = parse_text(text, "cuda")
    return registry.propose(step, model, model.kernel(kernel))


@pytest.mark.parametrize("spelling", sorted(IN_PLACE))
@pytest.mark.parametrize("step", STEPS)
def test_an_input_passed_as_the_output_gets_no_read_only_promise(step, spelling):
    res = _propose(step, AXPY + IN_PLACE[spelling], "axpy")
    assert isinstance(res, NotApplicable), step
    assert "x is read but the launch on line" in res.reason and "as y, which the kernel writes" in res.reason
    assert "\n" not in res.reason


@pytest.mark.parametrize("spelling", sorted(MAY_ALIAS))
@pytest.mark.parametrize("step", STEPS)
def test_an_input_that_may_be_the_output_gets_no_read_only_promise(step, spelling):
    res = _propose(step, AXPY + MAY_ALIAS[spelling], "axpy")
    assert isinstance(res, NotApplicable), step
    assert "x is read but the launch on line" in res.reason and "may pass the same buffer (d_x)" in res.reason


@pytest.mark.parametrize("spelling", sorted(SEPARATE))
@pytest.mark.parametrize("step", STEPS)
def test_separate_buffers_or_no_launch_keep_the_step(step, spelling):
    res = _propose(step, AXPY + SEPARATE[spelling], "axpy")
    assert not isinstance(res, NotApplicable), res.reason
    assert res[0].params["params"] == ["x"]


@pytest.mark.parametrize("step", STEPS)
def test_only_the_aliased_input_is_left_out(step, tmp_path):
    res = _propose(step, TWO_INPUTS.replace("LAUNCH", "d_out, d_b, d_out"), "mix")
    assert not isinstance(res, NotApplicable), res.reason
    (cand,) = res
    assert cand.params["params"] == ["b"]
    assert "__restrict__ a" not in cand.new_text and "__ldg(&a[" not in cand.new_text
    if shutil.which("nvcc"):
        assert_nvcc_compiles(cand.new_text, tmp_path)


@pytest.mark.parametrize("step", STEPS)
def test_two_inputs_reading_one_buffer_keep_the_step(step):
    res = _propose(step, TWO_INPUTS.replace("LAUNCH", "d_b, d_b, d_out"), "mix")
    assert not isinstance(res, NotApplicable), res.reason
    assert res[0].params["params"] == ["a", "b"]
