"""``cuda.smem_histogram`` makes the textbook privatized histogram in one step: the private bins, a grid-stride loop
and a grid capped at a few blocks per SM.

A privatized block zeroes and flushes all its bins whatever its share of the elements, so under a grid that covers
``n`` with one element per thread the flush is paid ``n / blockDim`` times. The step therefore also turns a guarded
one-element body into a grid-stride loop and caps every launch whose grid is not a small constant
(``htam_sm_grid(blocks, 8)``); a kernel that is already a grid-stride loop only gets its grid capped. Spellings
(written for these tests): int bins from a ``#define``, float bins sized by the launch's allocation, float bins
bounded by a kernel parameter (dynamic shared memory), a ``size_t`` grid-stride loop launched over ``n``, launches
in host functions and in ``main``. A 2-D image histogram keeps its grid (the grid-stride loop is 1-D) and one-line
reasons say so. CPU runs launch the candidate over a grid far smaller than ``n`` (each thread takes many elements)
and compare with the original over its full grid: integer counts exactly, float sums at the reordered-sum tolerance.
"""

from __future__ import annotations

import shutil

import pytest
from transform_helpers import assert_nvcc_compiles

from htam_core.source import parse_text
from htam_core.transforms import registry
from htam_core.transforms._cuda import load_unit
from htam_core.transforms.base import NotApplicable
from htam_core.transforms.cuda_histogram import PER_SM, grid_edits
from htam_core.verify.correctness import REORDERED_SUM_FP32_TOL
from tests.transforms.cpu_emulation import compiler, run_block_main

TID = "cuda.smem_histogram"

INT_DEFINE = """#define NB 64
__global__ void hist_int(const int* data, unsigned int* hist, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&hist[data[i] % NB], 1u);
}
void run(const int* d, unsigned int* h, int n) { hist_int<<<(n + 255) / 256, 256>>>(d, h, n); }
"""

FLOAT_LAUNCH = """#include <cuda_runtime.h>
#define NBINS 512
__global__ void scatter(const int* idx, const float* val, float* bins, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&bins[idx[i]], val[i]);
}
int main()
{
    const int n = 1 << 22;
    int* idx; float *val, *bins;
    cudaMalloc(&idx, n * sizeof(int));
    cudaMalloc(&val, n * sizeof(float));
    cudaMalloc(&bins, NBINS * sizeof(float));
    scatter<<<(n + 255) / 256, 256>>>(idx, val, bins, n);
    return 0;
}
"""

PARAM_BOUND = """__global__ void scatter_checked(const int* key, const float* val, float* out, int n, int nbins)
{
    const int tid = threadIdx.x + blockDim.x * blockIdx.x;
    if (tid < n) {
        int b = key[tid];
        if (b < nbins) atomicAdd(&out[b], val[tid]);
    }
}
void run(const int* key, const float* val, float* out, int n)
{
    const int threads = 128;
    scatter_checked<<<(n + threads - 1) / threads, threads>>>(key, val, out, n, 64);
}
"""

STRIDED = """__global__ void hist_gs(const unsigned int* keys, unsigned int* hist, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)blockDim.x * gridDim.x)
        atomicAdd(&hist[keys[i] % 256u], 1u);
}
void run(const unsigned int* keys, unsigned int* hist, size_t n)
{
    dim3 grid((unsigned)((n + 255) / 256));
    hist_gs<<<grid, 256>>>(keys, hist, n);
}
"""

IMAGE_2D = """__global__ void hist_image(const unsigned char* img, unsigned int* hist, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) atomicAdd(&hist[img[y * w + x]], 1u);
}
void run(const unsigned char* img, unsigned int* hist, int w, int h)
{
    dim3 block(16, 16), grid((w + 15) / 16, (h + 15) / 16);
    hist_image<<<grid, block>>>(img, hist, w, h);
}
"""

#: spelling -> (text, kernel, the launch as the candidate writes it)
GRID_STRIDE = {
    "int_define": (INT_DEFINE, "hist_int", "hist_int<<<htam_sm_grid((n + 255) / 256, 8), 256>>>(d, h, n);"),
    "float_launch": (FLOAT_LAUNCH, "scatter", "scatter<<<htam_sm_grid((n + 255) / 256, 8), 256>>>"),
    "param_bound": (PARAM_BOUND, "scatter_checked",
                    "scatter_checked<<<htam_sm_grid((n + threads - 1) / threads, 8), threads, (64) * sizeof(float)>>>"),
    "strided": (STRIDED, "hist_gs", "hist_gs<<<dim3(htam_sm_grid(grid.x, 8), grid.y, grid.z), 256>>>"),
}


def _propose(text: str, kernel: str):
    model = parse_text(text, "cuda", "h.cu")
    return registry.propose(TID, model, model.kernel(kernel))


def _kernel_text(text: str, kernel: str) -> str:
    body = text[text.index(f"void {kernel}("):]
    return body[: body.index("\n}\n")]


