"""Transposes that store a function of the one loaded element (:attr:`Transpose.value`): a conjugate through a
local, a scale by a parameter, a cast, a negation; and what is not one (a thread index, a second use of the local)."""

from __future__ import annotations

import pytest

from htam_core.source import parse_text
from htam_core.source.analysis import analyze

#: (element type, the guarded body) -> the recorded value
VALUES = {
    ("float2", "float2 v = in[r * cols + c]; out[c * rows + r] = make_float2(v.x, -v.y);"):
        "make_float2(htam_v.x, -htam_v.y)",
    ("float", "out[(long long)c * rows + r] = alpha * in[(long long)r * cols + c];"): "alpha * htam_v",
    ("float", "out[c * rows + r] = (double)in[r * cols + c];"): "(double)htam_v",
    ("float", "out[c * rows + r] = -(in[r * cols + c]);"): "-(htam_v)",
    ("float", "const float v = in[r * cols + c]; out[c * rows + r] = v * v + K;"): "htam_v * htam_v + K",
    ("float", "out[c * rows + r] = static_cast<float>(in[r * cols + c]);"): "static_cast<float>(htam_v)",
    ("float", "out[c * rows + r] = in[r * cols + c];"): "htam_v",
}


def _facts(etype: str, body: str):
    text = (f"constexpr float K = 1.5f;\n__global__ void tp(const {etype} *in, {etype} *out, int rows, int cols, "
            "float alpha) {\n    int c = blockIdx.x * blockDim.x + threadIdx.x;\n"
            f"    int r = blockIdx.y * blockDim.y + threadIdx.y;\n    if (r < rows && c < cols) {{ {body} }}\n}}\n")
    model = parse_text(text, "cuda")
    return analyze(model, model.kernel("tp"))


@pytest.mark.parametrize(("etype", "body"), list(VALUES))
def test_the_stored_function_of_the_load_is_recorded(etype, body):
    (tp,) = _facts(etype, body).transposes
    assert tp.value == VALUES[(etype, body)]
    assert str(tp.rows) == "rows" and str(tp.cols) == "cols"


@pytest.mark.parametrize("body", [
    "out[c * rows + r] = in[r * cols + c] + threadIdx.x;",  # a thread index
    "out[c * rows + r] = in[r * cols + c] + c;",  # the thread's column
    "float v = in[r * cols + c]; out[c * rows + r] = v; if (v > 0.f) return;",  # the local read elsewhere
    "float v = in[r * cols + c]; v += 1.f; out[c * rows + r] = v;",  # the local written again
    "out[c * rows + r] = in[r * cols + c] * out[0];",  # another global read
])
def test_values_that_are_not_a_function_of_the_one_load_are_not_transposes(body):
    assert _facts("float", body).transposes == ()
