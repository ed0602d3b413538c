"""The one reader of a ``for`` header (:func:`~htam_core.source.analysis.loops.for_parts`) and its views: the loop
fact's values (:func:`~htam_core.source.analysis.loops.c_for_header`, ``LoopFact.var/start/cmp/bound``), its
spans with the exclusive bound (``LoopFact.header``) and its nodes for a rewrite
(:func:`~htam_core.source.analysis.counted.counted_loop`) read the same variable, type, start and bound in every
spelling; and the unit's type names (:class:`~htam_core.source.analysis.types.TypeEnv`, ``KernelView.types``):
``typedef``/``using`` aliases, chains, ``std::`` integers, template parameters and aliases of them. Kernels written
here."""

from __future__ import annotations

import pytest

from htam_core.source import parse_text
from htam_core.source.analysis import analyze
from htam_core.source.analysis.counted import CountedLoop, counted_loop
from htam_core.source.analysis.forms import KernelText
from htam_core.source.analysis.nodes import for_loops
from htam_core.source.analysis.unit import cuda_source


def _view(text: str, kernel: str = "k") -> KernelText:
    model = parse_text(text, "cuda")
    k = model.kernel(kernel)
    return KernelText(cuda_source(model, k), analyze(model, k))  # type: ignore[arg-type]


def _kernel(loop: str) -> str:
    return f"__global__ void k(float *y, int n, long q) {{\n    {loop}\n}}\n"


#: loop -> (var, type, start, cmp, bound as written)
LOOPS = {
    "for (int k = 0; k < n; ++k) y[k] = 0;": ("k", "int", "0", "<", "n"),
    "for (unsigned int s = 1; s < n; s <<= 1) y[s] = 0;": ("s", "unsigned int", "1", "<", "n"),
    "for (long k = 2; (k <= q); k += 1) y[k] = 0;": ("k", "long", "2", "<=", "q"),
    "for (int k = 1; n > k; k++) y[k] = 0;": ("k", "int", "1", "<", "n"),
    "for (size_t k = 0; k < (size_t)n; k = k + 1) y[k] = 0;": ("k", "size_t", "0", "<", "(size_t)n"),
    "for (int j, k = 3; (long)k != q; ++k) y[k] = 0;": ("k", "int", "3", "!=", "q"),
}


@pytest.mark.parametrize("loop", list(LOOPS))
def test_every_view_of_a_for_header_reads_the_same_parts(loop):
    var, typ, start, cmp, bound = LOOPS[loop]
    view = _view(_kernel(loop))
    (lp,) = view.facts.loops
    assert (lp.var, lp.cmp) == (var, cmp)
    h = lp.header
    assert h is not None, lp.header_problem
    text = view.src.decode()
    assert (h.var, h.type, h.cmp, text[h.start[0]:h.start[1]], text[h.bound[0]:h.bound[1]]) == (
        var, typ, cmp, start, bound)
    cl = counted_loop(view, for_loops(view.body)[0])
    assert isinstance(cl, CountedLoop), cl
    assert (cl.var, cl.type, view.t(cl.init)) == (var, typ, start)


def test_a_header_that_assigns_its_variable_has_values_but_no_counted_header():
    view = _view(_kernel("int k; for (k = 4; k < n; ++k) y[k] = 0;"))
    (lp,) = view.facts.loops
    assert (lp.var, lp.start, lp.cmp) == ("k", 4, "<")
    assert lp.header is None and "does not declare its variable" in lp.header_problem
    assert counted_loop(view, for_loops(view.body)[0]) == "the loop variable is not declared in the loop header"


TYPES = """#include <cstdint>
typedef int64_t I;
using L = long long;
typedef L Chain;
typedef std::uint32_t U;
template <typename T, int B>
__global__ void k(T *y, int n) {
    using Local = T;
    y[0] = 0;
}
"""


@pytest.mark.parametrize(("written", "resolved"), [
    ("I", "int64_t"), ("const I", "int64_t"), ("L", "long long"), ("Chain", "long long"), ("U", "uint32_t"),
    ("std::int64_t", "int64_t"), ("unsigned   int", "unsigned int"), ("T", "T"), ("Local", "T"), ("float", "float"),
])
def test_the_view_resolves_the_units_type_names(written, resolved):
    types = _view(TYPES).types
    assert types.resolve(written) == resolved


def test_the_view_knows_the_kernels_template_parameters():
    types = _view(TYPES).types
    assert types.is_template("T") and types.is_template("const Local") and not types.is_template("I")
