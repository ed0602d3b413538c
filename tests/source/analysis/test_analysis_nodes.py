"""The analysis layer's node queries (``htam_core.source.analysis.nodes``): what a node is, the nodes of a kind
under a node, and the line arithmetic of edits, on parsed CUDA and Python text."""

from __future__ import annotations

from htam_core.source.analysis import nodes as syn

CUDA = b"""__global__ void k(float *a, const float *__restrict__ b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // global index
    for (int j = 0; j < n; j++) { a[i] += b[j]; }
    while (n > 0) { n--; if (n == 3) break; }
    do { n++; } while (n < 2);
    switch (n) { case 1: continue_here(&n); break; }
    if (i >= n) return;
    a[i] = 2.0f * b[i];
}
"""

PY = b"""import triton
import triton.language as tl
from triton import language as tl2

@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.arange(0, BLOCK)
    acc = 0.0
    acc += tl.load(x_ptr + offs, mask=offs < n, other=0)
"""


def _root(src: bytes, grammar: str) -> syn.Node:
    return syn.parse(src, grammar).root_node  # type: ignore[arg-type]


def _texts(nodes: list[syn.Node], src: bytes) -> list[str]:
    return [syn.text(n, src) for n in nodes]


def test_loops_are_for_while_and_do_and_a_break_also_leaves_a_switch() -> None:
    root = _root(CUDA, "cuda")
    stmts = syn.statements(syn.function_definitions(root)[0].child_by_field_name("body"))
    kinds = [(syn.is_loop(s), syn.is_breakable(s), syn.is_compound_statement(s), syn.is_for(s)) for s in stmts]
    assert kinds == [
        (False, False, False, False),  # int i = ...
        (True, True, True, True),  # for
        (True, True, True, False),  # while
        (True, True, True, False),  # do
        (False, True, True, False),  # switch
        (False, False, True, False),  # if
        (False, False, False, False),  # a[i] = ...
    ]
    assert len(syn.loops(root)) == 3 and len(syn.for_loops(root)) == 1 and len(syn.for_or_while_loops(root)) == 2
    assert [syn.text(j, CUDA).split()[0] for j in syn.jumps(root)] == ["break;", "break;", "return;"]
    assert len(syn.function_exits(root)) == 1


def test_writes_are_assignments_and_increments_and_reads_are_not() -> None:
    root = _root(CUDA, "cuda")
    assert _texts(syn.writes(root), CUDA) == ["j++", "a[i] += b[j]", "n--", "n++", "a[i] = 2.0f * b[i]"]
    assert _texts(syn.assignments(root), CUDA) == ["a[i] += b[j]", "a[i] = 2.0f * b[i]"]
    assert all(syn.is_write(w) for w in syn.writes(root))
    addr = [p for p in syn.writes_or_addresses(root) if syn.is_pointer_expression(p)]
    assert _texts(addr, CUDA) == ["&n"] and syn.is_address_of(addr[0])
    assert "continue_here(&n)" in _texts(syn.effects(root), CUDA)


def test_names_numbers_subscripts_and_fields() -> None:
    root = _root(CUDA, "cuda")
    body = syn.function_definitions(root)[0].child_by_field_name("body")
    assert len(syn.references(body, CUDA, "i")) == 5
    assert _texts(syn.numbers(body), CUDA)[:2] == ["0", "0"]
    assert "threadIdx.x" in _texts(syn.fields(body), CUDA)
    assert _texts(syn.subscripts(body), CUDA) == ["a[i]", "b[j]", "a[i]", "b[i]"]
    assert [syn.is_simple_operand(n) for n in syn.names_and_fields(body)][:1] == [True]
    decl = syn.declarations(body)[0]
    (init,) = syn.init_declarators(decl)
    assert syn.is_declaration(decl) and syn.is_init_declarator(init)
    assert syn.is_binary(init.child_by_field_name("value"))
    assert [syn.is_comment(c) for c in syn.comments(root)] == [True]
    params = syn.function_declarators(root)[0].child_by_field_name("parameters").named_children
    assert [syn.is_pointer_declarator(p.child_by_field_name("declarator")) for p in params] == [True, True, False]
    assert [syn.is_type_qualifier(c) for c in params[1].named_children][:1] == [True]


