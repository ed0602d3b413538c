"""``cuda.coarsen_reduction``: several elements per thread (grid-stride, in a register) before a block reduction.

Structural tests read the facts of the result: the load becomes a grid-stride loop (``LoopFact.grid_stride``)
accumulating into a register of the shared array's type, the tree is unchanged, and the grid shrinks where the
host declares the block count (so the host's ``n = blocks`` follows) or at the launch when the result does not
depend on the grid (an atomic finish). The ``gpu`` tests build the file and compare on ragged sizes.
"""

from __future__ import annotations

import pytest
from gpu_equivalence import call_host, torch_cuda
from transform_helpers import facts_of_text as _facts
from transform_helpers import fixture_path

from htam_core.source.analysis.block_load import NO_LOAD

TID = "cuda.coarsen_reduction"
FILE = "coarsen_variants.cu"


def test_partial_sums_grid_stride_and_the_host_block_count(cand):
    cs = cand(TID, FILE, "sum_partials")
    assert [c.params["elements_per_thread"] for c in cs] == [8, 4] and cs[0].params["per_block_output"]
    text = cs[0].new_text
    f = _facts(text, "sum_partials")
    (gs,) = [lp for lp in f.loops if lp.grid_stride]
    assert [(a.name, a.op, a.type) for a in gs.accumulators] == [("htam_v", "sum", "float")]
    (rd,) = [a for a in f.accesses_in(gs) if a.pointer == "in"]
    assert rd.coalesced("x") is True
    # the block count changes where the host declares it, so `n = blocks` gives the new number of partials
    assert "unsigned int blocks = (((n + BLOCK - 1) / BLOCK) + 7) / 8;" in text and "n = blocks;" in text
    assert "for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1)" in text  # the tree is kept


def test_max_with_atomic_finish_sizes_the_grid_to_the_device(cand):
    cs = cand(TID, FILE, "max_atomic")
    assert cs[0].params == {"grid": "device", "blocks_per_sm": 4, "combine": "max", "per_block_output": False,
                            "form": "block_combine"}
    text = cs[0].new_text
    assert "htam_acc = max(htam_acc, x[htam_j]);" in text and "int htam_acc = -2147483647;" in text
    kernel = text.split("void run_max")[0]
    assert "atomicMax(out, htam_acc);" in kernel and "smax" not in kernel.split("max_atomic")[-1]  # the tree's array goes
    f = _facts(text, "max_atomic")
    assert f.launches[0].grid[0].text == "htam_sm_grid((n + BLOCK - 1) / BLOCK, 4)"
    assert f.pointer("out").mode == "readwrite"


def test_the_corpus_reduction(cand):
    cs = cand(TID, "reduce_sum_smem.cu", "block_sum_interleaved")
    assert "unsigned int blocks = (((n + THREADS - 1) / THREADS) + 7) / 8;" in cs[0].new_text


@pytest.mark.parametrize(("kernel", "needle"), [
    ("sum_inline_grid", "is an expression at the launch, and the kernel writes one result per block"),
    ("sum_strided", "already accumulates several elements"),
])
def test_refusals(refuse, kernel, needle):
    assert needle in refuse(TID, FILE, kernel)


def test_other_corpus_kernels_are_refused(refuse):
    assert refuse(TID, "sgemm_naive.cu", "sgemm_naive") == NO_LOAD


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 1000, 777_777])
def test_equivalence_on_gpu(n, tmp_path, cand):
    torch = torch_cuda()
    x = torch.randn(n, device="cuda", generator=torch.Generator(device="cuda").manual_seed(n))
    xi = (x * 1000).to(torch.int32)
    sums, maxes = [], []
    for i, text in enumerate([fixture_path(FILE).read_text(), cand(TID, FILE, "sum_partials")[0].new_text]):
        buf, tmp = x.clone(), torch.zeros_like(x)
        out = torch.zeros(1, device="cuda")
        call_host(text, "float *in, float *tmp, unsigned int n, float *out",
                  "float r = reduce(in, tmp, n); cudaMemcpy(out, &r, sizeof(float), cudaMemcpyHostToDevice)",
                  [buf, tmp, n, out], tmp_path, f"s{i}")
        sums.append(out)
    for i, text in enumerate([fixture_path(FILE).read_text(), cand(TID, FILE, "max_atomic")[0].new_text]):
        out = torch.full((1,), -2147483647, dtype=torch.int32, device="cuda")
        call_host(text, "const int *x, int *out, int n", "run_max(x, out, n)", [xi, out, n], tmp_path, f"m{i}")
        maxes.append(out)
    torch.testing.assert_close(sums[1], sums[0], rtol=1e-3, atol=1e-2)  # float sums in another order
    assert int(maxes[1]) == int(maxes[0]) == int(xi.max())