@pytest.mark.parametrize("name", sorted(GRID_STRIDE))
def test_privatized_with_a_grid_stride_loop_and_a_capped_grid(name):
    text, kernel, launch = GRID_STRIDE[name]
    cs = _propose(text, kernel)
    assert not isinstance(cs, NotApplicable), cs.reason
    (c,) = cs
    assert c.params["blocks_per_sm"] == PER_SM and "grid-stride loop over a grid capped" in c.description
    assert launch in c.new_text and "htam_sm_grid" in c.helpers
    body = _kernel_text(c.new_text, kernel)
    zero, count, flush = body.split("__syncthreads();")
    assert "htam_hist[htam_b] = 0;" in zero
    assert "gridDim.x" in count and count.count("for (") == 1  # the elements in one grid-stride loop
    assert "atomicAdd(&htam_hist[" in count and "htam_hist[htam_b]);" in flush


def test_a_2d_image_histogram_is_privatized_and_keeps_its_grid():
    (c,) = _propose(IMAGE_2D, "hist_image")
    assert c.params["blocks_per_sm"] is None and "htam_sm_grid" not in c.new_text
    assert "hist_image<<<grid, block>>>" in c.new_text and "__shared__ unsigned int htam_hist[256];" in c.new_text
    model = parse_text(IMAGE_2D, "cuda", "h.cu")
    why = grid_edits(load_unit(model, model.kernel("hist_image")))  # type: ignore[arg-type]
    assert isinstance(why, str) and "\n" not in why


@pytest.mark.parametrize(("text", "kernel", "why"), [
    (INT_DEFINE.replace("(n + 255) / 256", "64"), "hist_int", "constant grid"),  # the launcher chose a small grid
    (INT_DEFINE.split("void run")[0], "hist_int", "no launch in this file"),  # launched from another file
])
def test_the_grid_is_kept_with_a_reason(text, kernel, why):
    (c,) = _propose(text, kernel)
    assert c.params["blocks_per_sm"] is None and "htam_sm_grid" not in c.new_text
    model = parse_text(text, "cuda", "h.cu")
    got = grid_edits(load_unit(model, model.kernel(kernel)))  # type: ignore[arg-type]
    assert isinstance(got, str) and why in got


def test_float_bins_are_a_reordered_sum_integer_bins_exact():
    (f,) = _propose(FLOAT_LAUNCH, "scatter")
    (i,) = _propose(INT_DEFINE, "hist_int")
    assert f.changes_numerics and f.reorders_only
    assert not i.changes_numerics


_MAIN = """
int main() {
    const int n = 6007;
    std::vector<int> key(n); std::vector<unsigned> ukey(n); std::vector<float> val(n);
    for (int k = 0; k < n; ++k) {
        key[k] = (k * 37 + k / 11) % 97; ukey[k] = (unsigned)(k * 2654435761u >> 7); val[k] = 0.1f * (float)(k % 13) + 0.37f;
    }
    std::vector<unsigned> hu(256, 0); std::vector<float> hf(1024, 0.0f);
    CALL
    for (unsigned v : hu) std::printf("%u\\n", v);
    for (float v : hf) std::printf("%.9g\\n", v);
    return 0;
}
"""
#: spelling -> the launch as C++ with GRID blocks of 64 threads
_CALLS = {
    "int_define": "htam_launch(GRID, 64, 1, [&] { hist_int(key.data(), hu.data(), n); });",
    "float_launch": "htam_launch(GRID, 64, 1, [&] { scatter(key.data(), val.data(), hf.data(), n); });",
    "param_bound": "htam_launch(GRID, 64, 1, [&] { scatter_checked(key.data(), val.data(), hf.data(), n, 64); });",
    "strided": "htam_launch(GRID, 64, 1, [&] { hist_gs(ukey.data(), hu.data(), (size_t)n); });",
}


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("name", sorted(GRID_STRIDE))
def test_a_small_grid_gives_the_full_grids_counts_on_the_cpu(name, tmp_path):
    text, kernel, _ = GRID_STRIDE[name]
    call = _CALLS[name]
    prelude = "#define NB 64\n#define NBINS 512"
    want = run_block_main(text, kernel, _MAIN.replace("CALL", call.replace("GRID", "(n + 63) / 64")), tmp_path,
                          prelude=prelude)
    assert sum(want) > 1000 and len(set(want)) > 2
    (c,) = _propose(text, kernel)
    got = run_block_main(c.new_text, kernel, _MAIN.replace("CALL", call.replace("GRID", "3")), tmp_path,
                         prelude=prelude)  # 3 blocks of 64 threads: each thread takes about 31 elements
    assert len(got) == len(want)
    if c.reorders_only:
        assert all(abs(g - w) <= REORDERED_SUM_FP32_TOL * max(1.0, abs(w)) for g, w in zip(got, want, strict=True))
    else:
        assert got == want


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("name", [*sorted(GRID_STRIDE), "image_2d"])
def test_the_candidates_compile(name, tmp_path):
    text, kernel = (IMAGE_2D, "hist_image") if name == "image_2d" else GRID_STRIDE[name][:2]
    (c,) = _propose(text, kernel)
    assert_nvcc_compiles(("#include <cuda_runtime.h>\n" if "#include" not in c.new_text else "") + c.new_text,
                         tmp_path)
