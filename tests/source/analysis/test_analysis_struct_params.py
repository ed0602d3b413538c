"""A struct passed by value to a kernel (:mod:`htam_core.source.analysis.struct_params`): its pointer fields are the
kernel's buffers (``p.x``), with their loads, stores and atomics, and its scalar fields bound the index (``i <
p.n``), in each usual spelling; the predicates and the static profile see them; a step that would qualify the
fields refuses in one line. Kernels written for these tests."""

from __future__ import annotations

import shutil

import pytest

from htam_core.memory.facts import compute_facts
from htam_core.source import parse_text
from htam_core.source.analysis import analyze
from htam_core.transforms import registry
from tests.support.nvcc_check import assert_compiles

KERNEL = """
__global__ void sumsq(PARAM) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.n) return;
    atomicAdd(p.out, p.x[i] * p.x[i]);
}
void run(ARG) { sumsq<<<(p.n + 255) / 256, 256>>>(p); }
"""

#: spelling -> (the struct's definition, the kernel's parameter)
SPELLINGS = {
    "struct": ("struct Sq { const float *x; float *out; int n; };", "Sq p"),
    "typedef_struct": ("typedef struct { const float* x; float* out; long long n; } SqArgs;", "SqArgs p"),
    "const_value": ("struct Sq { const float *x; float *out; int n; };", "const Sq p"),
    "struct_keyword": ("struct Sq { const float *x; float *out; unsigned n; };", "struct Sq p"),
    "class_public": ("class Sq { public: const float *x; float *out; int n; };", "Sq p"),
    "two_per_line": ("struct Sq { const float *x, *unused; float *out; int n; };", "Sq p"),
}


def _text(case: str) -> str:
    struct, param = SPELLINGS[case]
    return struct + KERNEL.replace("PARAM", param).replace("ARG", param)


def _facts(text: str, kernel: str = "sumsq"):
    model = parse_text(text, "cuda")
    return analyze(model, model.kernel(kernel))


@pytest.mark.parametrize("case", sorted(SPELLINGS))
def test_the_fields_are_buffers_with_their_loads_and_atomics(case):
    f = _facts(_text(case))
    modes = {p.name: p.mode for p in f.pointers}
    assert modes["p.x"] == "read" and modes["p.out"] == "readwrite"
    loads = [a for a in f.accesses if a.pointer == "p.x"]
    assert len(loads) == 2 and all(str(a.index) == "blockDim.x*blockIdx.x + threadIdx.x" for a in loads)
    assert [(u.update.pointer, u.op, u.scope) for u in f.uniform_atomics] == [("p.out", "add", "grid")]


def test_a_reference_or_a_changed_struct_is_not_read():
    ref = _text("struct").replace("(Sq p)", "(const Sq &p)", 1)
    assert not any("." in p.name for p in _facts(ref).pointers)
    changed = _text("struct").replace("if (i >= p.n) return;", "if (i >= p.n) return; p.x += 1;")
    assert not any("." in p.name for p in _facts(changed).pointers)


def test_the_control_with_plain_parameters_agrees():
    plain = KERNEL.replace("PARAM", "const float *x, float *out, int n").replace("p.", "")
    plain = plain.replace("void run(ARG) { sumsq<<<(n + 255) / 256, 256>>>(p); }", "")
    f, g = _facts(plain), _facts(_text("struct"))
    assert len(f.uniform_atomics) == len(g.uniform_atomics) == 1
    assert len([a for a in f.accesses if a.pointer == "x"]) == len([a for a in g.accesses if a.pointer == "p.x"])


def test_the_predicates_and_the_static_profile_see_the_fields():
    model = parse_text(_text("struct"), "cuda")
    k = model.kernel("sumsq")
    facts = compute_facts(k.features, "cuda", None, k, model)
    assert facts["uniform_atomic"] is True
    assert k.features.loads >= 1


def test_a_bound_through_a_field_makes_a_stencil():
    text = """struct St { const float *in; float *out; int n; };
__global__ void avg3(St s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i > 0 && i < s.n - 1) s.out[i] = s.in[i - 1] + s.in[i] + s.in[i + 1];
}
void run(St s) { avg3<<<(s.n + 127) / 128, 128>>>(s); }
"""
    st = _facts(text, "avg3").stencils
    assert st and st[0].pointer == "s.in" and (st[0].lo, st[0].hi) == (-1, 1)
    assert "s.n" in {s.name for r in st[0].reads for t in r.thread_terms for s in t.free_symbols}


def test_qualifying_the_fields_is_refused_in_one_line():
    model = parse_text(_text("struct"), "cuda")
    got = registry.propose("cuda.restrict_const", model, model.kernel("sumsq"))
    assert not isinstance(got, list)
    assert "struct passed by value" in got.reason and "\n" not in got.reason


