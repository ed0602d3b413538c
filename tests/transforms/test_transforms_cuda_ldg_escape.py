"""``cuda.ldg`` on a kernel whose pointers escape through casts (the form ``vectorize_loads`` writes): an output with
a visible store is never named in the refusal, and an input that escapes is refused with the reason (a new user's
trial: "out is not provably read-only; in is not provably read-only" after the tool's own float4 edit); the
``const float4`` view is a read of the input, so the refusal names it as a read-only input; a pointer passed to a
function escapes."""

from __future__ import annotations

import re

from htam_core.source.api import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

VECTORIZED = """
__global__ void axpb(float *out, const float *in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int n4 = n / 4;
    if (i < n4) {
        float4 v = reinterpret_cast<const float4 *>(in)[i];
        v.x = 2.0f * v.x + 1.0f; v.y = 2.0f * v.y + 1.0f; v.z = 2.0f * v.z + 1.0f; v.w = 2.0f * v.w + 1.0f;
        reinterpret_cast<float4 *>(out)[i] = v;
    }
    int j = 4 * n4 + i;
    if (i < n - 4 * n4) out[j] = 2.0f * in[j] + 1.0f;
}
"""


def test_the_float4_view_of_an_input_is_loaded_through_ldg_and_the_output_is_not_named():
    model = parse_text(VECTORIZED, "cuda")
    res = registry.propose("cuda.ldg", model, model.kernel("axpb"))
    assert not isinstance(res, NotApplicable), res.reason
    (c,) = res
    assert not re.search(r"\bout\b", c.description)  # the output is written: never a candidate, never named
    # the float4 view through a pointer to const is a read of in, not an escape: both of its loads are wrapped
    assert "float4 v = __ldg(&reinterpret_cast<const float4 *>(in)[i]);" in c.new_text
    assert "out[j] = 2.0f * __ldg(&in[j]) + 1.0f;" in c.new_text


def test_a_view_of_a_type_ldg_has_no_overload_for_is_refused_with_the_reason():
    text = VECTORIZED.replace("float4 v = reinterpret_cast<const float4 *>(in)[i];",
                              "float4 v = *reinterpret_cast<const float4 *>(in + 4 * i);")
    model = parse_text(text, "cuda")
    res = registry.propose("cuda.ldg", model, model.kernel("axpb"))
    assert isinstance(res, NotApplicable)
    assert not re.search(r"\bout\b", res.reason)
    assert "the read-only input in is not const __restrict__ (cuda.restrict_const" in res.reason


def test_an_input_passed_to_a_function_is_refused_as_escaping():
    text = VECTORIZED.replace("float4 v = reinterpret_cast<const float4 *>(in)[i];",
                              "float4 v = load4(in, i);")
    model = parse_text("__device__ float4 load4(const float *p, int i);\n" + text, "cuda")
    res = registry.propose("cuda.ldg", model, model.kernel("axpb"))
    assert isinstance(res, NotApplicable)
    assert "in is not provably read-only: it escapes" in res.reason
