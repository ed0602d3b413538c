"""How a launch's grid covers the work (:mod:`htam_core.source.analysis.grid_cover`): a ceil-division of the work by
the block in its spellings (``(n + B - 1) / B``, ``(n - 1) / B + 1``, a ``cdiv`` helper, ``DIV_UP``/``CEIL_DIV``
macros, ``ceil(n / 256.0)``, ``n / B + (n % B != 0)``, a shift), a floor division (``n / B``, ``n >> 8``, through a
local, a ``#define`` or a ``dim3``'s member), or neither; and the parameter the kernel's bounds check compares its
index with (``if``, early return, ``?:``, a check after other statements, none) and whether it is the grid's
work at the launch; the block's literals of a ceil-division and their new values, read on the grid's form (a
literal of the block's value outside the ceil-division, a floor division or a constant grid refuses)."""

from __future__ import annotations

import pytest
import sympy

from htam_core.source.analysis import analyze
from htam_core.source.analysis.grid_cover import block_literals, launch_cover
from htam_core.source.analysis.syntax import of_type
from htam_core.source.analysis.unit import cuda_source
from htam_core.source.api import parse_text

HELPERS = """#define DIV_UP(a, b) (((a) + (b) - 1) / (b))
#define CEIL_DIV(a, b) ((a + b - 1) / b)
#define TPB 256
static inline int cdiv(int a, int b) { return (a + b - 1) / b; }
"""

KERNEL = """__global__ void scale(float *y, const float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  GUARD
}
"""

GUARDS = {
    "if": "if (i < n) y[i] = 2.0f * x[i];",
    "return": "if (i >= n) return;\n  y[i] = 2.0f * x[i];",
    "ternary": "float v = (i < n) ? x[i] : 0.0f;\n  if (i < n) y[i] = v;",
    "later": "float two = 2.0f;\n  if (n > i) y[i] = two * x[i];",
    "none": "y[i] = 2.0f * x[i];",
}


def _cover(grid: str, guard: str = "if", block: str = "256", pre: str = ""):
    text = HELPERS + KERNEL.replace("GUARD", GUARDS[guard]) + \
        f"void run(float *y, const float *x, int n) {{ {pre} scale<<<{grid}, {block}>>>(y, x, n); }}\n"
    model = parse_text(text, "cuda")
    kernel = model.kernel("scale")
    facts = analyze(model, kernel)
    src = cuda_source(model, kernel)
    assert not isinstance(src, str)
    return launch_cover(src, facts, facts.launches[0], 0)


@pytest.mark.parametrize("grid,block,pre", [
    ("(n + 255) / 256", "256", ""), ("(n - 1) / 256 + 1", "256", ""), ("1 + (n - 1) / 256", "256", ""),
    ("DIV_UP(n, 256)", "256", ""), ("CEIL_DIV(n, TPB)", "TPB", ""), ("cdiv(n, threads)", "threads",
                                                                      "const int threads = 128;"),
    ("(n + threads - 1) / threads", "threads", "constexpr int threads = 512;"), ("(n + 255) >> 8", "256", ""),
    ("n / 256 + (n % 256 != 0)", "256", ""), ("blocks", "256", "int blocks = (n + 256 - 1) / 256;"),
    ("grid", "block", "dim3 block(256); dim3 grid((n + block.x - 1) / block.x);"),
])
def test_ceil_divisions_of_the_work(grid, block, pre):
    c = _cover(grid, block=block, pre=pre)
    assert (c.kind, c.work, c.bound, c.bound_is_work) == ("ceil", sympy.Symbol("n", integer=True), "n", True)


@pytest.mark.parametrize("grid", ["ceil(n / 256.0)", "(int)ceilf((float)n / 256.0f)"])
def test_a_floating_ceil_is_a_ceil_division(grid):
    assert _cover(grid).kind == "ceil"


@pytest.mark.parametrize("grid,block,pre", [
    ("n / 256", "256", ""), ("n >> 8", "256", ""), ("n / TPB", "TPB", ""),
    ("h / nthreads", "nthreads", "const int nthreads = 256; int h = n;"),
    ("blocks", "256", "int blocks = n / 256;"), ("grid", "block", "dim3 block(256); dim3 grid(n / block.x);"),
])
def test_floor_divisions_of_the_work(grid, block, pre):
    c = _cover(grid, block=block, pre=pre)
    assert (c.kind, c.work, c.bound, c.bound_is_work) == ("floor", sympy.Symbol("n", integer=True), "n", True)


@pytest.mark.parametrize("grid", ["1024", "n / 128", "(n + 511) / 256", "n / 256 + 1"])
def test_other_grids_are_neither(grid):
    assert _cover(grid).kind == "other"


@pytest.mark.parametrize("guard,bound", [("if", "n"), ("return", "n"), ("ternary", "n"), ("later", "n"),
                                         ("none", None)])
def test_the_bounds_check_of_the_index(guard, bound):
    c = _cover("n / 256", guard)
    assert (c.kind, c.bound, c.bound_is_work) == ("floor", bound, bound is not None)


def test_a_bound_that_is_not_the_grids_work():
    c = _cover("m / 256", pre="int m = 2 * n;")
    assert (c.kind, c.bound, c.bound_is_work) == ("floor", "n", False)


def _literals(grid: str, pre: str = "", old: int = 256, new: int = 128):
    """:func:`block_literals` of the launch's grid component ``grid`` (followed to its local's value)."""
    text = HELPERS + KERNEL.replace("GUARD", GUARDS["if"]) + \
        f"void run(float *y, const float *x, int n, int m) {{ {pre} scale<<<{grid}, {old}>>>(y, x, n); }}\n"
    model = parse_text(text, "cuda")
    src = cuda_source(model, model.kernel("scale"))
    assert not isinstance(src, str)
    node = src.sites[0].grid
    if pre:  # the value of the local the launch names
        (decl,) = [d for d in of_type(src.root, "init_declarator") if src.t(d).startswith(grid)]
        node = decl.child_by_field_name("value")
    found = block_literals(src, node, old, new)
    return found if not isinstance(found, list) else [(src.t(n), v) for n, v in found]


@pytest.mark.parametrize("grid,pre,literals", [
    ("(n + 255) / 256", "", [("255", 127), ("256", 128)]),
    ("(n + 256 - 1) / 256u", "", [("256", 128), ("256u", 128)]),
    ("(n - 1) / 256 + 1", "", [("256", 128)]),
    ("n / 256 + (n % 256 != 0)", "", [("256", 128), ("256", 128)]),
    ("DIV_UP(n, 256)", "", [("256", 128)]),
    ("cdiv(n, 256)", "", [("256", 128)]),
    ("ceil(n / 256.0)", "", [("256.0", 128)]),
    ("blocks", "int blocks = (n + 255) / 256;", [("255", 127), ("256", 128)]),
])
def test_the_block_literals_of_a_ceil_division(grid, pre, literals):
    assert _literals(grid, pre) == literals


@pytest.mark.parametrize("grid", [
    "(256 * m + 255) / 256",      # the block's value inside the work too
    "n / 256",                    # a floor division: rewritten whole by the step, not by its literals
    "(n + 255) / 256 + 256",      # more than a ceil-division
    "256",                        # a constant grid
])
def test_a_block_literal_outside_a_ceil_division_is_refused(grid):
    found = _literals(grid)
    assert isinstance(found, str) and grid in found and "\n" not in found


def test_a_grid_without_the_block_literal_does_not_follow_it():
    assert _literals("(n + 127) / 128") is None
