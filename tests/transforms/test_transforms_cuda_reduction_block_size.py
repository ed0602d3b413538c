"""The extent of a shared-memory tree is one normal form too (the analysis layer's ``is_block_dim_x``): a tree that
runs over ``blockDim.x``, a local copy of it, a thread block's ``size()`` or ``num_threads()`` gets sequential
addressing, the warp finish and the add during the load like the textbook ``blockDim.x``; a 2-D launch keeps
``size()`` (all the block's threads) apart from ``blockDim.x``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from transform_helpers import assert_nvcc_compiles, facts_of_text

from htam_core.source import parse_text
from htam_core.transforms import registry

SEQ = "cuda.sequential_addressing"
FINISH = "cuda.warp_shuffle_finish"
COARSEN = "cuda.coarsen_reduction"

# B is how the kernel spells the block's thread count along x, in the tree and in the global index.
KERNEL = """#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void bsum(const float* x, float* out, unsigned int n) {
    extern __shared__ float buf[];
    cg::thread_block cta = cg::this_thread_block();
    DECL
    unsigned int tid = cta.thread_rank();
    unsigned int i = blockIdx.x * B + tid;
    buf[tid] = i < n ? x[i] : 0.0f;
    cg::sync(cta);
    for (unsigned int s = 1; s < B; s *= 2) {
        if (tid % (2 * s) == 0) buf[tid] += buf[tid + s];
        cg::sync(cta);
    }
    if (tid == 0) atomicAdd(out, buf[0]);
}
void go(const float* x, float* out, unsigned int n) { bsum<<<(n + 255) / 256, LAUNCH, 256 * sizeof(float)>>>(x, out, n); }
"""

SPELLINGS = [
    ("", "blockDim.x"),
    ("", "cta.size()"),
    ("", "cta.num_threads()"),
    ("const unsigned int bs = cta.size();", "bs"),
    ("unsigned int bs = blockDim.x;", "bs"),
]


def _text(decl: str, b: str, launch: str = "256") -> str:
    return KERNEL.replace("DECL", decl).replace("B", b).replace("LAUNCH", launch)


def _propose(tid: str, text: str):
    model = parse_text(text, "cuda")
    return registry.propose(tid, model, model.kernel("bsum"))


@pytest.mark.parametrize("decl,b", SPELLINGS)
def test_every_spelling_of_the_extent_gets_the_tree_steps(decl, b):
    text = _text(decl, b)
    for tid in (SEQ, FINISH, COARSEN):
        res = _propose(tid, text)
        assert isinstance(res, list), (tid, getattr(res, "reason", ""))
    assert _propose(COARSEN, text)[0].params["form"] == "block_combine"


def test_the_fact_marks_each_spelling_and_nothing_else():
    text = _text("const unsigned int bs = cta.size(); unsigned int h = bs / 2;", "bs")
    f = facts_of_text(text, "bsum")
    marked = {text.encode()[a:b].decode() for a, b in f.block_dim_x_spans}
    assert marked == {"bs", "cta.size()"}


def test_a_two_dimensional_launch_keeps_size_apart_from_blockdim_x():
    text = _text("", "cta.size()", "dim3(16, 16)")
    f = facts_of_text(text, "bsum")
    marked = {text.encode()[a:b].decode() for a, b in f.block_dim_x_spans}
    assert "cta.size()" not in marked


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("decl,b", [SPELLINGS[1], SPELLINGS[3]])
def test_the_results_compile(decl, b, tmp_path: Path):
    for k, tid in enumerate((SEQ, FINISH, COARSEN)):
        assert_nvcc_compiles(_propose(tid, _text(decl, b))[0].new_text, tmp_path, f"{k}.cu")
