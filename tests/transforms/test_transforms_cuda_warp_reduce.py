"""``cuda.warp_shuffle_finish``: the last six steps of a shared-memory tree reduction run in one warp.

On a sequential-addressing tree the shuffles pair lanes exactly as the tree paired threads, so the result is the
same bit for bit (``changes_numerics`` is false); an interleaved tree also gets sequential addressing, which
reorders float sums. Every candidate is compiled with nvcc here (the reduction fixtures).
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from transform_helpers import fixture_path

from htam_core.source import load, parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

TID = "cuda.warp_shuffle_finish"
RV = "reduction_variants.cu"


def test_the_corpus_interleaved_tree(cand):
    (c,) = cand(TID, "reduce_sum_smem.cu", "block_sum_interleaved")
    assert c.params["form"] == "interleaved" and c.changes_numerics
    assert "s = blockDim.x / 2; s > 32; s >>= 1" in c.new_text
    assert "htam_v += __shfl_down_sync(0xffffffffu, htam_v, htam_o);" in c.new_text
    assert "if (tid == 0) sdata[0] = htam_v;\n    }\n    __syncthreads();" in c.new_text
    # the same kernel as sequential addressing first, then the finish
    path = fixture_path("reduce_sum_smem.cu")
    text = path.read_text()
    for tid in ("cuda.sequential_addressing", TID):
        model = parse_text(text, "cuda", str(path))
        res = registry.propose(tid, model, model.kernel("block_sum_interleaved"))
        assert not isinstance(res, NotApplicable), res.reason
        text = res[0].new_text
    assert text == c.new_text


def test_a_sequential_tree_keeps_its_sums_exactly(cand):
    (c,) = cand(TID, RV, "tree_sequential")
    assert c.params["form"] == "sequential" and not c.changes_numerics
    assert "change order" not in c.description


def test_max_and_int_trees(cand):
    (mx,) = cand(TID, RV, "tree_max")
    assert "htam_v = fmaxf(htam_v, __shfl_down_sync(0xffffffffu, htam_v, htam_o));" in mx.new_text
    (it,) = cand(TID, RV, "tree_strided")
    assert "int htam_v = sdata[tid] + sdata[tid + 32];" in it.new_text and not it.changes_numerics


@pytest.mark.parametrize(("kernel", "needle"), [
    ("tree_odd_block", "192 threads per block, not a power of two; the warp finish needs"),
    ("tree_unlaunched", "no launch in this file"),
    ("tree_minus", "uses -=, which is not associative"),
    ("tree_reads_partial", "sdata is used after the tree as `sdata[THREADS / 2]`"),
    ("serial_sum", "no shared-memory tree loop qualifies"),
])
def test_refusals(refuse, kernel, needle):
    assert needle in refuse(TID, RV, kernel)


def test_a_32_thread_block_is_refused(tmp_path):
    src = fixture_path(RV).read_text().replace("tree_sequential<<<1, THREADS>>>", "tree_sequential<<<1, 32>>>")
    path = tmp_path / "r.cu"
    path.write_text(src)
    model = load(str(path))
    res = registry.propose(TID, model, model.kernel("tree_sequential"))
    assert isinstance(res, NotApplicable) and "32 threads per block; the warp finish needs at least 64" in res.reason


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize(("file", "kernel"), [("reduce_sum_smem.cu", "block_sum_interleaved"), (RV, "tree_max"),
                                              (RV, "tree_strided"), (RV, "tree_sequential")])
def test_candidates_compile(file, kernel, tmp_path):
    model = load(str(fixture_path(file)))
    (c,) = registry.propose(TID, model, model.kernel(kernel))  # type: ignore[misc]
    src = tmp_path / "c.cu"
    src.write_text(c.new_text)
    p = subprocess.run(["nvcc", "-arch=sm_90", "-c", str(src), "-o", str(tmp_path / "c.o")],
                       capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr[-2000:]
