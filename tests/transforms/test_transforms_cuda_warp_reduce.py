"""``cuda.warp_shuffle_finish``: the last six steps of a shared-memory tree reduction run in one warp.

On a sequential-addressing tree the shuffles pair lanes exactly as the tree paired threads, so the result is the
same bit for bit (``changes_numerics`` is false); an interleaved tree also gets sequential addressing, which
reorders float sums. Every candidate is compiled with nvcc here (the reduction fixtures).
"""

from __future__ import annotations

import shutil

import pytest
from gpu_equivalence import call_host, torch_cuda
from transform_helpers import facts_of_text as _facts
from transform_helpers import fixture_path

from htam_core.source import load, parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable
from tests.support.nvcc_check import assert_compiles

TID = "cuda.warp_shuffle_finish"
RV = "reduction_variants.cu"


def test_the_corpus_interleaved_tree(cand):
    (c,) = cand(TID, "reduce_sum_smem.cu", "block_sum_interleaved")
    assert c.params["form"] == "interleaved" and c.changes_numerics and c.reorders_only
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
    ("tree_minus", "uses -=, which is not associative"),
    ("tree_reads_partial", "sdata is used after the tree as `sdata[THREADS / 2]`"),
    ("serial_sum", "no shared-memory tree loop qualifies"),
])
def test_refusals(refuse, kernel, needle):
    assert needle in refuse(TID, RV, kernel)


def test_an_unlaunched_interleaved_tree_gets_a_run_time_guarded_finish(cand):
    """Launched from another file, the block is known only at run time: sequential addressing (defined for the
    same blocks as the interleaved tree) and a finish guarded by the power-of-two test."""
    (c,) = cand(TID, RV, "tree_unlaunched")
    g = "blockDim.x >= 64 && (blockDim.x & (blockDim.x - 1)) == 0"
    body = c.new_text.split("tree_unlaunched")[1].split("__global__")[0]
    assert f"unsigned int s = blockDim.x / 2; s > 0 && !({g} && s <= 32); s >>= 1" in body
    assert f"if ({g}) {{" in body and "if (tid < s)" in body
    assert c.params["form"] == "interleaved" and c.params["block"] == "runtime"


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
    assert_compiles(c.new_text, tmp=tmp_path, name="c.cu")


# ---------------------------------------------------------------- a block size known only at run time
RT = "tree_runtime_block.cu"
GUARD = "nthreads >= 64 && (nthreads & (nthreads - 1)) == 0"


def test_a_launcher_block_size_gets_a_run_time_guarded_finish(cand):
    (c,) = cand(TID, RT, "column_sum_tree")
    assert c.params == {"line": 21, "form": "sequential", "combine": "+", "block": "runtime"}
    assert not c.changes_numerics and GUARD in c.description
    text = c.new_text
    # the tree stops at 32 only where the finish runs; other blocks run the whole tree as before
    assert f"half >= 1 && !({GUARD} && half <= 32); half /= 2" in text
    # the barrier opens each step in this loop, so the finish synchronizes the last step first
    assert (f"    if ({GUARD}) {{\n        __syncthreads();  // the tree's last step wrote without a barrier after it\n"
            "        if (lane < 32) {") in text
    assert "float htam_v = partial[lane] + partial[lane + 32];" in text
    assert "if (lane == 0) partial[0] = htam_v;\n        }\n        __syncthreads();\n    }" in text
    # the local alias is a fact of the analysis layer, and the edit keeps it
    f = _facts(text, "column_sum_tree")
    assert f.builtin_alias("nthreads") == "blockDim.x" and f.builtin_alias("lane") == "threadIdx.x"
    assert ("__shfl_down_sync", 32) in f.collectives


def test_a_threadidx_guard_and_max_combine(cand):
    (c,) = cand(TID, RT, "row_max_tree")
    text = c.new_text
    g = "blockDim.x >= 64 && (blockDim.x & (blockDim.x - 1)) == 0"
    assert f"s > 0 && !({g} && s <= 32); s >>= 1" in text
    assert "float htam_v = fmaxf(best[threadIdx.x], best[threadIdx.x + 32]);" in text
    assert "htam_v = fmaxf(htam_v, __shfl_down_sync(0xffffffffu, htam_v, htam_o));" in text
    assert "wrote without a barrier" not in text  # the barrier closes each step here: none is added


