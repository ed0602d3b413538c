"""Function-like macros read through by the analysis layer (``htam_core.source.analysis.macros``): accesses,
index forms, casts and calls seen in the expansion, at the call's own source range; the cases the reading gives
up on (stringizing, variadic, statement bodies, half-typed definitions, unparenthesized parameters that would
bind differently) stay opaque calls."""

from __future__ import annotations

from pathlib import Path

import pytest
import sympy
from conftest import facts_of_text

from htam_core.source import load
from htam_core.source.analysis import analyze, sym
from htam_core.source.analysis.macros import ExpandedIndex, call_alias, expansion, macro_table, replacement
from htam_core.source.analysis.syntax import of_type, parse_cuda, strip_casts

KERNEL = """\
__global__ void k(const float *A, const float *B, float *C, int M, int N) {{
    int r = blockIdx.y * 16 + threadIdx.y;
    int c = blockIdx.x * 16 + threadIdx.x;
    if (r < M && c < N) {{
        {body}
    }}
}}
"""


def _facts(defines: str, body: str, after: str = ""):  # noqa: ANN202 - KernelFacts
    text = defines + "\n" + KERNEL.format(body=body) + after
    return text, facts_of_text(text, "k")


def _index(facts, pointer: str, kind: str = "read") -> sympy.Expr | None:
    acc = [a for a in facts.accesses if a.pointer == pointer and a.kind == kind]
    assert len(acc) == 1, facts.accesses
    return acc[0].index


ROW_MAJOR = sym("N") * (16 * sym("blockIdx.y") + sym("threadIdx.y")) + 16 * sym("blockIdx.x") + sym("threadIdx.x")


def test_access_through_a_macro_with_the_pointer_as_parameter() -> None:
    text, f = _facts("#define AT(p, r, c, ld) ((p)[(r) * (ld) + (c)])", "AT(C, r, c, N) = AT(A, r, c, N);")
    assert sympy.simplify(_index(f, "C", "write") - ROW_MAJOR) == 0
    assert sympy.simplify(_index(f, "A") - ROW_MAJOR) == 0
    write = next(a for a in f.accesses if a.pointer == "C")
    # the fact points at the whole call, the user's text
    assert text.encode()[write.span[0]:write.span[1]] == b"AT(C, r, c, N)"
    assert write.index_text == "(r) * (N) + (c)"  # the index as the compiler reads it
    assert {p.name: p.mode for p in f.pointers}["C"] == "write"


def test_access_through_a_macro_naming_a_kernel_pointer() -> None:
    _, f = _facts("#define A_AT(i, j) A[(i) * N + (j)]", "C[r * N + c] = A_AT(r, c);")
    assert sympy.simplify(_index(f, "A") - ROW_MAJOR) == 0


def test_nested_macros_and_a_macro_as_an_argument() -> None:
    defines = ("#define IDX2R(i, j, ld) (((i) * (ld)) + (j))\n#define AT(p, i, j, ld) (p)[IDX2R(i, j, ld)]\n"
               "#define ROW(i) ((i) + 0)")
    _, f = _facts(defines, "C[IDX2R(r, c, N)] = AT(A, ROW(r), c, N);")
    assert sympy.simplify(_index(f, "C", "write") - ROW_MAJOR) == 0
    assert sympy.simplify(_index(f, "A") - ROW_MAJOR) == 0


def test_macro_parameters_do_not_capture_kernel_names() -> None:
    # the macro's parameter r receives the kernel's c and the other way round: substitution, not name lookup
    _, f = _facts("#define AT(p, r, c, ld) ((p)[(r) * (ld) + (c)])", "C[r * N + c] = AT(A, c, r, N);")
    col_major = sym("N") * (16 * sym("blockIdx.x") + sym("threadIdx.x")) + 16 * sym("blockIdx.y") + sym("threadIdx.y")
    assert sympy.simplify(_index(f, "A") - col_major) == 0
    assert next(a for a in f.accesses if a.pointer == "A").pattern("x") == "strided"


def test_a_local_named_like_a_macro_is_not_a_call() -> None:
    # a function-like macro expands only where its name is followed by `(`
    _, f = _facts("#define AT(p, i) ((p)[i])", "int AT = c; C[r * N + AT] = A[r * N + c];")
    assert sympy.simplify(_index(f, "C", "write") - ROW_MAJOR) == 0


