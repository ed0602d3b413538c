"""Every spelling of a block barrier is one analysis fact: a shared-memory tree reduction written in the
cooperative-groups style (``cg::sync(cta)``, ``cta.sync()``, ``cooperative_groups::this_thread_block().sync()``, a
``DynSmem<T>()`` accessor struct for the dynamic shared memory, a templated element type) gets sequential addressing
and then the warp-shuffle finish; ``__syncwarp()`` is a warp barrier, not a block barrier, and is refused."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from transform_helpers import assert_nvcc_compiles, candidates, fixture_path, refusal

from htam_core.source import load, parse_text
from htam_core.source.analysis import analyze
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

FILE = "reduction_cg_spellings.cu"
BLOCK_SPELLED = ["tree_sum_cg", "tree_sum_member_sync", "tree_sum_qualified"]
CG_SAMPLE = Path("/work/shared/corpus/public/cuda-samples/Samples/2_Concepts_and_Techniques/reductionMultiBlockCG/"
                 "reductionMultiBlockCG.cu")

BARRIERS = """
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void k(float *x) {
    cg::thread_block cta = cg::this_thread_block();
    auto blk = cg::this_thread_block();
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(cta);
    cg::grid_group grid = cg::this_grid();
    __syncthreads();
    cg::sync(cta);
    cta.sync();
    blk.sync();
    cooperative_groups::this_thread_block().sync();
    cooperative_groups::sync(cta);
    __syncwarp();
    tile.sync();
    grid.sync();
    x[0] = __syncthreads_count(x[0] > 0);
    other.sync();
}
"""


def test_barrier_spellings_normal_form():
    model = parse_text(BARRIERS, "cuda")
    facts = analyze(model, model.kernel("k"))
    got = [(b.scope, b.text) for b in facts.barriers]
    assert got == [
        ("block", "__syncthreads()"), ("block", "cg::sync(cta)"), ("block", "cta.sync()"), ("block", "blk.sync()"),
        ("block", "cooperative_groups::this_thread_block().sync()"), ("block", "cooperative_groups::sync(cta)"),
        ("warp", "__syncwarp()"), ("warp", "tile.sync()"), ("grid", "grid.sync()"),
    ]
    first = facts.barriers[1]
    assert first.statement is not None and facts.is_block_barrier(first.statement)
    assert not facts.is_block_barrier(facts.barriers[6].statement)  # __syncwarp();


def test_shared_accessor_is_shared_memory():
    model = load(str(fixture_path(FILE)))
    facts = analyze(model, model.kernel("tree_sum_cg"))
    assert {a.space for a in facts.accesses if a.pointer == "buf"} == {"shared"}
    assert facts.shared_tree_loops()
    facts = analyze(model, model.kernel("tree_sum_member_sync"))  # extern __shared__ float part[];
    assert {a.space for a in facts.accesses if a.pointer == "part"} == {"shared"}


@pytest.mark.parametrize("kernel", BLOCK_SPELLED)
def test_cg_tree_gets_sequential_addressing_then_warp_finish(kernel):
    (seq,) = candidates("cuda.sequential_addressing", FILE, kernel)
    model = parse_text(seq.new_text, "cuda", str(fixture_path(FILE)))
    res = registry.propose("cuda.warp_shuffle_finish", model, model.kernel(kernel))
    assert not isinstance(res, NotApplicable), res.reason
    body = res[0].new_text.split(f"void {kernel}", 1)[1].split("__global__", 1)[0]
    assert "__shfl_down_sync" in body and "s > 32" in body
    # and the finish directly on the interleaved tree (it adds sequential addressing itself)
    assert candidates("cuda.warp_shuffle_finish", FILE, kernel)


def test_warp_barrier_is_not_a_block_barrier():
    for tid in ("cuda.sequential_addressing", "cuda.warp_shuffle_finish"):
        assert "block barrier" in refusal(tid, FILE, "tree_sum_warp_barrier")


@pytest.mark.skipif(not CG_SAMPLE.exists(), reason="the cuda-samples corpus is not present")
def test_cuda_samples_cg_barriers_are_read():
    model = load(str(CG_SAMPLE))
    facts = analyze(model, model.kernel("reduceSinglePassMultiBlockCG"))
    assert {b.scope for b in facts.barriers} >= {"block", "grid"}
    assert any(a.space == "shared" for a in facts.accesses)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_cg_trees_compile(tmp_path: Path):
    text = fixture_path(FILE).read_text()
    for kernel in BLOCK_SPELLED:
        for tid in ("cuda.sequential_addressing", "cuda.warp_shuffle_finish"):
            model = parse_text(text, "cuda")
            res = registry.propose(tid, model, model.kernel(kernel))
            assert not isinstance(res, NotApplicable), (kernel, tid, res)
            text = res[0].new_text
    assert_nvcc_compiles(text, tmp_path)