def test_the_privatized_atomic_is_made_and_compiles(tmp_path):
    model = parse_text(_text("typedef_struct"), "cuda")
    cs = registry.propose("cuda.privatize_atomic", model, model.kernel("sumsq"))
    assert isinstance(cs, list), cs.reason
    assert "p.out" in cs[0].new_text and cs[0].new_text.count("atomicAdd(") == 1
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    assert_compiles(cs[0].new_text, tmp=tmp_path, name="k.cu")


NESTED = """struct Buf { float *data; int len; };
struct Job { Buf src; Buf dst; float scale; };
__global__ void scale3(Job j) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < j.src.len) j.dst.data[i] = j.scale * j.src.data[i];
}
void run(Job j) { scale3<<<(j.src.len + 255) / 256, 256>>>(j); }
"""


def test_a_nested_struct_member_is_read_through():
    f = _facts(NESTED, "scale3")
    assert {p.name: p.mode for p in f.pointers} == {"j.src.data": "read", "j.dst.data": "write"}
    model = parse_text(NESTED, "cuda")
    k = model.kernel("scale3")
    assert (k.features.loads, k.features.stores) == (1, 1)
    assert compute_facts(k.features, "cuda", None, k, model)["scalar_element_writes"] >= 1


@pytest.mark.parametrize("tid", ["cuda.ldg", "cuda.vectorize_float4"])
def test_a_step_that_rewrites_pointer_parameters_only_says_so(tid):
    model = parse_text(_text("struct"), "cuda")
    got = registry.propose(tid, model, model.kernel("sumsq"))
    assert not isinstance(got, list)
    assert "through a struct passed by value (p.x, p.out)" in got.reason, got.reason


#: spelling -> (the struct's definition, the kernel's parameter): the definition read by the one struct reader
#: (:mod:`htam_core.source.analysis.structs`), whatever else the struct declares.
MORE_SPELLINGS = {
    "typedef_of_tag": ("struct SqT { const float *x; float *out; int n; };\ntypedef struct SqT Sq;", "Sq p"),
    "static_member": ("struct Sq { static constexpr float *none = nullptr; const float *x; float *out; int n; };",
                      "Sq p"),
    "bit_field": ("struct Sq { const float *x; float *out; int n; unsigned flag : 1; };", "Sq p"),
    "restrict_field": ("struct Sq { const float *__restrict__ x; float *__restrict__ out; int n; };", "Sq p"),
    "namespaced": ("namespace ns { struct Sq { const float *x; float *out; int n; }; }", "ns::Sq p"),
}


def _more(case: str) -> str:
    struct, param = MORE_SPELLINGS[case]
    return struct + KERNEL.replace("PARAM", param).replace("ARG", param)


@pytest.mark.parametrize("case", sorted(MORE_SPELLINGS))
def test_the_buffers_are_the_declared_pointer_fields(case):
    f = _facts(_more(case))
    assert {p.name: p.mode for p in f.pointers} == {"p.x": "read", "p.out": "readwrite"}


def test_the_struct_params_are_its_fields_in_order():
    from htam_core.source.analysis.struct_params import field_params
    from htam_core.source.analysis.unit import cuda_source

    model = parse_text(_more("restrict_field"), "cuda")
    k = model.kernel("sumsq")
    src = cuda_source(model, k)
    assert not isinstance(src, str)
    got = field_params(src, k)
    assert [(p.name, p.is_pointer, p.is_const, p.is_restrict) for p in got] == [
        ("p.x", True, True, True), ("p.out", True, False, True), ("p.n", False, False, False)]


@pytest.mark.parametrize("change", ["Sq *q = &p;", "Sq *q = &(p);"])
def test_taking_the_struct_address_leaves_it_unread(change):
    text = _text("struct").replace("if (i >= p.n) return;", f"if (i >= p.n) return; {change} (void)q;")
    assert not any("." in p.name for p in _facts(text).pointers)


def test_a_union_or_an_array_field_is_not_read():
    union = _text("struct").replace("struct Sq", "union Sq", 1)
    assert not any("." in p.name for p in _facts(union).pointers)
    array = _text("struct").replace("int n; }", "int n; int pad[2]; }", 1)
    assert not any("." in p.name for p in _facts(array).pointers)


def test_a_field_address_leaves_the_struct_read():
    text = _text("struct").replace("if (i >= p.n) return;", "if (i >= p.n) return; const int *m = &p.n; (void)m;")
    assert "p.x" in {p.name for p in _facts(text).pointers}
