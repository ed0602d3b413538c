"""Block- and grid-uniform values (``htam_core.source.analysis.uniformity``): a name derived from parameters,
constants, template parameters or constant macros is the same in every thread; one that reads ``threadIdx``, a
varying call, or that is written under a thread-dependent condition or loop is not; ``blockIdx`` is uniform over a
block and not over the grid; ``gridDim`` is not when the value must hold whatever the grid."""

from __future__ import annotations

import pytest

from htam_core.source.analysis import analyze
from htam_core.source.analysis.forms import KernelText
from htam_core.source.analysis.nodes import identifiers
from htam_core.source.analysis.uniformity import kernel_uniformity, thread_uniform, uniform_name
from htam_core.source.analysis.unit import CudaSource, cuda_source
from htam_core.source.api import parse_text

HEAD = """#include <cooperative_groups.h>
namespace cg = cooperative_groups;
#define TILE 32
#define TID (threadIdx.x)
#define BID blockIdx.x
__device__ int lane_of() { return threadIdx.x & 31; }
__device__ int twice(int v) { return 2 * v; }
"""


def _view(body: str, params: str = "float *out, const int *lens, int n", template: str = "") -> KernelText:
    text = f"{HEAD}{template}\n__global__ void k({params}) {{\n{body}\n    out[0] = 0.0f;\n}}\n"
    model = parse_text(text, "cuda")
    kernel = model.kernel("k")
    source = cuda_source(model, kernel)
    assert isinstance(source, CudaSource)
    return KernelText(source, analyze(model, kernel))


def _uniform(body: str, name: str = "m", **kw: object) -> tuple[bool, bool]:
    """``(uniform over a block, uniform over the grid)`` of ``name`` in a kernel with ``body``."""
    u = kernel_uniformity(_view(body, **kw))  # type: ignore[arg-type]
    return uniform_name(u, name, scope="block"), uniform_name(u, name, scope="grid")


