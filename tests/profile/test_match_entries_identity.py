"""ptxas entries of kernels that share a name: the static profile reads only the entries of the kernel asked for
(its qualified name, and its parameter types for an overload), every instantiation of a template as before."""

from __future__ import annotations

import textwrap

from htam_core.profile.static_cuda import PtxasEntry, match_entries
from htam_core.source import parse_text

BODY = "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= s; }"


def _entries(*demangled: str) -> list[PtxasEntry]:
    return [PtxasEntry(mangled=f"_Z{i}", demangled=d, registers=10 + i) for i, d in enumerate(demangled)]


def test_namespaced_kernels_read_their_own_entries() -> None:
    m = parse_text(textwrap.dedent(f"""
        namespace f32 {{ __global__ void scale(float* x, float s, int n) {BODY} }}
        namespace f64 {{ __global__ void scale(double* x, double s, int n) {BODY} }}
        namespace {{ __global__ void other(float* x, float s, int n) {BODY} }}
        """), "cuda")
    entries = _entries("f32::scale(float*, float, int)", "f64::scale(double*, double, int)")
    assert [e.demangled for e in match_entries(entries, "scale", m.kernel("f64::scale"))] == \
        ["f64::scale(double*, double, int)"]
    assert len(match_entries(entries, "scale")) == 2  # without the kernel: every entry of the name
    anon = _entries("(anonymous namespace)::other(float*, float, int)", "x::other(float*, float, int)")
    assert [e.demangled for e in match_entries(anon, "other", m.kernel("other"))] == [anon[0].demangled]


def test_overloads_by_parameter_types_and_templates_keep_every_instantiation() -> None:
    m = parse_text(textwrap.dedent(f"""
        #include <cuda_fp16.h>
        __global__ void scale(float* x, float s, int n) {BODY}
        __global__ void scale(__half* x, __half s, int n) {BODY}
        template <typename T> __global__ void tscale(T* x, T s, int n) {BODY}
        """), "cuda")
    entries = _entries("scale(float*, float, int)", "scale(__half*, __half, int)")
    assert [e.demangled for e in match_entries(entries, "scale", m.kernel("scale(__half*, __half, int)"))] == \
        ["scale(__half*, __half, int)"]
    inst = _entries("void tscale<float>(float*, float, int)", "void tscale<double>(double*, double, int)")
    assert len(match_entries(inst, "tscale", m.kernel("tscale"))) == 2
