"""``side_effect_free`` / ``effect_free``: a host expression (a launch argument) the transforms may evaluate twice,
such as a size passed through a cast, against one with a call, an assignment or an increment; and
``initializer_effect_free``: a local whose declaration may go once nothing reads it (``cg::this_thread_block()``
included)."""

from __future__ import annotations

import pytest

from htam_core.source.analysis.nodes import Node, declarations, declared_identifier
from htam_core.source.analysis.syntax import (
    effect_free,
    initializer_effect_free,
    parse_cuda,
    side_effect_free,
)


@pytest.mark.parametrize("expr", ["M", "(unsigned int)M", "static_cast<int64_t>(n)", "int(n)", "a.x * 2 + 1",
                                  "p[i]", "(size_t)rows * cols"])
def test_names_operators_and_casts_are_free_of_effects(expr):
    assert side_effect_free(expr)


@pytest.mark.parametrize("expr", ["n++", "--n", "f(n)", "a = b", "M, N", "get<int>(n)", "x +", ""])
def test_calls_assignments_increments_and_broken_text_are_not(expr):
    assert not side_effect_free(expr)


@pytest.mark.parametrize("expr", ["__ldg(&v[i]) != 0", "__ldg(v + i)", "!__ldcs(&flag[i])"])
def test_a_load_intrinsic_only_reads(expr):
    """The form ``cuda.ldg`` writes (``__ldg(&v[i])``) in a guard is a read, as ``v[i]`` is."""
    assert side_effect_free(expr)


@pytest.mark.parametrize("expr", ["__ldg_helper(&v[i])", "load(&v[i])", "__ldg(&v[i], 1)"])
def test_a_helper_named_like_a_load_is_a_call(expr):
    assert not side_effect_free(expr)


def _declarators(body: str) -> dict[str, Node]:
    """Name -> declarator node of every local declared in ``__global__ void k(...) { body }``."""
    src = ("__global__ void k(float *p, int n) {\n" + body + "\n}\n").encode()
    root = parse_cuda(src).root_node
    out = {}
    for decl in declarations(root):
        for d in decl.children_by_field_name("declarator"):
            ident = declared_identifier(d)
            if ident is not None:
                out[ident.text.decode()] = d
    return out


@pytest.mark.parametrize("call", ["this_thread_block()", "cg::this_thread_block()",
                                  "cooperative_groups::this_thread_block()", "cg :: this_thread_block( )"])
def test_the_block_handle_is_a_pure_builtin(call):
    assert side_effect_free(call)
    d = _declarators(f"auto cta = {call};")["cta"]
    assert initializer_effect_free(d)


@pytest.mark.parametrize("call", ["this_thread_block(g)", "mine::this_thread_block()", "this_grid_sync()"])
def test_other_calls_are_not_pure_builtins(call):
    assert not side_effect_free(call)
    assert not initializer_effect_free(_declarators(f"auto h = {call};")["h"])


def test_a_declarators_initializer_is_read_from_the_tree():
    ds = _declarators("int t = threadIdx.x, i = n++; float s; float a[4] = {0.f, 1.f};\n"
                      "float v = __ldg(p + t); int c = atomicAdd((int *)p, 1); int u = (t, i);")
    got = {name: initializer_effect_free(d) for name, d in ds.items()}
    assert got == {"t": True, "i": False, "s": True, "a": True, "v": True, "c": False, "u": False}
    # the text reading and the tree reading agree on an expression node
    value = ds["t"].child_by_field_name("value")
    assert effect_free(value) and side_effect_free(value.text.decode())
