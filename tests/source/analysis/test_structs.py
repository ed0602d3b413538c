"""The number fields of a struct passed by value (:mod:`htam_core.source.analysis.structs`): the layout read from
the definition (nested structs, CUDA vector types, fixed arrays, number typedefs), the reason a struct is not one
of numbers, and how brace lists, designated initializers and field assignments map onto the fields."""

from __future__ import annotations

import pytest

from htam_core.source.analysis.structs import field_values, struct_layout
from htam_core.source.analysis.syntax import parse_cuda

SRC = b"""
typedef float real;
using count_t = unsigned long long;
struct Inner { float x; int y; };
struct Params {
  Inner s; float3 v; real r; float c[3]; count_t n;
  static const int K = 4;
  Params() = default;
  __host__ __device__ float sum() const { return r; }
  struct { double q; } anon;
};
typedef struct { float wa, wb; } W;
typedef struct Tagged Tagged;
struct Tagged { double d; uint2 u; };
"""


def _roots(src: bytes = SRC) -> list:
    return [parse_cuda(src).root_node]


def test_the_fields_are_read_in_declaration_order_down_to_numbers() -> None:
    layout = struct_layout(_roots(), "Params")
    assert layout is not None and layout.unsupported is None
    assert [(f.path, f.dtype) for f in layout.fields] == [
        ("s.x", "float32"), ("s.y", "int32"), ("v.x", "float32"), ("v.y", "float32"), ("v.z", "float32"),
        ("r", "float32"), ("c[0]", "float32"), ("c[1]", "float32"), ("c[2]", "float32"), ("n", "int64"),
        ("anon.q", "float64")]
    assert [f.suffix for f in layout.fields][:2] == ["s__x", "s__y"] and layout.fields[7].suffix == "c__1"


@pytest.mark.parametrize(("name", "paths"), [("W", ["wa", "wb"]), ("struct W", ["wa", "wb"]),
                                             ("Tagged", ["d", "u.x", "u.y"])])
def test_typedef_spellings_find_their_definition(name: str, paths: list[str]) -> None:
    layout = struct_layout(_roots(), name)
    assert layout is not None and [f.path for f in layout.fields] == paths
    assert name != "Tagged" or layout.fields[1].ctype == "unsigned int"


def test_an_undefined_type_has_no_layout() -> None:
    assert struct_layout(_roots(), "Missing") is None


@pytest.mark.parametrize(("decl", "why"), [
    (b"struct S { float a; void *ctx; };", "`S`'s field `ctx` is a pointer to `void`, not to numbers"),
    (b"struct S { float **rows; };", "`S`'s field `rows` is a pointer to pointers"),
    (b"struct S { float * const fixed; };", "`S`'s field `fixed` is a const pointer"),
    (b"union S { int i; float f; };", "`S` is a union"),
    (b"struct B { float a; }; struct S : B { float b; };", "`S` derives from another class"),
    (b"struct S { int flags : 3; };", "`S`'s field `flags` is a bit-field"),
    (b"struct S { float a; S(float x) : a(x) {} };", "`S` has a constructor that takes arguments"),
    (b"struct S { const float a; };", "`S`'s field `a` is const"),
    (b"struct S { float a[N]; };", "`S`'s field `a[N]` is an array whose size htam does not read"),
    (b"struct S { float big[100]; };", "`S` holds 100 numbers"),
])
def test_a_struct_that_is_not_one_of_numbers_says_why(decl: bytes, why: str) -> None:
    layout = struct_layout(_roots(decl), "S")
    assert layout is not None and layout.unsupported is not None and why in layout.unsupported, layout
    assert not layout.fields


def test_a_pointer_to_numbers_is_a_field_marked_as_one() -> None:
    layout = struct_layout(_roots(b"typedef float real; struct S { float *out; const real *__restrict__ in; int n; };"),
                           "S")
    assert layout is not None and layout.unsupported is None
    assert [(f.path, f.dtype, f.pointer, f.const) for f in layout.fields] == [
        ("out", "float32", True, False), ("in", "float32", True, True), ("n", "int32", False, False)]


def test_brace_lists_follow_member_order_with_brace_elision() -> None:
    layout = struct_layout(_roots(), "Params")
    assert layout is not None
    nested = field_values(layout, ((1.0, 2), (3.0, 4.0, 5.0), 6.0, (7.0,), 8), ())
    assert nested == {"s.x": 1.0, "s.y": 2, "v.x": 3.0, "v.y": 4.0, "v.z": 5.0, "r": 6.0, "c[0]": 7.0, "c[1]": 0,
                      "c[2]": 0, "n": 8, "anon.q": 0}
    flat = field_values(layout, (1.0, 2, 3.0), ())
    assert flat["s.x"] == 1.0 and flat["s.y"] == 2 and flat["v.x"] == 3.0 and flat["v.y"] == 0 and flat["r"] == 0


def test_designated_and_assigned_fields_override_in_program_order() -> None:
    layout = struct_layout(_roots(), "Params")
    assert layout is not None
    got = field_values(layout, None, [("s.x", 1.5), ("c[2]", 2.5), ("v", (1.0, 2.0)), ("s.x", 3.5), ("nope", 1)])
    assert got == {"s.x": 3.5, "c[2]": 2.5, "v.x": 1.0, "v.y": 2.0, "v.z": 0}
    assert field_values(layout, None, [("s", 1.0), ("anon", 2.0)]) == {}  # a number is no struct's value
    assert field_values(layout, None, [("s", (1.0,))]) == {"s.x": 1.0, "s.y": 0}


def _declarators(decl: bytes) -> list:
    from htam_core.source.analysis.structs import field_declarators, struct_definition

    spec = struct_definition(_roots(b"struct S { " + decl + b" };"), "S")
    body = spec.child_by_field_name("body")
    return [d for item in body.named_children if item.type == "field_declaration" for d in field_declarators(item)]


@pytest.mark.parametrize(("decl", "want"), [
    (b"const float *x, *__restrict__ y;", [("x", ("*",), False), ("y", ("*__restrict__",), False)]),
    (b"float **pp;", [("pp", ("*", "*"), False)]),
    (b"float * const cp;", [("cp", ("* const",), False)]),
    (b"int c[3];", [("c", (), True)]),
    (b"float *ap[4];", [("ap", ("*",), True)]),
    (b"unsigned flag : 3;", [("flag", (), False)]),
])
def test_a_field_declarator_is_read_with_its_pointer_levels(decl, want):
    got = _declarators(decl)
    assert [(d.name, d.stars, d.array) for d in got] == want
    assert all(d.plain for d in got)
    assert all(d.bitfield == (b":" in decl) for d in got)


def test_a_function_pointer_field_is_not_plain():
    (d,) = _declarators(b"float (*fn)(float);")
    assert not d.plain and not d.array