def test_python_assignments_calls_and_arguments() -> None:
    root = _root(PY, "python")
    assert _texts(syn.py_assignments(root), PY) == ["offs = tl.arange(0, BLOCK)", "acc = 0.0"]
    assert [syn.is_augmented_assignment(a) for a in syn.any_py_assignments(root)] == [False, False, True]
    load = next(c for c in syn.py_calls(root) if syn.text(c, PY).startswith("tl.load"))
    args = load.child_by_field_name("arguments")
    assert [syn.is_positional_argument(a) for a in args.named_children] == [True, False, False]
    assert _texts(syn.keyword_arguments(args), PY) == ["mask=offs < n", "other=0"]
    assert _texts(syn.comparison_operators(root), PY) == ["offs < n"]
    assert _texts(syn.integers(load), PY) == ["0"]
    assert [syn.is_import(s) for s in root.named_children[:3]] == [True, True, True]
    assert len(syn.import_statements(root)) == 2
    params = syn.of_type(root, "parameters")[0].named_children
    assert [syn.is_default_parameter(p) for p in params] == [False, False, True]


def test_line_arithmetic_and_one_line() -> None:
    src = b"int a;\n    int b = 1; // one\n"
    pos = src.index(b"int b")
    assert syn.line_start(src, pos) == 7 and syn.indent_of(src, pos) == "    "
    assert syn.only_space_before(src, pos) and not syn.only_space_before(src, pos + 4)
    root = _root(src, "cuda")
    assert syn.one_line(src, root, 0, len(src), []) == "int a; int b = 1;"
    assert syn.error_ranges(root) == [] and syn.error_ranges(_root(b"int a = ;", "cuda"))


def test_declarators_around_a_name_and_name_declarations() -> None:
    src = b"template <typename T> __global__ void k(T *p) {\n    __shared__ float s[32];\n    float *q = p;\n"\
          b"    using V = float4;\n    namespace c = cooperative_groups;\n    q[0] = s[0];\n}\n"
    root = _root(src, "cuda")
    outer = [d.child_by_field_name("declarator") for d in syn.declarations(root)[:2]]  # s[32], *q = p
    assert [syn.is_declarator_around_name(d) for d in outer] == [True, True]
    inner = outer[1].child_by_field_name("declarator")  # *q
    assert not syn.is_declarator_around_name(inner) and syn.is_declarator_around_name(inner, pointers=True)
    body = syn.function_definitions(root)[0].child_by_field_name("body")
    assert [syn.is_name_declaration(s) for s in syn.statements(body)] == [True, True, True, True, False]
    assert _texts(syn.type_names(root), src) == ["T", "T", "V", "float4"]


def test_python_unary_and_binary_operators() -> None:
    src = b"y = -x + 2 * z\n"
    expr = syn.py_assignments(_root(src, "python"))[0].child_by_field_name("right")
    assert syn.is_binary_operator(expr) and syn.is_unary_operator(expr.child_by_field_name("left"))
    assert not syn.is_unary_operator(expr)


def test_statement_span_takes_the_whole_line_and_the_loops_pragma() -> None:
    src = b'#include <cuda.h>\n#include "x.h"\nvoid f(int n) {\n    int a = 0;\n    #pragma unroll\n'\
          b"    for (int i = 0; i < 4; i++) a += i;\n    a++; n++;\n}\n"
    root = _root(src, "cuda")
    body = syn.function_definitions(root)[0].child_by_field_name("body")
    decl, loop, inc, inc2 = syn.statements(body)
    assert src[slice(*syn.statement_span(src, decl))] == b"    int a = 0;\n"
    assert src[slice(*syn.statement_span(src, loop))].startswith(b"    #pragma unroll\n    for")
    assert src[slice(*syn.statement_span(src, inc))] == b"a++;"  # not alone on its line
    assert syn.include_insert_point(root, src) == src.index(b"void")
    bare = b"void f() {}\n"
    assert syn.include_insert_point(_root(bare, "cuda"), bare) == 0


#: a function definition's parameter list -> its parameter names (the reader of host wrappers and panel tiling)
PARAM_LISTS = {
    "const float *__restrict__ a, float *b, int n": ["a", "b", "n"],
    "float a[], const float &s, float *": ["a", "s", ""],
    "float (*f)(float), /* scale */ float s": ["", "s"],
    "double *out, unsigned long long count": ["out", "count"],
}


def test_function_parameter_names_in_each_spelling():
    for params, want in PARAM_LISTS.items():
        for head in ("void", "template <typename T> __host__ void", "static inline void"):
            src = f"{head} h({params}) {{ }}\n".encode()
            fn = syn.of_type(syn.parse(src, "cuda").root_node, "function_definition")[0]
            assert syn.function_parameter_names(fn, src) == want, (head, params)
