"""1-D window reads in normal form (:attr:`KernelFacts.stencils`, :mod:`htam_core.source.analysis.stencil`): the
pointer, the window's offsets and the bounds checks as thread or element terms, whatever the spelling; the exact set
of elements a block reads (:func:`tile_conditions`) checked against an enumeration of the block's threads and taps;
one line for what is not read."""

from __future__ import annotations

import pytest
import sympy
from conftest import facts_of_text

from htam_core.source.analysis import sym
from htam_core.source.analysis.stencil import ELEMENT, THREAD, c_condition, tile_conditions

HEAD = "__global__ void k(const float *in, float *out, int n) {\n"
TAIL = "\n}\nvoid launch(const float *in, float *out, int n) { k<<<(n + 63) / 64, 64>>>(in, out, n); }\n"
GID = "int i = blockIdx.x * blockDim.x + threadIdx.x;\n"

#: body -> (lo, hi, window loop variable or None, thread terms, element terms)
SPELLINGS = {
    "symmetric, early return": (
        "#define R 3\n", GID + "if (i < R || i >= n - R) return;\nfloat s = 0;\n"
        "for (int j = -R; j <= R; ++j) s += in[i + j];\nout[i] = s;", (-3, 3, "j", 2, 0)),
    "0..2R with an offset, guarded body": (
        "constexpr int R = 2;\n", GID + "if (i >= R && i < n - R) { float s = 0;\n"
        "for (int t = 0; t < 2 * R + 1; t++) s += in[i + t - R];\nout[i] = s; }", (-2, 2, "t", 2, 0)),
    "j < R + 1, per-element check": (
        "#define R 2\n", GID + "if (i < n) { float s = 0;\n"
        "for (int j = -R; j < R + 1; j++) if (i + j >= 0 && i + j < n) s += in[i + j];\nout[i] = s; }",
        (-2, 2, "j", 1, 2)),
    "?: padding and continue, local source index": (
        "", "const int g = threadIdx.x + blockDim.x * blockIdx.x;\nif (g >= n) return;\nfloat s = 0;\n"
        "for (int j = -1; j <= 1; ++j) { int q = g + j; if (q < 0) continue; s += (q < n) ? in[q] : 0.f; }\n"
        "out[g] = s;", (-1, 1, "j", 1, 2)),
    "unrolled": (
        "", GID + "if (i > 0 && i < n - 1) out[i] = in[i - 1] + 2 * in[i] + in[i + 1];", (-1, 1, None, 2, 0)),
    "64-bit index, right-sided window": (
        "", "long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
        "if (i + 2 < n) out[i] = in[i + 2] - in[i];", (0, 2, None, 1, 0)),
}


def _stencil(prefix: str, body: str):
    f = facts_of_text(prefix + HEAD + body + TAIL, "k")
    assert f.stencils, f.stencil_refusal
    return f.stencils[0]


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_every_spelling_gives_the_window_and_its_checks(name):
    prefix, body, (lo, hi, var, n_thread, n_element) = SPELLINGS[name]
    st = _stencil(prefix, body)
    assert st.pointer == "in" and st.extent == sym("blockDim.x")
    assert (st.lo, st.hi) == (lo, hi)
    assert {r.var for r in st.reads} == {var}
    assert sum(len(r.thread_terms) for r in st.reads) == n_thread * len(st.reads)
    assert all(len(r.element_terms) == n_element for r in st.reads)


def _holds(terms, subs) -> bool:
    return all(sympy.expand(t).subs(subs) > 0 for t in terms)


@pytest.mark.parametrize("name", sorted(SPELLINGS))
@pytest.mark.parametrize("n, block, bx", [(20, 8, 0), (20, 8, 2), (5, 8, 0), (3, 4, 0), (40, 16, 2)])
def test_the_tile_conditions_are_exactly_the_elements_the_block_reads(name, n, block, bx):
    prefix, body, _ = SPELLINGS[name]
    st = _stencil(prefix, body)
    env = {sym("n"): n, sym("blockDim.x"): block, sym("blockIdx.x"): bx}
    read = set()
    for r in st.reads:
        for i in range(bx * block, (bx + 1) * block):
            if not _holds(r.thread_terms, {**env, THREAD: i}):
                continue
            for j in range(r.first, r.last + 1):
                e = i + r.offset + j
                if _holds(r.element_terms, {**env, ELEMENT: e}):
                    read.add(e)
    groups = tile_conditions(st)
    window = range(bx * block + st.lo, (bx + 1) * block + st.hi)
    loaded = {e for e in window if any(_holds(g, {**env, ELEMENT: e}) for g in groups)}
    assert loaded == read