#: kernel body -> (uniform over a block, uniform over the grid) of `m`
CASES = {
    # derived from parameters, constants, a constant macro, the block size
    "param-derived": ("    int a = n * 2 + blockDim.x;\n    int m = a / 4;", (True, True)),
    "const local": ("    const int K = 16;\n    int m = K * n;", (True, True)),
    "macro constant": ("    int m = TILE * n + sizeof(float);", (True, True)),
    "global read": ("    int m = lens[0] + *lens;", (True, True)),
    "pure device function": ("    int m = twice(n);", (True, True)),
    "assigned in both branches of a uniform if": ("    int m;\n    if (n > 4) m = n; else m = 4;", (True, True)),
    "written in a loop with a uniform trip count": (
        "    int m = 0;\n    for (int j = 0; j < n; ++j) { m += j; }", (True, True)),
    # the thread or block index, directly or out of sight
    "thread index": ("    int t = threadIdx.x;\n    int m = t + n;", (False, False)),
    "block index": ("    int m = blockIdx.x * n;", (True, False)),
    "block index through a macro": ("    int m = BID + n;", (True, False)),
    "thread index through a macro": ("    int m = TID + 1;", (False, False)),
    "a function reading the thread index": ("    int m = lane_of();", (False, False)),
    "an atomic's old value": ("    int m = atomicAdd((int *)lens, 1);", (False, False)),
    "a shuffle": ("    int m = __shfl_down_sync(0xffffffff, n, 1);", (False, False)),
    "a thread's rank": ("    cg::thread_block b = cg::this_thread_block();\n    int m = b.thread_rank();",
                        (False, False)),
    "a block's rank": ("    int m = cg::this_thread_block().group_index().x;", (True, False)),
    # shadowing: one name for every declaration
    "shadowed by a thread-dependent local": (
        "    int m = n;\n    { int m = threadIdx.x; out[m] = 1.0f; }", (False, False)),
    # writes under thread-dependent control
    "assigned under if (threadIdx.x ...)": ("    int m = n;\n    if (threadIdx.x == 0) m = 0;", (False, False)),
    "assigned in the else of if (threadIdx.x ...)": (
        "    int m = n;\n    if (threadIdx.x < 16) { out[1] = 2.0f; } else { m = 1; }", (False, False)),
    "assigned in a switch on the thread": ("    int m = 0;\n    switch (threadIdx.x) { case 0: m = n; break; }",
                                          (False, False)),
    "assigned behind a thread-dependent &&": ("    int m = 0;\n    (threadIdx.x == 0) && (m = n);", (False, False)),
    "a thread-dependent conditional": ("    int m = threadIdx.x > 3 ? n : 0;", (False, False)),
    "assigned under if (blockIdx.x ...)": ("    int m = n;\n    if (blockIdx.x == 0) m = 0;", (True, False)),
    # loops whose passes depend on the thread
    "reassigned in a loop from the thread index": (
        "    int m = 0;\n    for (int j = threadIdx.x; j < n; j += blockDim.x) m += 1;", (False, False)),
    "reassigned in a loop a thread leaves early": (
        "    int m = 0;\n    for (int j = 0; j < n; ++j) { if (j == threadIdx.x) break; m += 1; }", (False, False)),
    "reassigned in a while loop on the thread": ("    int m = 0;\n    while (m < threadIdx.x) m++;", (False, False)),
    # values not followed
    "address taken": ("    int m = n;\n    int *p = &m;\n    *p += threadIdx.x;", (False, False)),
    "written by inline asm": ('    int m = n;\n    asm volatile("mov.u32 %0, %%laneid;" : "=r"(m));', (False, False)),
    "a local array": ("    int m[2] = {n, n};\n    m[threadIdx.x & 1] = 0;", (False, False)),
    "a reference": ("    int a = n;\n    int &m = a;", (False, False)),
    "a structured binding": ("    auto [m, w] = make_int2(threadIdx.x, n);", (False, False)),
    # a range-based for variable takes each element of its range
    "a range-for over a uniform range": ("    int vals[2] = {1, 2};\n    int m = 0;\n    for (int v : {n, 2 * n}) m += v;",
                                         (True, True)),
    "a range-for over a thread-written array": (
        "    int vals[2] = {1, 2};\n    vals[threadIdx.x & 1] = 0;\n    for (int m : vals) out[1] = m;", (False, False)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_uniform_names(case: str) -> None:
    body, expected = CASES[case]
    assert _uniform(body) == expected


def test_a_template_parameter_is_uniform() -> None:
    got = _uniform("    int m = BS * n + (int)sizeof(T);", template="template <typename T, int BS>")
    assert got == (True, True)


def test_a_parameter_written_under_a_thread_condition_is_not_uniform() -> None:
    assert _uniform("    if (threadIdx.x > 7) n = 0;", name="n") == (False, False)
    assert _uniform("    n = n / 2;", name="n") == (True, True)


def test_grid_dim_is_uniform_for_this_grid_only() -> None:
    u = kernel_uniformity(_view("    int m = gridDim.x * n;\n    int g = cg::this_grid().size();"))
    assert uniform_name(u, "m", scope="grid") and not uniform_name(u, "m", scope="grid", any_grid=True)
    assert uniform_name(u, "g", scope="grid") and not uniform_name(u, "g", scope="grid", any_grid=True)


def test_an_expression_is_uniform_when_its_names_are() -> None:
    view = _view("    int t = threadIdx.x;\n    int a = n / 2;\n    if (a + TILE < n) out[t] = 1.0f;")
    u = kernel_uniformity(view)
    cond = next(i.parent for i in identifiers(view.body) if view.t(i) == "a" and view.t(i.parent) == "a + TILE")
    assert thread_uniform(u, cond) and thread_uniform(u, cond, scope="block", any_grid=True)
    store = next(i.parent for i in identifiers(view.body) if view.t(i) == "t" and view.t(i.parent) == "[t]")
    assert not thread_uniform(u, store, scope="block")


def test_an_unknown_scope_is_refused() -> None:
    u = kernel_uniformity(_view("    int m = n;"))
    with pytest.raises(ValueError, match="scope"):
        uniform_name(u, "m", scope="warp")  # type: ignore[arg-type]


#: a grid-stride loop over `tail .. n - 1`, with `tail` declared by DECL
GRID_STRIDE = """    DECL
    for (int i = tail + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) out[i] = 1.0f;"""


@pytest.mark.parametrize(("decl", "loops"), [
    ("int tail = (n / 4) * 4;", 1),
    ("int tail = 0;\n    for (int j = 0; j < n / 4; ++j) tail += 4;", 1),
    ("int tail = atomicAdd((int *)lens, 0);", 0),
    ("int tail = lane_of();", 0),
    ("int tail = 0;\n    if (threadIdx.x == 0) tail = 4;", 0),
])
def test_a_grid_stride_start_offset_must_be_uniform(decl: str, loops: int) -> None:
    view = _view(GRID_STRIDE.replace("DECL", decl))
    assert len(view.facts.grid_stride_loops) == loops


def _position(body: str) -> bool:
    """:func:`thread_position` of the initializer of ``m`` in a kernel with ``body``."""
    from htam_core.source.analysis.nodes import declarations
    from htam_core.source.analysis.uniformity import thread_position

    view = _view(body)
    (decl,) = [d for d in declarations(view.body) if "m =" in view.t(d)]
    value = decl.children_by_field_name("declarator")[0].child_by_field_name("value")
    return thread_position(kernel_uniformity(view), value)  # type: ignore[arg-type]


@pytest.mark.parametrize(("body", "position"), [
    ("    int m = threadIdx.x;", True),
    ("    int m = threadIdx.x % 32;", True),
    ("    int t = threadIdx.y * blockDim.x + threadIdx.x;\n    int m = t & 31;", True),
    ("    auto block = cg::this_thread_block();\n    int m = block.thread_rank();", True),
    ("    int m = (int)cg::this_thread_block().thread_index().x;", True),
    ("    int m = n - 1;", False),                                          # uniform: no thread picked
    ("    int m = blockIdx.x * blockDim.x + threadIdx.x;", False),           # the global index, not a position
    ("    int m = lens[threadIdx.x];", False),                               # a load: data, not a position
    ("    int m = threadIdx.x < n;", False),                                 # a comparison
    ("    int m = lane_of();", False),                                       # a call whose code is not read
    ("    int t = threadIdx.x;\n    if (lens[t] > 0) t = 0;\n    int m = t;", False),  # written under a data test
    ("    int t = threadIdx.x;\n    t = t + lens[t];\n    int m = t;", False),  # data folded into it
    ("    int t = threadIdx.x;\n    if (n > 4) t = t * 2;\n    int m = t;", True),   # under a uniform test
])
def test_a_thread_position_is_computed_from_the_thread_index_alone(body, position):
    assert _position(body) is position
