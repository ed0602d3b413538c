"""The tree-reduction steps need a shared-memory tree: a kernel with shared memory, barriers and a loop but no tree
(a shared-memory tiled matmul) is neither ranked for ``sequential_addressing`` (its knowledge-base precondition
requires a reduction) nor makeable (the transforms read :meth:`~htam_core.source.analysis.KernelFacts.
no_shared_tree` and say so), while the interleaved tree kernels still are both."""

from __future__ import annotations

import pytest
from transform_helpers import fixture_path

from htam_core.memory.facts import compute_facts
from htam_core.memory.knowledge import load_knowledge
from htam_core.source import load, parse_text
from htam_core.source.analysis import analyze
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

TREE_STEPS = ("cuda.sequential_addressing", "cuda.warp_shuffle_finish")


def _tiled_matmul():
    """The shared-memory tiled sgemm (the tiling step's own output): shared memory, two barriers, loops, no tree."""
    model = load(str(fixture_path("sgemm_naive.cu")))
    (c, _) = registry.propose("cuda.smem_tiling_matmul", model, model.kernel("sgemm_naive"))
    tiled = parse_text(c.new_text, "cuda", model.path)
    return tiled, tiled.kernel("sgemm_naive")


def _applies(kernel) -> bool | None:
    strat = next(s for s in load_knowledge().strategies if s.id == "sequential_addressing")
    return strat.applies.evaluate(compute_facts(kernel.features, kernel.language, kernel=kernel))


def test_a_kernel_without_a_tree_is_not_ranked_for_sequential_addressing():
    model, k = _tiled_matmul()
    f = compute_facts(k.features, k.language, kernel=k)
    assert f["uses_shared"] and f["syncthreads"] >= 1 and f["has_loop"]  # what the old precondition asked
    assert analyze(model, k).shared_tree_loops() == ()
    assert _applies(k) is False
    tree = load(str(fixture_path("reduce_sum_smem.cu"))).kernel("block_sum_interleaved")
    assert _applies(tree) is True


@pytest.mark.parametrize("tid", TREE_STEPS)
def test_the_tree_steps_refuse_a_kernel_without_a_tree_by_the_fact(tid):
    model, k = _tiled_matmul()
    res = registry.propose(tid, model, k)
    assert isinstance(res, NotApplicable) and "has no shared-memory tree reduction" in res.reason


@pytest.mark.parametrize("tid", TREE_STEPS)
def test_an_interleaved_tree_is_still_made(cand, tid):
    assert cand(tid, "reduce_sum_smem.cu", "block_sum_interleaved")


NO_TREE_REDUCTION = """
__global__ void row_sum_staged(const float *x, float *out, int n) {
    __shared__ float row[256];
    int t = threadIdx.x;
    row[t] = x[blockIdx.x * n + t];
    __syncthreads();
    if (t == 0) {
        float s = 0.0f;
        for (int i = 0; i < 256; ++i) s += row[i];
        out[blockIdx.x] = s;
    }
}
"""


def test_a_reduction_with_shared_memory_but_no_tree_is_not_ranked_for_sequential_addressing():
    """A reduction that stages in shared memory and sums serially has every old precondition (reduction_like,
    shared memory, a barrier, a loop) but no tree: the knowledge base's ``shared_tree`` fact keeps it out."""
    k = parse_text(NO_TREE_REDUCTION, "cuda").kernel("row_sum_staged")
    f = compute_facts(k.features, k.language, kernel=k)
    assert f["reduction_like"] and f["uses_shared"] and f["syncthreads"] >= 1 and f["has_loop"]
    assert f["shared_tree"] is False and _applies(k) is False


SEQUENTIAL_TREE = """
__global__ void block_sum_sequential(const float *x, float *out, int n) {
    __shared__ float s[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    s[tid] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(out, s[0]);
}
"""


def test_a_tree_that_already_halves_is_not_ranked_for_sequential_addressing():
    """A new user saw sequential addressing ranked on a tree that already uses it (its transform then refused):
    only an interleaved tree (a doubling stride) meets the precondition."""
    k = parse_text(SEQUENTIAL_TREE, "cuda").kernel("block_sum_sequential")
    f = compute_facts(k.features, k.language, kernel=k)
    assert f["shared_tree"] is True and f["interleaved_tree"] is False and _applies(k) is False
    tree = load(str(fixture_path("reduce_sum_smem.cu"))).kernel("block_sum_interleaved")
    assert compute_facts(tree.features, tree.language, kernel=tree)["interleaved_tree"] is True
