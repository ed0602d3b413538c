"""``cuda.lane_columns``: a column sum whose lanes walk the rows (one warp or one block per column) gets its lanes on
32 consecutive columns, the warps splitting the rows, with a shared-memory combine and a new launch grid and block.

Structure from the analysis facts of the result (the loop's read coalesced along x), the launch text, the
refusals by reason, and a CPU run of the rewrite: every CUDA thread of a block is a host thread, ``__syncthreads``
a barrier, ``__shared__`` one array per block (:func:`cpu_emulation.run_block_main`), so the rewritten kernel runs
as written and is compared with the column sums computed in Python. (The originals use cooperative groups, which
this emulation does not run.) The nvcc compile test (``test_transforms_cuda_compile``) builds every candidate of the fixture.
"""

from __future__ import annotations

import math

import pytest
from cpu_emulation import compiler, run_lane_columns
from transform_helpers import facts_of_text as _facts

TID = "cuda.lane_columns"
FILE = "column_sum_variants.cu"


def test_warp_per_column_becomes_lanes_on_columns(cand):
    (c,) = cand(TID, FILE, "colsum_warp")
    f = _facts(c.new_text, "colsum_warp")
    (read,) = [a for a in f.global_accesses() if a.pointer == "x"]
    assert read.pattern("x") == "contiguous"  # consecutive lanes, consecutive columns
    (loop,) = [lp for lp in f.loops if lp.var == "r"]
    assert str(loop.start) == "threadIdx.y" and str(loop.step) == "blockDim.y"
    body = c.new_text.split("void colsum_warp", 1)[1].split("void colsum_block", 1)[0]
    assert "cg::" not in body and "int c = blockIdx.x * 32 + threadIdx.x;" in body
    assert "if (c < cols) {" in body and "out[c] = out[c] + s;" in body
    assert "colsum_warp<<<dim3(((cols) + 31) / 32), dim3(32, ((block_size) + 31) / 32)>>>" in c.new_text
    assert not f.column_split_loops()
    assert c.params == {"stride_before": "cols", "width": 32, "launches": 1}


def test_block_per_column_takes_the_column_count_from_the_grid(cand):
    (c,) = cand(TID, FILE, "colsum_block")
    body = c.new_text.split("void colsum_block", 1)[1].split("void colsum_thread", 1)[0]
    assert "int n = rows;" in body  # a declaration the loop needs stays
    assert "int lane" not in body and "__shfl" not in body  # the group's combine is gone
    assert "if (c < cols) {" in body and "atomicAdd(&out[c], s);" in body
    assert "colsum_block<<<dim3(((cols) + 31) / 32), dim3(32, ((block_size) + 31) / 32)>>>" in c.new_text


def test_block_tree_total_is_the_columns_sum(cand):
    """One block per column whose partial sums meet in a shared-memory tree (llm.c's first bias-gradient kernel):
    the tree and its store go, the write takes the column's sum instead of ``part[0]``."""
    (c,) = cand(TID, FILE, "colsum_tree")
    body = c.new_text.split("void colsum_tree", 1)[1].split("void colsum_tree_scaled", 1)[0]
    assert " part[" not in body and "h >>= 1" not in body
    assert "if (c < cols) {" in body and "out[c] = s;" in body
    assert "colsum_tree<<<dim3(((cols) + 31) / 32), dim3(32, ((256) + 31) / 32)>>>" in c.new_text


@pytest.mark.parametrize("kernel,needle", [
    ("colsum_thread", "no column sum whose threads split the summed index"),
    ("colmax_warp", "something other than a sum of the group"),
    ("colsum_tree_scaled", "are not only `part[thread] = s;`, barriers and one shared-memory reduction tree"),
    ("colsum_lane_weight", "`lane` (line"),
    ("colsum_block_nogrid", "is not passed to the kernel"),
])
def test_refusals_name_the_missing_shape(refuse, kernel, needle):
    assert needle in refuse(TID, FILE, kernel)


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("kernel,scale", [("colsum_warp", 1.0), ("colsum_block", 0.5), ("colsum_tree", 1.0)])
@pytest.mark.parametrize("rows,cols,block", [(37, 45, 96), (5, 32, 256), (70, 3, 40)])
def test_rewrite_sums_every_column_once_on_the_cpu(cand, tmp_path, kernel, scale, rows, cols, block):
    """Columns not a multiple of 32, fewer rows than warps, a block size not a multiple of 32."""
    (c,) = cand(TID, FILE, kernel)
    got = run_lane_columns(c.new_text, kernel, rows, cols, block, tmp_path)
    want = [scale * sum(float((r * 7 + col * 3) % 13) - 6.0 for r in range(rows)) for col in range(cols)]
    assert len(got) == cols
    assert all(math.isclose(g, w, abs_tol=1e-4) for g, w in zip(got, want, strict=True)), (got, want)
