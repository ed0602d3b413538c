"""``cuda.block_size`` on a launch whose grid rounds the work down (``n / 256``, ``h / nthreads``, ``n >> 8``, through
a local, a ``#define`` or a ``dim3``'s member): with a bounds check against the same work the grid becomes a
ceil-division of the work by the new block (every element the check lets through gets a thread, whatever the block),
and the candidate compiles; without one the step is not offered and says why in one line. A ceil-division grid keeps
today's edit, also in its other spellings (by its literals, read on the grid's form); a literal of the block's value
outside the ceil-division keeps the block. The grids of the candidates are read back by the analysis layer and
evaluated for sizes that the old or the new block does not divide."""

from __future__ import annotations

import shutil

import pytest
import sympy
from transform_helpers import assert_nvcc_compiles

from htam_core.source.analysis import analyze
from htam_core.source.analysis.grid_cover import launch_cover
from htam_core.source.analysis.unit import cuda_source
from htam_core.source.api import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

KERNEL = """#define TPB 256
__global__ void scale(float *y, const float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  GUARD
}
"""
GUARDED = {"if": "if (i < n) y[i] = 2.0f * x[i];", "return": "if (i >= n) return;\n  y[i] = 2.0f * x[i];"}
UNGUARDED = "y[i] = 2.0f * x[i];"

FLOOR_HOSTS = {
    "literal": "scale<<<n / 256, 256>>>(y, x, n);",
    "named": "const int nthreads = 256;\n  scale<<<h / nthreads, nthreads>>>(y, x, h);",
    "define": "scale<<<n / TPB, TPB>>>(y, x, n);",
    "local": "int blocks = n / 256;\n  scale<<<blocks, 256>>>(y, x, n);",
    "dim3": "dim3 block(256);\n  dim3 grid(n / block.x);\n  scale<<<grid, block>>>(y, x, n);",
    "shift": "scale<<<n >> 8, 256>>>(y, x, n);",
}


def _text(guard: str, host: str) -> str:
    size = "h" if "h /" in host else "n"
    return KERNEL.replace("GUARD", guard) + \
        f"void run(float *y, const float *x, int {size}) {{\n  {host}\n}}\n"


def _propose(text: str):
    model = parse_text(text, "cuda")
    return registry.propose("cuda.block_size", model, model.kernel("scale"))


def _blocks(expr: sympy.Expr, n: int, threads: int) -> int:
    """The grid ``expr`` (the analysis layer's sympy form, ``div`` for C's integer division, ``expr(block.x)`` for
    a ``dim3``'s member) at size ``n`` and block ``threads``."""
    values = {s: threads if s.name.startswith("expr(") else n for s in expr.free_symbols}
    return int(expr.replace(lambda e: getattr(e.func, "__name__", "") == "div",
                            lambda e: sympy.floor(e.args[0] / e.args[1])).subs(values))


@pytest.mark.parametrize("spelling", sorted(FLOOR_HOSTS))
@pytest.mark.parametrize("guard", sorted(GUARDED))
def test_a_floor_grid_with_a_bounds_check_becomes_a_ceil_division(spelling, guard):
    res = _propose(_text(GUARDED[guard], FLOOR_HOSTS[spelling]))
    assert not isinstance(res, NotApplicable), res.reason
    assert len(res) >= 2
    for cand in res:
        assert "rounded down: it becomes a ceil-division" in cand.description
        model = parse_text(cand.new_text, "cuda")
        kernel = model.kernel("scale")
        facts = analyze(model, kernel)
        (launch,) = facts.launches
        cover = launch_cover(cuda_source(model, kernel), facts, launch, 0)
        assert (cover.kind, cover.bound_is_work) == ("ceil", True), cand.new_text
        threads = launch.block[0].value
        assert threads == cand.params["block"][0]
        for n in (1, 255, 257, 1000, 4096 + 3):  # sizes neither block divides
            blocks = _blocks(launch.grid[0].expr, n, threads)
            assert (blocks - 1) * threads < n <= blocks * threads, (cand.description, n)