def test_undef_and_a_definition_after_the_kernel() -> None:
    after = "#define LATE(p, i) ((p)[i])\n"
    _, f = _facts("#define AT(p, i) ((p)[i])\n#undef AT", "C[r * N + c] = AT(A, r * N + c) + LATE(B, c);", after)
    assert [a.pointer for a in f.accesses] == ["C"]
    table = macro_table(b"#define AT(p, i) ((p)[i])\nint x;\n#undef AT\n")
    assert table.at("AT", 30) is not None and table.at("AT", 60) is None and table.at("AT", 0) is None


def test_stringizing_variadic_statement_and_half_typed_macros_are_not_expanded() -> None:
    defines = ("#define STR(p, i) (p[i], #p)\n#define VA(...) A[__VA_ARGS__]\n"
               "#define SET(p, i, v) do { (p)[i] = (v); } while (0)\n#define HALF(p, i")
    _, f = _facts(defines, "C[r * N + c] = STR(A, c) + VA(c);\n        SET(B, c, 1.0f);")
    assert [a.pointer for a in f.accesses] == ["C"] and not f.errors
    refusals = {d.name: d.refusal for d in macro_table(defines.encode()).defs}
    assert "stringizes" in refusals["STR"] and "variadic" in refusals["VA"]
    assert "statement" in refusals["SET"] and "not complete" in refusals["HALF"]


def test_an_unparenthesized_parameter_gives_up_for_a_compound_argument() -> None:
    # SQ(c + 1) is c + 1*c + 1 to the compiler, not (c + 1)**2: the reading gives up rather than guess
    _, f = _facts("#define SQ(x) x*x", "C[SQ(c + 1)] = A[SQ(c)];")
    assert _index(f, "C", "write").free_symbols == {sympy.Symbol("call(SQ(c + 1))")}
    assert sympy.simplify(_index(f, "A") - (16 * sym("blockIdx.x") + sym("threadIdx.x")) ** 2) == 0


def test_recursion_is_guarded() -> None:
    # a macro that names itself is not expanded again inside its own expansion (C11 6.10.3.4)
    _, f = _facts("#define SELF(i) (SELF(i) + 1)", "C[SELF(c)] = A[c];")
    assert _index(f, "C", "write") is not None
    table = macro_table(b"#define F(x) (F(x) + 1)\n")
    assert expansion(table.defs[0], ["a"], table, 100) == "(F(a) + 1)"


def test_expansion_text_follows_the_preprocessor() -> None:
    table = macro_table(b"#define SQ(x) x*x\n#define TWICE(x) (SQ(x) + SQ(x))\n")
    assert expansion(table.defs[1], ["a+1"], table, 100) == "(a+1*a+1 + a+1*a+1)"


def _call(src: bytes):  # noqa: ANN202 - the first call node
    root = parse_cuda(src).root_node
    return [c for c in of_type(root, "call_expression") if c.child_by_field_name("function").text != b"k"][0]


def test_cast_and_call_macros_read_through() -> None:
    src = b"#define TO_F(x) ((float)(x))\n#define EXPF(v) __expf(v)\nvoid g(float *p) { float y = TO_F(p[0]); }\n"
    assert strip_casts(_call(src)).type == "subscript_expression"
    assert call_alias(_call(b"#define EXPF(v) (__expf((v)))\nvoid g(float x) { float y = EXPF(x - 1); }\n")) \
        == "__expf"
    assert call_alias(_call(b"#define SCALE(v) expf(2 * (v))\nvoid g(float x) { float y = SCALE(x); }\n")) is None
    # used before its definition: a plain call
    assert call_alias(_call(b"void g(float x) { float y = EXPF(x); }\n#define EXPF(v) expf(v)\n")) is None


def test_builtins_inside_macros_are_facts() -> None:
    _, f = _facts("#define TX(i) (threadIdx.x + (i))\n#define GY (blockIdx.y)", "C[r * N + TX(0)] = A[GY];")
    assert ("TX", "threadIdx.x") in f.macro_builtins and ("GY", "blockIdx.y") in f.macro_builtins


def test_an_expanded_index_renames_names_not_members_or_literals() -> None:
    idx = ExpandedIndex("(row) * K + (k) + p.k + q->k + s::k")
    assert idx.names() == {"row", "K", "k", "p", "q", "s"}
    assert idx.rename({"k": "htam_ka", "row": "r0 + m"}) == "((r0 + m)) * K + ((htam_ka)) + p.k + q->k + s::k"
    assert idx.rename({"k": "kk"}, paren=False) == "(row) * K + (kk) + p.k + q->k + s::k"


def test_an_access_macro_records_its_name_and_expanded_index() -> None:
    _, f = _facts("#define A_AT(i, j) A[(i) * N + (j)]", "C[r * N + c] = A_AT(r, c + 1);")
    acc = next(a for a in f.accesses if a.pointer == "A")
    assert acc.macro == "A_AT" and acc.index_text == "(r) * N + (c + 1)"
    assert next(a for a in f.accesses if a.pointer == "C").macro == ""


