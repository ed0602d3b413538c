"""Per-block outputs: a kernel whose output is indexed by ``blockIdx`` alone (a partial sum per block) has as many
outputs as blocks, so a step that changes the grid changes the output's shape. ``cuda.block_size`` refuses it when
the grid follows the block size, and keeps offering the kernels whose output does not depend on the grid.

The kernels are written here, in the style of a shared-memory tree reduction (each block writes its partial sum).
"""

from __future__ import annotations

import pytest

from htam_core.source import parse_text
from htam_core.source.analysis import analyze
from htam_core.transforms import registry
from htam_core.transforms._cuda import load_unit, per_block_output_hazard, wrap_grid
from htam_core.transforms.base import NotApplicable

REDUCE = """
#define BLOCK 256
__global__ void reduce_tree(const float *g_idata, float *g_odata, unsigned int n)
{
    __shared__ float sdata[BLOCK];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? g_idata[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    FINISH
}
void run(const float *d_in, float *d_out, unsigned int n)
{
    int blocks = GRID;
    reduce_tree<<<blocks, BLOCK>>>(d_in, d_out, n);
}
"""
PARTIAL = "if (tid == 0) g_odata[blockIdx.x] = sdata[0];"
FOLLOWS = "(n + BLOCK - 1) / BLOCK"


def _kernel(finish: str = PARTIAL, grid: str = FOLLOWS):
    model = parse_text(REDUCE.replace("FINISH", finish).replace("GRID", grid), "cuda", "reduce_tree.cu")
    return model, model.kernel("reduce_tree")


def test_the_partial_sum_is_a_per_block_output():
    model, k = _kernel()
    (a,) = analyze(model, k).per_block_outputs()
    assert (a.pointer, a.index_text) == ("g_odata", "blockIdx.x")


@pytest.mark.parametrize("finish", [
    "if (tid == 0) atomicAdd(g_odata, sdata[0]);",  # one output whatever the grid
    "g_odata[i] = sdata[tid];",  # per thread
    "for (unsigned int j = threadIdx.x; j < 4; j += blockDim.x) g_odata[blockIdx.x * 4 + j] = sdata[j];",
])
def test_outputs_that_are_not_per_block(finish):
    model, k = _kernel(finish)
    assert analyze(model, k).per_block_outputs() == ()


def test_block_size_refuses_a_per_block_output_when_the_grid_follows_the_block():
    model, k = _kernel()
    r = registry.propose("cuda.block_size", model, k)
    assert isinstance(r, NotApplicable)
    assert "one output per block" in r.reason and "g_odata[blockIdx.x]" in r.reason, r.reason


def test_block_size_is_still_offered_when_the_output_does_not_follow_the_grid():
    model, k = _kernel("if (tid == 0) atomicAdd(g_odata, sdata[0]);")
    assert not isinstance(registry.propose("cuda.block_size", model, k), NotApplicable)


def test_grid_rewrites_refuse_it_too():
    model, k = _kernel()
    unit = load_unit(model, k)
    assert not isinstance(unit, str)
    assert per_block_output_hazard(unit) is not None
    why = wrap_grid(unit, unit.launches[0], "(({}) + 3) / 4")
    assert isinstance(why, str) and "one output per block" in why


# ---------------------------------------------------------------- several elements per thread, fewer blocks
COARSEN = """
__global__ void reduce_tree(const float *g_idata, float *g_odata, unsigned int n)
{
    __shared__ float sdata[256];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? g_idata[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}
HOST
"""
FROM_CALLER = """void run(const float *d_in, float *d_out, unsigned int n, int blocks)
{
    dim3 grid(blocks, 1, 1);
    reduce_tree<<<grid, 256>>>(d_in, d_out, n);
}"""
FROM_HOST = """void run(const float *d_in, float *d_out, unsigned int n)
{
    int blocks = (n + 255) / 256;
    dim3 grid(blocks, 1, 1);
    reduce_tree<<<grid, 256>>>(d_in, d_out, n);
    finish_on_host(d_out, blocks);
}"""


def _coarsen(host: str):
    model = parse_text(COARSEN.replace("HOST", host), "cuda", "reduce_tree.cu")
    return registry.propose("cuda.coarsen_reduction", model, model.kernel("reduce_tree"))


def test_coarsening_refuses_a_block_count_the_caller_passes_in():
    """The caller reads `blocks` partial sums: fewer blocks would leave some unwritten (the output contract)."""
    r = _coarsen(FROM_CALLER)
    assert isinstance(r, NotApplicable)
    assert "comes from the caller" in r.reason and "one result per block" in r.reason, r.reason


def test_coarsening_changes_a_host_block_count_behind_a_dim3():
    """`dim3 grid(blocks, 1, 1)` is 1-D; the count is changed where `blocks` is declared, so the host's other use
    of it (the partial sums it finishes) follows."""
    r = _coarsen(FROM_HOST)
    assert not isinstance(r, NotApplicable), r.reason
    for c in r:
        f = c.params["elements_per_thread"]
        assert f"int blocks = (((n + 255) / 256) + {f - 1}) / {f};" in c.new_text
        assert "dim3 grid(blocks, 1, 1);" in c.new_text and "finish_on_host(d_out, blocks);" in c.new_text