def test_a_constant_launch_with_the_barrier_first_adds_one_barrier(tmp_path):
    src = fixture_path(RT).read_text().replace("dim3 block_dim(block_size);", "dim3 block_dim(256);")
    path = tmp_path / "r.cu"
    path.write_text(src)
    model = load(str(path))
    (c,) = registry.propose(TID, model, model.kernel("column_sum_tree"))  # type: ignore[misc]
    assert c.params["block"] == [256]
    assert "for (int half = nthreads / 2; half > 32; half /= 2)" in c.new_text
    assert "    __syncthreads();  // the tree's last step wrote without a barrier after it\n    if (lane < 32) {" in (
        c.new_text)


@pytest.mark.parametrize(("kernel", "needle"), [
    ("tree_constant_bound", "the tree runs to 128 but the block of the launch on line 121 is not a compile-time"),
    ("tree_two_d", "the launch on line 126 has a multi-dimensional block"),
    ("tree_alias_modified", "the tree starts at `nt / 2`, which is neither blockDim.x / 2 nor a constant"),
])
def test_runtime_refusals(refuse, kernel, needle):
    assert needle in refuse(TID, RT, kernel)


@pytest.mark.gpu
@pytest.mark.parametrize("block", [32, 64, 96, 128, 256, 1024])
def test_runtime_block_equivalence_on_gpu(block, tmp_path, cand):
    """Bitwise the same sums and maxima for power-of-two blocks (finish) and others (the tree as before)."""
    torch = torch_cuda()
    rows, cols = 1001, 37
    g = torch.Generator(device="cuda").manual_seed(block)
    m = torch.randn(rows, cols, device="cuda", generator=g)
    outs = []
    for i, text in enumerate([fixture_path(RT).read_text(), cand(TID, RT, "column_sum_tree")[0].new_text,
                              cand(TID, RT, "row_max_tree")[0].new_text]):
        colsum = torch.full((cols,), 0.5, device="cuda")
        rowmax = torch.zeros(rows, device="cuda")
        call_host(text, "float *colsum, float *rowmax, const float *m, int rows, int cols, int block",
                  "column_sum(colsum, m, rows, cols, block); row_max(rowmax, m, rows, cols, block)",
                  [colsum, rowmax, m, rows, cols, block], tmp_path, f"rt{i}")
        outs.append((colsum, rowmax))
    (s0, m0), (s1, _), (_, m2) = outs
    assert torch.equal(s1, s0) and torch.equal(m2, m0)
    if block & (block - 1):
        return  # a tree over a non-power-of-two block drops values: only the equality above is meaningful
    torch.testing.assert_close(s0, m.sum(0) + 0.5, rtol=1e-4, atol=1e-3)
    assert torch.equal(m0, m.max(1).values)


def test_a_tree_over_a_template_block_bound_at_the_launch(cand):
    # BLOCK is a template parameter, 256 at the launch `bias_grad_colsum<T, kBlock>`: the analysis layer binds it
    (c,) = cand(TID, "bias_gelu_templates.cu", "bias_grad_colsum")
    assert c.params == {"line": 104, "form": "sequential", "combine": "+", "block": [256]} and not c.changes_numerics
    assert "for (int s = BLOCK / 2; s > 32; s >>= 1) {" in c.new_text
    assert "float htam_v = partial[threadIdx.x] + partial[threadIdx.x + 32];" in c.new_text


@pytest.mark.gpu
def test_template_tree_equivalence_on_gpu(tmp_path, cand):
    torch = torch_cuda()
    rows, cols = 3001, 67
    dy = torch.randn(rows, cols, device="cuda", generator=torch.Generator(device="cuda").manual_seed(3))
    outs = []
    for i, text in enumerate([fixture_path("bias_gelu_templates.cu").read_text(),
                              cand(TID, "bias_gelu_templates.cu", "bias_grad_colsum")[0].new_text]):
        db = torch.zeros(cols, device="cuda")
        call_host(text, "const float *dy, float *db, int rows, int cols",
                  "mlp::launch_bias_grad<float>(dy, db, rows, cols, 0)", [dy, db, rows, cols], tmp_path, f"tb{i}")
        outs.append(db)
    assert torch.equal(outs[1], outs[0])  # the same pairs in the same order
    torch.testing.assert_close(outs[0], dy.sum(0), rtol=1e-4, atol=1e-3)