def test_a_template_radius_is_read_at_its_launch():
    text = ("template <int R> __global__ void k(const float *in, float *out, int n) {\n" + GID +
            "if (i >= n) return; float s = 0;\nfor (int j = -R; j <= R; ++j) s += (i + j >= 0 && i + j < n) ? "
            "in[i + j] : 0.f;\nout[i] = s;\n}\n"
            "void launch(const float *in, float *out, int n) { k<4><<<(n + 127) / 128, 128>>>(in, out, n); }\n")
    (st,) = facts_of_text(text, "k").stencils
    assert (st.lo, st.hi) == (-4, 4)


@pytest.mark.parametrize("body, why", [
    (GID + "if (i < n) { float s = 0; for (int j = -2; j <= 2; ++j) s += in[(i + j + n) % n]; out[i] = s; }",
     "not affine"),
    (GID + "if (i > 0 && i < n - 1) out[i] = in[2 * i - 1] + in[2 * i + 1];", "does not move by one"),
    (GID + "float s = 0; for (int j = -2; j <= 2; ++j) if (i + j < n || j == 0) s += in[i + j]; out[i] = s;",
     "not conjunctions of bounds"),
])
def test_what_is_not_read_is_said_in_one_line(body, why):
    f = facts_of_text(HEAD + body + TAIL, "k")
    assert not f.stencils
    assert why in f.stencil_refusal and "\n" not in f.stencil_refusal


def test_a_kernel_without_neighbouring_reads_has_no_stencil_and_no_refusal():
    f = facts_of_text(HEAD + GID + "if (i < n) out[i] = 2 * in[i];" + TAIL, "k")
    assert f.stencils == () and f.stencil_refusal == ""


def test_conditions_are_spelled_with_the_unknowns_on_their_side():
    e, n = ELEMENT, sym("n")
    assert c_condition(e + 1, {ELEMENT: "e"}, "int") == "e >= 0"
    assert c_condition(n - e, {ELEMENT: "e"}, "int") == "e < ((int)n)"


def test_a_pointer_offset_local_is_read_as_the_pointer():
    body = ("int i = blockIdx.x * blockDim.x + threadIdx.x;\nconst float *centre = in + 1;\n"
            "if (i > 0 && i < n - 1) out[i] = centre[i - 2] + centre[i];")
    f = facts_of_text(HEAD + body + TAIL, "k")
    (st,) = f.stencils
    assert st.pointer == "in" and (st.lo, st.hi) == (-1, 1)


@pytest.mark.parametrize("body, why", [
    ("if (i >= 1 && i < n - 1) out[i] = __ldg(&in[i - 1]) + __ldg(&in[i + 1]);", "takes the element's address"),
    ("if (i >= 1 && i < n - 1) out[i] = in[i - 1] + __ldg(in + i) + in[i + 1];", "other than by a plain read"),
])
def test_reads_that_are_not_plain_loads_are_refused(body, why):
    f = facts_of_text(HEAD + GID + body + TAIL, "k")
    assert not f.stencils and why in f.stencil_refusal


def test_c_text_spells_a_power_as_a_product_and_refuses_what_it_cannot_spell():
    from htam_core.source.analysis.stencil import c_text

    n, z = sym("n"), sym("blockIdx.z")
    assert c_text(z * n ** 2 - 3, {}, "long long") == \
        "-3 + ((long long)blockIdx.z) * ((long long)n) * ((long long)n)"
    assert c_text(n ** 9, {}, "int") is None and c_text(sympy.floor(n / 2), {}, "int") is None
