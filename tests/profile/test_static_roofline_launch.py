"""The static roofline reads the launch it already knows: ``blockDim``/``gridDim`` from the launch site's constants
and ``n`` from ``main()`` give a grid-stride loop's per-thread trip count (``n / (grid * block)``, thread 0) and a
tree loop's ``log2(block)``; what it cannot read (a grid that is not a constant) is named with its expression,
never guessed, and the per-element ratio of the loop still decides memory-bound."""

from __future__ import annotations

import math

import pytest

from htam_core.profile.classify import classify
from htam_core.profile.static_roofline import c_integer_ops, estimate_work
from htam_core.source import parse_text
from htam_core.source.analysis import sym
from htam_core.types.profile import Profile

_DOT = """
#define THREADS {block}
__global__ void dot_blocks(const float* a, const float* b, float* part, int n)
{{
    __shared__ float acc[THREADS];
    float t = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        t += a[i] * b[i];
    acc[threadIdx.x] = t;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {{
        if (threadIdx.x < s) acc[threadIdx.x] += acc[threadIdx.x + s];
        __syncthreads();
    }}
    if (threadIdx.x == 0) part[blockIdx.x] = acc[0];
}}

int main()
{{
    const int n = {n};
    const int blocks = {grid};
    float *a, *b, *p;
    cudaMalloc(&a, n * sizeof(float)); cudaMalloc(&b, n * sizeof(float)); cudaMalloc(&p, blocks * sizeof(float));
    {launch}
    return 0;
}}
"""


def _est(block: int, grid: int, n: str, launch: str = "dot_blocks<<<blocks, THREADS>>>(a, b, p, n);") -> dict:
    model = parse_text(_DOT.format(block=block, grid=grid, n=n, launch=launch), "cuda", path="dot_blocks.cu")
    est = estimate_work(model, model.kernel("dot_blocks"))
    assert est is not None
    return est


@pytest.mark.parametrize(("block", "grid", "n"), [(256, 128, "1 << 24"), (128, 80, "1000000"), (512, 3, "4096")])
def test_grid_stride_and_tree_loops_take_the_launch_block_grid_and_n(block: int, grid: int, n: str) -> None:
    est = _est(block, grid, n)
    assert est["unknown"] == []
    count = math.ceil(eval(n) / (grid * block))  # noqa: S307 - the test's own literal
    stride, tree = est["loops"]
    assert stride["trip_count"] == count
    assert tree["trip_count"] == int(math.log2(block))
    assert "block THREADS" in stride["source"] and "grid blocks" in stride["source"]
    assert "thread 0 of block 0" in stride["source"]
    # 2 loads of 4 bytes and 2 FLOPs per grid-stride iteration, one add per tree step, one 4-byte store
    assert est["bytes"] == count * 8 + 4
    assert est["intensity"] is not None and est["intensity"] < 1


def test_a_dim3_launch_gives_each_component_and_one_for_the_missing_ones() -> None:
    est = _est(64, 10, "1 << 20", "dim3 g(blocks); dim3 t(THREADS); dot_blocks<<<g, t>>>(a, b, p, n);")
    assert est["unknown"] == []
    assert est["loops"][0]["trip_count"] == math.ceil((1 << 20) / (64 * 10))


def test_a_grid_that_is_not_a_constant_is_named_not_guessed_and_the_ratio_still_classifies() -> None:
    launch = "int g = blocks; if (n > 4096) g = 2 * blocks; dot_blocks<<<g, THREADS>>>(a, b, p, n);"
    est = _est(256, 128, "1 << 24", launch)
    stride = est["loops"][0]
    assert stride["trip_count"] is None
    assert any("gridDim.x" in u and "`g`" in u and "not a constant" in u for u in est["unknown"])
    assert not any("runtime argument" in u for u in est["unknown"])
    assert est["loops"][1]["trip_count"] == 8  # the tree loop needs only the block
    p = Profile("dot_blocks", mode="static", device="sm_90 (static)", registers=16, theoretical_occupancy=1.0)
    p.extra["static_roofline"] = est
    assert classify(p, None, target="sm_90").cls == "memory-bound"


def test_without_a_launch_in_the_file_the_builtins_say_so() -> None:
    text = _DOT.split("int main()")[0]
    model = parse_text(text, "cuda", path="dot_only.cu")
    est = estimate_work(model, model.kernel("dot_blocks"))
    assert est is not None
    assert any("no launch of the kernel in this file" in u for u in est["unknown"])
    assert not any("a runtime argument" in u and "blockDim" in u.split("(", 1)[1].split(":")[0]
                   for u in est["unknown"])


def test_a_thread_dependent_loop_outside_a_stride_pattern_keeps_its_thread_index_unknown() -> None:
    text = """
__global__ void tri(const float* x, float* y, int n)
{
    float s = 0.0f;
    for (int j = threadIdx.x; j < 64; ++j) s += x[j];
    y[threadIdx.x] = s;
}
int main() { float *x, *y; tri<<<1, 64>>>(x, y, 64); return 0; }
"""
    model = parse_text(text, "cuda", path="tri.cu")
    est = estimate_work(model, model.kernel("tri"))
    assert est is not None and est["loops"][0]["trip_count"] is None
    assert any("threadIdx.x: the count differs from thread to thread" in u for u in est["unknown"])


def test_c_integer_division_and_modulo_fold_once_their_arguments_are_numbers() -> None:
    div, mod = (pytest.importorskip("sympy").Function(f) for f in ("div", "mod"))
    assert c_integer_ops(div(sym("b"), 2).subs(sym("b"), 256)) == 128
    assert c_integer_ops(div(-7, 2)) == -3  # C truncates toward zero
    assert c_integer_ops(mod(-7, 2)) == -1
    assert c_integer_ops(div(div(1000, 10), 3)) == 33
    assert c_integer_ops(div(sym("b"), 2)).free_symbols == {sym("b")}