@pytest.mark.parametrize("spelling", sorted(FLOOR_HOSTS))
def test_a_floor_grid_without_a_bounds_check_keeps_its_block(spelling):
    res = _propose(_text(UNGUARDED, FLOOR_HOSTS[spelling]))
    assert isinstance(res, NotApplicable)
    assert "rounds down" in res.reason and "no bounds check" in res.reason and "\n" not in res.reason


def test_a_bounds_check_against_other_work_keeps_the_block():
    res = _propose(_text(GUARDED["if"], "int m = 2 * n;\n  scale<<<m / 256, 256>>>(y, x, n);"))
    assert isinstance(res, NotApplicable) and "rounds down" in res.reason


@pytest.mark.parametrize("grid", ["(n + 255) / 256", "(n - 1) / 256 + 1"])
def test_a_ceil_grid_keeps_its_edit(grid):
    res = _propose(_text(UNGUARDED, f"scale<<<{grid}, 256>>>(y, x, n);"))
    assert not isinstance(res, NotApplicable)
    assert all("rounded down" not in c.description for c in res)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("spelling", ["named", "dim3"])
def test_the_rewritten_grid_compiles(spelling, tmp_path):
    res = _propose(_text(GUARDED["if"], FLOOR_HOSTS[spelling]))
    assert not isinstance(res, NotApplicable)
    assert_nvcc_compiles(res[-1].new_text, tmp_path)


@pytest.mark.parametrize("step", ["cuda.grid_stride", "cuda.vectorize_float4"])
@pytest.mark.parametrize("spelling", ["literal", "named", "dim3"])
def test_other_launch_steps_need_the_bounds_check_on_a_floor_grid(step, spelling):
    """The grid-stride and float4 steps cover every element the bounds check lets through, whatever the grid: on a
    floor grid without that check they are not offered (the same rule as the block size)."""
    model = parse_text(_text(UNGUARDED, FLOOR_HOSTS[spelling]), "cuda")
    assert isinstance(registry.propose(step, model, model.kernel("scale")), NotApplicable)
    model = parse_text(_text(GUARDED["if"], FLOOR_HOSTS[spelling]), "cuda")
    assert not isinstance(registry.propose(step, model, model.kernel("scale")), NotApplicable)


#: Ceil-division grids that the block-size step follows by their literals, read on the grid's form: each candidate
#: is a ceil-division again (checked by the analysis layer at sizes no block divides).
CEIL_SPELLINGS = ["(n + 255) / 256", "(n + 255u) / 256u", "(n - 1) / 256 + 1", "n / 256 + (n % 256 != 0)",
                  "ceil(n / 256.0)"]


@pytest.mark.parametrize("grid", CEIL_SPELLINGS)
def test_a_ceil_grid_follows_the_block_by_its_literals(grid):
    res = _propose(_text(GUARDED["if"], f"scale<<<{grid}, 256>>>(y, x, n);"))
    assert not isinstance(res, NotApplicable), res.reason
    for cand in res:
        assert "rounded down" not in cand.description
        model = parse_text(cand.new_text, "cuda")
        facts = analyze(model, model.kernel("scale"))
        (launch,) = facts.launches
        cover = launch_cover(cuda_source(model, model.kernel("scale")), facts, launch, 0)
        assert cover.kind == "ceil", cand.new_text
        if cover.work is not None and "%" not in grid:  # evaluated where _blocks reads every operator
            threads = launch.block[0].value
            for n in (1, 255, 257, 4096 + 3):
                blocks = _blocks(launch.grid[0].expr, n, threads)
                assert (blocks - 1) * threads < n <= blocks * threads, (cand.description, n)


@pytest.mark.parametrize("grid", ["(256 * m + 255) / 256", "(n + 255) / 256 + 256"])
def test_a_block_literal_outside_the_ceil_division_keeps_the_block(grid):
    text = _text(GUARDED["if"], f"scale<<<{grid}, 256>>>(y, x, n);").replace("int n)", "int n, int m)")
    res = _propose(text)
    assert isinstance(res, NotApplicable) and grid in res.reason and "\n" not in res.reason
