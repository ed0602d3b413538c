"""Kernels of the same name: identity (qualified name, overload signature) and which kernel each launch runs
(htam_core.source.analysis.kernel_names). Every fixture compiles with ``nvcc -arch=sm_90 -c`` (checked below)."""

from __future__ import annotations

import shutil
import textwrap

import pytest

from htam_core.source import Document, parse_text
from htam_core.source.model import SourceModel
from htam_core.transforms.base import NotApplicable
from htam_core.transforms.registry import propose
from tests.support.nvcc_check import assert_compiles

BODY = "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= s; }"


def _model(src: str) -> SourceModel:
    return parse_text(textwrap.dedent(src).lstrip("\n"), "cuda")


def _lines(model: SourceModel, ident: str) -> list[int]:
    return [s.line for s in model.kernel(ident).launch_sites]


NAMESPACES = f"""
namespace f32 {{ __global__ void scale(float* x, float s, int n) {BODY} }}
namespace f64 {{ __global__ void scale(double* x, double s, int n) {BODY} }}
void run(float* a, double* b, int n) {{
    f32::scale<<<n / 256, 256>>>(a, 2.f, n);
    f64::scale<<<n / 128, 128>>>(b, 2.0, n);
}}
"""

NESTED = f"""
namespace ops {{ namespace rows {{ __global__ void scale(float* x, float s, int n) {BODY} }} }}
namespace ops::cols {{ __global__ void scale(float* x, float s, int n) {BODY} }}
namespace ops {{
void run(float* a, int n) {{
    rows::scale<<<n / 256, 256>>>(a, 2.f, n);
    ::ops::cols::scale<<<n / 64, 64>>>(a, 2.f, n);
}}
}}
"""

USING = f"""
namespace f32 {{ __global__ void scale(float* x, float s, int n) {BODY} }}
namespace f64 {{ __global__ void scale(double* x, double s, int n) {BODY} }}
namespace f64 {{
void in_f64(double* b, int n) {{ scale<<<n / 128, 128>>>(b, 2.0, n); }}
}}
void with_using(float* a, int n) {{
    using namespace f32;
    scale<<<n / 256, 256>>>(a, 2.f, n);
}}
"""

OVERLOADS = f"""
#include <cuda_fp16.h>
__global__ void scale(float* x, float s, int n) {BODY}
__global__ void scale(double* x, double s, int n) {BODY}
__global__ void scale(__half* x, __half s, int n) {{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = x[i] * s; }}
void run(float* a, int n) {{
    double* b; half* h;
    cudaMalloc(&b, n * sizeof(double)); cudaMalloc(&h, n * sizeof(__half));
    scale<<<n / 256, 256>>>(a, 2.f, n);
    scale<<<n / 128, 128>>>(b, 2.0, n);
    scale<<<n / 64, 64>>>(h, __float2half(2.f), n);
    scale<<<n / 32, 32>>>((double*)b, 2.0, n);
}}
"""

ANONYMOUS = f"""
namespace {{ __global__ void scale(float* x, float s, int n) {BODY} }}
namespace f64 {{ __global__ void scale(double* x, double s, int n) {BODY} }}
void run(float* a, double* b, int n) {{
    scale<<<n / 256, 256>>>(a, 2.f, n);
    f64::scale<<<n / 128, 128>>>(b, 2.0, n);
}}
"""

AMBIGUOUS = f"""
__global__ void scale(float* x, float s, int n) {BODY}
__global__ void scale(double* x, double s, int n) {BODY}
template <typename T> T* buffer();
void run(int n) {{
    scale<<<n / 256, 256>>>(buffer<float>(), 2.f, n);
}}
"""

TEMPLATE = """
#include <cuda_fp16.h>
template <typename T>
__global__ void scale(T* x, T s, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= s; }
template __global__ void scale<float>(float*, float, int);
template __global__ void scale<double>(double*, double, int);
template <>
__global__ void scale<__half>(__half* x, __half s, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = x[i] * s; }
void run(float* a, double* b, int n) {
    scale<float><<<n / 256, 256>>>(a, 2.f, n);
    scale<<<n / 128, 128>>>(b, 2.0, n);
}
"""

TIE = f"""
__global__ void scale(float* x, float s, int n) {BODY}
__global__ void scale(float* x, double s, int n) {BODY}
template <typename T> T* buffer();
void run(float* a, int n) {{
    scale<<<n / 256, 256>>>(a, 2.0, n);
    scale<<<n / 128, 128>>>(buffer<float>(), 2.0, n);
}}
"""

ALL = [NAMESPACES, NESTED, USING, OVERLOADS, ANONYMOUS, AMBIGUOUS, TEMPLATE, TIE]


def test_namespaced_kernels_have_qualified_names_and_their_own_launches() -> None:
    m = _model(NAMESPACES)
    assert [k.identity for k in m.kernels] == ["f32::scale", "f64::scale"]
    assert _lines(m, "f32::scale") == [4] and _lines(m, "f64::scale") == [5]


