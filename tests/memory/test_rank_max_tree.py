"""A max-abs tree reduction (``fmaxf`` of ``fabsf`` loads) ranks like a sum tree: the warp-shuffle finish comes
first on a sequential-addressing tree, and after sequential addressing on an interleaved one (the textbook
reduction ladder), whatever the combining operator. The kernels are written here for these tests."""

from __future__ import annotations

import pytest

from htam_core.memory import Ranker, load_knowledge
from htam_core.source.api import parse_text

TREE = """
#define THREADS 256
__global__ void k(const float* x, float* partial, int n) {
    __shared__ float s[THREADS];
    unsigned tid = threadIdx.x, i = blockIdx.x * blockDim.x + tid;
    s[tid] = (i < n) ? LOAD : 0.0f;
    __syncthreads();
    for (LOOP) {
        if (COND) s[tid] = COMBINE;
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = s[0];
}
"""
SEQUENTIAL = ("unsigned st = blockDim.x / 2; st > 0; st >>= 1", "tid < st")
INTERLEAVED = ("unsigned st = 1; st < blockDim.x; st *= 2", "tid % (2 * st) == 0")
MAX_ABS = ("fabsf(x[i])", "fmaxf(s[tid], s[tid + st])")
SUM = ("x[i]", "s[tid] + s[tid + st]")


def _ranked(loop: tuple[str, str], op: tuple[str, str]) -> list[str]:
    src = (TREE.replace("LOOP", loop[0]).replace("COND", loop[1]).replace("LOAD", op[0])
           .replace("COMBINE", op[1]))
    model = parse_text(src, "cuda", "k.cu")
    k = model.kernels[0]
    return [r.strategy for r in Ranker(load_knowledge()).rank({}, [], k.features, k.language, None, top=64,
                                                               kernel=k, model=model)]


@pytest.mark.parametrize("op", [MAX_ABS, SUM], ids=["max_abs", "sum"])
def test_the_shuffle_finish_ranks_first_on_a_sequential_tree(op: tuple[str, str]) -> None:
    assert _ranked(SEQUENTIAL, op)[0] == "warp_shuffle_reduction"


def test_a_max_abs_interleaved_tree_ranks_as_a_sum_tree() -> None:
    ranked = _ranked(INTERLEAVED, MAX_ABS)
    assert ranked[0] == "sequential_addressing"
    assert ranked.index("warp_shuffle_reduction") == _ranked(INTERLEAVED, SUM).index("warp_shuffle_reduction")