# ---------------------------------------------------------------- the host owns the contract: block size with the grid
OWNED = """
__global__ void reduce_tree(const float *g_idata, float *g_odata, unsigned int n)
{
    __shared__ float sdata[1024];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? g_idata[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}
float total(const float *d_in, unsigned int n, float *d_given)
{
    const int threads = 256;
    int blocks = (n + threads - 1) / threads;
    float *partial;
    ALLOC
    reduce_tree<<<GRID, threads>>>(d_in, OUT, n);
    float h[65536];
    cudaMemcpy(h, partial, blocks * sizeof(float), cudaMemcpyDeviceToHost);
    float s = 0.0f;
    for (int b = 0; b < blocks; ++b) s += h[b];
    return s;
}
"""
MALLOC = "cudaMalloc(&partial, blocks * sizeof(float));"


def _owned(alloc: str = MALLOC, grid: str = "blocks", out: str = "partial"):
    text = OWNED.replace("ALLOC", alloc).replace("GRID", grid).replace("OUT", out)
    model = parse_text(text, "cuda", "owned.cu")
    return registry.propose("cuda.block_size", model, model.kernel("reduce_tree"))


def test_block_size_is_offered_when_the_host_owns_the_count_and_the_partials():
    """The grid is a host local and the host allocates and reads the partials with it: a new block size changes the
    launch and the output's length together, and the host reads as many partials as there are blocks."""
    r = _owned()
    assert not isinstance(r, NotApplicable), r.reason
    assert sorted(c.params["block"][0] for c in r) == [128, 512, 1024]
    for c in r:
        assert f"const int threads = {c.params['block'][0]};" in c.new_text
        assert "int blocks = (n + threads - 1) / threads;" in c.new_text  # the count follows the block
        assert MALLOC in c.new_text and "for (int b = 0; b < blocks; ++b)" in c.new_text


@pytest.mark.parametrize(("over", "needle"), [
    ({"out": "d_given"}, "comes from the caller"),  # the caller's buffer, sized for its own count
    ({"grid": "(n + threads - 1) / threads"}, "is not a local of its host"),  # an inline grid
    ({"alloc": "cudaMalloc(&partial, 4096 * sizeof(float));"}, "does not allocate"),  # a fixed-size buffer
])
def test_block_size_is_refused_where_the_caller_contract_is_unknown(over, needle):
    r = _owned(**over)
    assert isinstance(r, NotApplicable)
    assert "one output per block" in r.reason and needle in r.reason, r.reason


CALLER_READS = """void run(const float *d_in, float *d_out, unsigned int n)
{
    int blocks = (n + 255) / 256;
    reduce_tree<<<blocks, 256>>>(d_in, d_out, n);
}"""


def test_coarsening_refuses_partials_the_caller_reads():
    """The host computes the count but neither allocates nor reads d_out: its caller reads its own count of
    partials, so fewer blocks would leave some of them unwritten."""
    r = _coarsen(CALLER_READS)
    assert isinstance(r, NotApplicable)
    assert "one output per block" in r.reason and "comes from the caller" in r.reason, r.reason


# ---------------------------------------------------------------- the reduction spellings: every grid change keeps it
def _per_block_spellings():
    from spellings import ROOT, load_step

    return [sp for step in ("sequential_addressing", "warp_shuffle_finish") for sp in load_step(ROOT / step)]


@pytest.mark.parametrize("sp", _per_block_spellings(), ids=lambda sp: f"{sp.step}/{sp.file}")
def test_the_reduction_spellings_write_per_block_outputs(sp):
    """Every reduction spelling writes one partial per block: the contract the grid-changing steps must keep."""
    model = parse_text(sp.path.read_text(), "cuda", str(sp.path))
    assert analyze(model, model.kernel(sp.kernel)).per_block_outputs(), sp.file


@pytest.mark.gpu
@pytest.mark.parametrize("tid", ["cuda.block_size", "cuda.coarsen_reduction"])
@pytest.mark.parametrize("sp", _per_block_spellings(), ids=lambda sp: f"{sp.step}/{sp.file}")
def test_grid_changes_keep_the_contract_on_gpu(sp, tid, tmp_path):
    """Where a step that changes the grid is made on a per-block-output spelling, the host's total is unchanged."""
    from spellings import gpu_matches, gpu_usable

    if not gpu_usable():
        pytest.skip("no CUDA device or no nvcc")
    model = parse_text(sp.path.read_text(), "cuda", str(sp.path))
    res = registry.propose(tid, model, model.kernel(sp.kernel))
    if isinstance(res, NotApplicable):
        pytest.skip(res.reason)
    ok, why = gpu_matches(sp, res, tmp_path)
    assert ok, why