def test_nested_namespaces_and_a_b_spelling_resolve_from_the_launch_scope() -> None:
    m = _model(NESTED)
    assert [k.identity for k in m.kernels] == ["ops::rows::scale", "ops::cols::scale"]
    assert _lines(m, "ops::rows::scale") == [5] and _lines(m, "ops::cols::scale") == [6]


def test_unqualified_launch_inside_the_namespace_and_through_using_namespace() -> None:
    m = _model(USING)
    assert _lines(m, "f64::scale") == [4] and _lines(m, "f32::scale") == [8]


def test_overloads_by_float_double_half_pointer_and_cast() -> None:
    m = _model(OVERLOADS)
    ids = [k.identity for k in m.kernels]
    assert ids == ["scale(float*, float, int)", "scale(double*, double, int)", "scale(__half*, __half, int)"]
    assert _lines(m, ids[0]) == [8] and _lines(m, ids[1]) == [9, 11] and _lines(m, ids[2]) == [10]
    assert m.kernel("scale( double*, double, int)") is m.kernels[1]  # spaces do not matter
    assert not any(s.ambiguous for k in m.kernels for s in k.launch_sites)


def test_anonymous_namespace_kernel_is_named_without_it() -> None:
    m = _model(ANONYMOUS)
    assert [k.identity for k in m.kernels] == ["scale", "f64::scale"]
    assert _lines(m, "scale") == [4] and _lines(m, "f64::scale") == [5]


def test_template_with_explicit_instantiations_is_one_kernel_with_both_launches() -> None:
    m = _model(TEMPLATE)
    assert {k.identity for k in m.kernels} == {"scale"}  # the primary and its specialization: one name
    assert m.kernel("scale") is m.kernels[0] and _lines(m, "scale") == [9, 10]


def test_ambiguous_name_lists_the_qualified_choices() -> None:
    with pytest.raises(KeyError, match=r"'scale' names 2 kernels .*pass one of f32::scale, f64::scale"):
        _model(NAMESPACES).kernel("scale")
    with pytest.raises(KeyError, match=r"scale\(float\*, float, int\), scale\(double\*, double, int\)"):
        _model(AMBIGUOUS).kernel("scale")


def test_unresolvable_launch_is_marked_and_no_step_changes_it() -> None:
    m = _model(AMBIGUOUS)
    sites = [s for k in m.kernels for s in k.launch_sites]
    assert len(sites) == 2 and all(s.ambiguous == ("scale(float*, float, int)", "scale(double*, double, int)")
                                   for s in sites)
    result = propose("cuda.vectorize_float4", m, m.kernel("scale(float*, float, int)"))
    assert isinstance(result, NotApplicable)
    assert "the launch on line 5 may run scale(float*, float, int) or scale(double*, double, int)" in result.reason
    for step in ("cuda.launch_bounds", "cuda.block_size"):  # computed from, or changing, the launch's block size
        result = propose(step, m, m.kernel("scale(double*, double, int)"))
        assert isinstance(result, NotApplicable) and "may run" in result.reason, step
    ok = propose("cuda.launch_bounds", _model(NAMESPACES), _model(NAMESPACES).kernel("f64::scale"))
    assert isinstance(ok, list) and "__launch_bounds__(128)" in ok[0].new_text  # a resolved launch is read


def test_vectorize_changes_only_the_launch_of_the_chosen_kernel() -> None:
    m = _model(NAMESPACES)
    result = propose("cuda.vectorize_float4", m, m.kernel("f32::scale"))
    assert isinstance(result, list)
    new = result[0].new_text
    assert "f64::scale<<<n / 128, 128>>>(b, 2.0, n);" in new  # the double kernel's launch is left alone
    assert "f32::scale<<<n / 256, 256>>>" not in new and "f32::scale<<<" in new


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_fixtures_compile(tmp_path) -> None:
    for i, src in enumerate(ALL):
        assert_compiles(textwrap.dedent(src).lstrip("\n"), tmp=tmp_path, name=f"k{i}.cu", context=i)


def test_known_scalar_types_break_a_tie_only_when_every_argument_is_known() -> None:
    m = _model(TIE)
    assert _lines(m, "scale(float*, double, int)") == [5, 6] and _lines(m, "scale(float*, float, int)") == [6]
    first, second = m.kernels[1].launch_sites
    assert not first.ambiguous and len(second.ambiguous) == 2


def test_editor_fast_path_keeps_the_identity_and_the_launches() -> None:
    text = textwrap.dedent(OVERLOADS).lstrip("\n")
    doc = Document(text, "cuda")
    assert doc.model.kernels
    line = 2  # inside the double overload's body (0-based): typing there takes the fast path
    col = text.split("\n")[line].index("if (i < n)")
    for n, ch in enumerate("i+0;"):
        doc.apply_change(line, col + n, line, col + n, ch)
        k = doc.kernel_at(line, col)
        ref = parse_text(doc.text, "cuda").kernel("scale(double*, double, int)")
        assert k == ref and k.identity == "scale(double*, double, int)"
        assert [s.line for s in k.launch_sites] == [9, 11]