def test_a_parameter_named_like_a_member_is_not_substituted_there() -> None:
    # `.x` is a member name, not the parameter x
    _, f = _facts("#define PLUS_TX(x) ((x) + threadIdx.x)", "C[r * N + PLUS_TX(0)] = A[c];")
    assert sympy.simplify(_index(f, "C", "write") - (ROW_MAJOR - 16 * sym("blockIdx.x"))) == 0


POST_PROCESS = Path("/work/shared/corpus/public/cuda-samples/Samples/5_Domain_Specific/postProcessGL/postProcessGL.cu")


@pytest.mark.skipif(not POST_PROCESS.exists(), reason="the cuda-samples corpus is not present")
def test_shared_tile_accesses_through_a_sample_macro() -> None:
    # `#define SMEM(X, Y) sdata[(Y) * tilew + (X)]`: the halo loads and the stencil read are shared accesses
    model = load(POST_PROCESS)
    f = analyze(model, model.kernel("cudaProcess"))
    through = [a for a in f.accesses if a.macro == "SMEM"]
    assert len(through) == 10 and all(a.pointer == "sdata" and a.space == "shared" for a in through)
    assert [a.kind for a in through].count("write") == 9
    assert all(a.pattern("x") == "contiguous" for a in through)


def test_variadic_macros_are_kept_with_their_variadic_parameter() -> None:
    # C99 `...` reads as __VA_ARGS__, GNU `args...` as args; both stay refused as expressions
    src = b"#define V(k, ...) k(__VA_ARGS__)\n#define G(k, rest...) k(rest)\n#define P(a, b) ((a) + (b))\n"
    v, g, p = macro_table(src).defs
    assert (v.params, v.variadic, v.named()) == (("k", "__VA_ARGS__"), True, ("k",))
    assert (g.params, g.variadic, g.named()) == (("k", "rest"), True, ("k",))
    assert (p.params, p.variadic, p.refusal) == (("a", "b"), False, "")
    assert "variadic" in v.refusal and "variadic" in g.refusal and v.substitutable and g.substitutable
    assert expansion(v, ["f", "x"], macro_table(src), 200) is None  # the expression reading is unchanged


@pytest.mark.parametrize(("use", "expected"), [
    (["f", "a", "b + 1", "(c, d)"], "f(a, b + 1, (c, d))"),
    (["f"], "f()"),  # no variadic argument: an empty __VA_ARGS__
    (["f", "P(x, 2)"], "f(((x) + (2)))"),  # an expression macro in an argument is expanded
])
def test_a_variadic_macro_is_replaced_like_the_preprocessor(use: list[str], expected: str) -> None:
    src = b"#define P(a, b) ((a) + (b))\n#define V(k, ...) k(__VA_ARGS__)\n#define G(k, rest...) k(rest)\n"
    table = macro_table(src)
    for name in ("V", "G"):
        d = table.at(name, len(src))
        assert d is not None and replacement(d, use, table, len(src)) == expected
    assert replacement(table.at("V", len(src)), [""], table, len(src)) == "()"  # V() binds k to nothing


def test_replacement_of_a_plain_macro_matches_its_expansion() -> None:
    src = b"#define SQ(x) x*x\n#define TWICE(x) (SQ(x) + SQ(x))\n#define NONE() (1)\n#define SET(p, v) do { p = v; } while (0)\n"
    table = macro_table(src)
    twice, none, setm = table.at("TWICE", len(src)), table.at("NONE", len(src)), table.at("SET", len(src))
    assert replacement(twice, ["a+1"], table, len(src)) == expansion(twice, ["a+1"], table, len(src))
    assert replacement(none, [""], table, len(src)) == "(1)" == expansion(none, [], table, len(src))
    assert replacement(twice, ["a", "b"], table, len(src)) is None  # too many for a macro that is not variadic
    assert replacement(setm, ["x", "SQ(2)"], table, len(src)) == "do { x = 2*2; } while (0)"
    assert "statement" in setm.refusal and expansion(setm, ["x", "1"], table, len(src)) is None


def test_stringizing_variadic_macros_are_not_substitutable() -> None:
    table = macro_table(b"#define S(...) #__VA_ARGS__\n#define O(x, ...) f(x __VA_OPT__(,) __VA_ARGS__)\n")
    assert [(d.variadic, d.substitutable) for d in table.defs] == [(True, False), (True, False)]
    assert replacement(table.defs[0], ["a"], table, 100) is None
