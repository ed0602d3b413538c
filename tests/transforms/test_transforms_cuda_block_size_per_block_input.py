"""``cuda.block_size`` keeps the block of a kernel that reads one value per block and applies it to the block's
slice (a scan's uniform add: ``data[blockIdx.x * blockDim.x + threadIdx.x] += sums[blockIdx.x]``, the sums of an
earlier pass over segments of the launch's block size). Another block size pairs the elements with another
segment's sum, however the value reaches the threads (directly, through a shared variable one thread loads, or at
an offset). The analysis layer names such reads (``KernelFacts.per_block_inputs``); a value indexed by another
grid axis, or a block per row, keeps the step. A kernel whose layout reads a name its block constant is built
from (``WARPS`` of ``#define THREADS (WARP_SIZE * WARPS)``: 8 warps per tile, each its part) keeps its block too;
the warp width a lane index reads alone does not tie it."""

from __future__ import annotations

import pytest

from htam_core.source.analysis import analyze
from htam_core.source.api import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

LAUNCH = """
#define BS 256
void run(float *data, const float *sums, int n, int rows)
{
    NAME<<<GRID, BS>>>(data, sums, n);
}
"""

PER_BLOCK = {
    "direct": """
__global__ void add_sums(float *data, const float *sums, int n)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] += sums[blockIdx.x];
}
""",
    "shared": """
__global__ void add_sums(float *data, const float *sums, int n)
{
    __shared__ float s;
    const int i = threadIdx.x + blockDim.x * blockIdx.x;
    if (threadIdx.x == 0) s = sums[blockIdx.x];
    __syncthreads();
    if (i < n) data[i] = data[i] + s;
}
""",
    "offset": """
__global__ void add_sums(float *data, const float *sums, int n)
{
    int base = blockIdx.x * blockDim.x;
    float s = sums[blockIdx.x + 1];
    if (base + threadIdx.x < n) data[base + threadIdx.x] += s;
}
""",
}

KEEPS = {
    "other axis": """
__global__ void add_sums(float *data, const float *sums, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[blockIdx.y * n + i] += sums[blockIdx.y];
}
""",
    "per element": """
__global__ void add_sums(float *data, const float *sums, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] += sums[i];
}
""",
}


def _text(kernel: str, grid: str = "(n + BS - 1) / BS") -> str:
    return kernel + LAUNCH.replace("NAME", "add_sums").replace("GRID", grid)


@pytest.mark.parametrize("spelling", sorted(PER_BLOCK))
def test_a_value_per_block_keeps_the_block_size(spelling: str) -> None:
    text = _text(PER_BLOCK[spelling])
    model = parse_text(text, "cuda")
    (a,) = analyze(model, model.kernel("add_sums")).per_block_inputs("x")
    assert a.pointer == "sums"
    res = registry.propose("cuda.block_size", model, model.kernel("add_sums"))
    assert isinstance(res, NotApplicable)
    assert "reads one value per block (sums[" in res.reason


@pytest.mark.parametrize("spelling", sorted(KEEPS))
def test_other_reads_keep_the_step(spelling: str) -> None:
    grid = "dim3((n + BS - 1) / BS, rows)" if spelling == "other axis" else "(n + BS - 1) / BS"
    text = _text(KEEPS[spelling], grid)
    model = parse_text(text, "cuda")
    assert analyze(model, model.kernel("add_sums")).per_block_inputs("x") == ()
    res = registry.propose("cuda.block_size", model, model.kernel("add_sums"))
    assert not isinstance(res, NotApplicable), res.reason


def test_a_block_per_row_is_no_slice() -> None:
    text = """
__global__ void scale_rows(float *x, const float *scale, int C)
{
    for (int c = threadIdx.x; c < C; c += blockDim.x) x[blockIdx.x * C + c] *= scale[blockIdx.x];
}
"""
    model = parse_text(text, "cuda")
    assert analyze(model, model.kernel("scale_rows")).per_block_inputs("x") == ()


WARP_TILES = """
#define WARP_SIZE 32
#define WARPS 8
#define THREADS (WARP_SIZE * WARPS)
__global__ void tiles(const double *in, double *out, int ntiles)
{
    const unsigned int lane = threadIdx.x % WARP_SIZE;
    for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {
        size_t i = (size_t)t * THREADS_OF_TILE + (threadIdx.x / WARP_SIZE) * WARP_SIZE + lane;
        out[i] = 2.0 * in[i];
    }
}
__global__ void zero(double *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 0.0;
}
void run(const double *in, double *out, int ntiles, int sms)
{
    zero<<<(ntiles * THREADS + THREADS - 1) / THREADS, THREADS>>>(out, ntiles * THREADS);
    tiles<<<sms * 3, THREADS>>>(in, out, ntiles);
}
"""


@pytest.mark.parametrize("tile", ["WARPS * WARP_SIZE", "WARP_SIZE * WARPS", "(WARPS * 32)"])
def test_a_layout_built_on_the_block_constants_parts_keeps_the_block(tile: str) -> None:
    model = parse_text(WARP_TILES.replace("THREADS_OF_TILE", tile), "cuda")
    res = registry.propose("cuda.block_size", model, model.kernel("tiles"))
    assert isinstance(res, NotApplicable)
    assert "tiles reads WARPS, which its block size THREADS is built from" in res.reason
    other = registry.propose("cuda.block_size", model, model.kernel("zero"))  # the other launch keeps its step
    assert not isinstance(other, NotApplicable), other.reason


def test_the_warp_width_alone_is_no_layout() -> None:
    text = """
#define WARP_SIZE 32
#define THREADS (WARP_SIZE * 8)
__global__ void lanes(float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (float)(threadIdx.x % WARP_SIZE);
}
__global__ void zero(float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 0.0f;
}
void run(float *out, int n)
{
    zero<<<(n + THREADS - 1) / THREADS, THREADS>>>(out, n);
    lanes<<<(n + THREADS - 1) / THREADS, THREADS>>>(out, n);
}
"""
    model = parse_text(text, "cuda")
    res = registry.propose("cuda.block_size", model, model.kernel("lanes"))
    assert not isinstance(res, NotApplicable), res.reason
