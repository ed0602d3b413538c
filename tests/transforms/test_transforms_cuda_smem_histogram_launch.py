"""``cuda.smem_histogram`` when only the launch site says how many bins there are.

A scatter-add ``atomicAdd(&bins[idx[i]], val[i])`` checks nothing about its index; the launch in the same file
passes a buffer allocated with ``NBINS * sizeof(float)``. The analysis reads that count off the allocation
(:func:`~htam_core.source.analysis.launch_buffers.launch_buffer_extent`, marked ``extent_from == "launch"``), the
transform sizes a static shared array with it, and an index at or above it still updates the global buffer: the
CPU run feeds indices past the count into a larger buffer and expects the original's sums exactly. Kernels written
for these tests.
"""

from __future__ import annotations

import shutil

import pytest
from transform_helpers import assert_nvcc_compiles

from htam_core.source import parse_text
from htam_core.source.analysis import analyze
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable
from tests.transforms.cpu_emulation import compiler, run_block_main

TID = "cuda.smem_histogram"

SCATTER = """#include <cuda_runtime.h>
#define NBINS 512
__global__ void scatter(const int* idx, const float* val, float* bins, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&bins[idx[i]], val[i]);
}
int main()
{
    const int n = 1 << 20;
    int* idx; float *val, *bins;
    cudaMalloc(&idx, n * sizeof(int));
    cudaMalloc(&val, n * sizeof(float));
    cudaMalloc(&bins, NBINS * sizeof(float));
    scatter<<<(n + 255) / 256, 256>>>(idx, val, bins, n);
    return 0;
}
"""

# a size_t index through a local, a `(void **)` cast, the size written `sizeof(T) * count` with a host constant
COUNTS = """#include <cuda_runtime.h>
__global__ void counts(const unsigned int* keys, unsigned int* hist, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)blockDim.x * gridDim.x) {
        size_t b = keys[i];
        atomicAdd(&hist[b], 1u);
    }
}
void run(const unsigned int* keys, size_t n)
{
    const int nb = 300;
    const size_t bytes = sizeof(unsigned int) * nb;
    unsigned int* d_hist;
    cudaMalloc((void**)&d_hist, bytes);
    counts<<<64, 128>>>(keys, d_hist, n);
}
"""

# the same scatter with the bin count a parameter: reduced modulo it, or checked against it
MODULO = """__global__ void scatter_mod(const int* key, const float* val, float* bins, int n, int nb)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[key[i] % nb], val[i]);
}
void run(const int* key, const float* val, float* bins, int n) { scatter_mod<<<(n + 127) / 128, 128>>>(key, val, bins, n, 64); }
"""
GUARDED = """__global__ void scatter_checked(const int* key, const float* val, float* bins, int n, int nbins)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int b = key[i];
        if (b < nbins) atomicAdd(&bins[b], val[i]);
    }
}
void run(const int* key, const float* val, float* bins, int n) { scatter_checked<<<(n + 127) / 128, 128>>>(key, val, bins, n, 64); }
"""


def _propose(text: str, kernel: str):
    model = parse_text(text, "cuda", "h.cu")
    return registry.propose(TID, model, model.kernel(kernel))


def test_the_launch_gives_the_bin_count_fact():
    model = parse_text(SCATTER, "cuda", "h.cu")
    (u,) = analyze(model, model.kernel("scatter")).histogram_updates()
    assert (u.extent, u.extent_text, u.extent_from) == (512, "NBINS", "launch")
    model = parse_text(COUNTS, "cuda", "h.cu")
    (u,) = analyze(model, model.kernel("counts")).histogram_updates()
    assert (u.extent, u.extent_text, u.extent_from) == (300, "300", "launch")  # the host constant is not the kernel's


@pytest.mark.parametrize(("text", "kernel", "decl"), [
    (SCATTER, "scatter", "__shared__ float htam_hist[NBINS];"),
    (COUNTS, "counts", "__shared__ unsigned int htam_hist[300];"),
])
def test_a_launch_sized_histogram_keeps_other_indices_global(text, kernel, decl):
    cs = _propose(text, kernel)
    assert not isinstance(cs, NotApplicable), cs.reason
    (c,) = cs
    new = c.new_text
    assert decl in new and "const auto htam_k = " in new
    shared, rest = new.split("atomicAdd(&htam_hist[htam_k]", 1)
    assert "(unsigned long long)htam_k < (unsigned long long)(" in shared
    assert "else atomicAdd(&" in rest.split("__syncthreads()")[0]  # the global path for any other index
    assert "global memory as before" in c.description


@pytest.mark.parametrize(("text", "kernel", "decl"), [
    (MODULO, "scatter_mod", "extern __shared__ float htam_hist[];"),
    (GUARDED, "scatter_checked", "extern __shared__ float htam_hist[];"),
])
def test_a_parameter_count_is_still_the_kernels_own(text, kernel, decl):
    (c,) = _propose(text, kernel)
    assert decl in c.new_text and "htam_k" not in c.new_text  # the kernel bounds its index: no range test
    assert ", (64) * sizeof(float)>>>" in c.new_text


@pytest.mark.parametrize(("change", "why"), [
    ("cudaMalloc(&bins, NBINS * sizeof(float));", "cudaMalloc(&bins, argc * NBINS * sizeof(float));"),  # a run-time size
    ("    return 0;", "    float* more; cudaMalloc(&more, 2 * NBINS * sizeof(float));\n"
                      "    scatter<<<1, 256>>>(idx, val, more, n);\n    return 0;"),  # launches disagree
])
def test_an_unknown_launch_count_is_refused_in_one_line(change, why):
    res = _propose(SCATTER.replace("int main()", "int main(int argc, char** argv)").replace(change, why), "scatter")
    assert isinstance(res, NotApplicable)
    assert "bin count is unknown" in res.reason and "no launch in this file passes" in res.reason
    assert "\n" not in res.reason


def test_the_vectorized_form_is_still_privatized():
    model = parse_text(SCATTER, "cuda", "h.cu")
    (vec,) = registry.propose("cuda.vectorize_float4", model, model.kernel("scatter"))
    cs = _propose(vec.new_text, "scatter")
    assert not isinstance(cs, NotApplicable), cs.reason
    assert cs[0].new_text.count("atomicAdd(&htam_hist[htam_k]") == 2  # the vector path and the scalar tail


_MAIN = """
int main() {
    const int n = 5000;
    std::vector<int> idx(n); std::vector<float> val(n); std::vector<float> bins(1024, 0.0f);
    for (int k = 0; k < n; ++k) { idx[k] = (k * 37 + k / 11) % 1000; val[k] = (float)(k % 5 + 1); }
    htam_launch((n + 127) / 128, 128, 1, [&] { scatter(idx.data(), val.data(), bins.data(), n); });
    for (float v : bins) std::printf("%g\\n", v);
    return 0;
}
"""


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
def test_indices_past_the_count_still_reach_the_buffer_on_the_cpu(tmp_path):
    want = run_block_main(SCATTER, "scatter", _MAIN, tmp_path, prelude="#define NBINS 512")
    assert sum(want[512:]) > 0 and sum(want[:512]) > 0  # both ranges are hit
    (c,) = _propose(SCATTER, "scatter")
    assert run_block_main(c.new_text, "scatter", _MAIN, tmp_path, prelude="#define NBINS 512") == want


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize(("text", "kernel"), [(SCATTER, "scatter"), (COUNTS, "counts")])
def test_the_launch_sized_candidates_compile(text, kernel, tmp_path):
    (c,) = _propose(text, kernel)
    assert_nvcc_compiles(c.new_text, tmp_path)


def test_the_vectorized_guarded_form_is_still_privatized(tmp_path):
    # float4's form declares the kernel's `int b` once per path: each update reads the `b` of its own block
    model = parse_text(GUARDED, "cuda", "h.cu")
    (vec,) = registry.propose("cuda.vectorize_float4", model, model.kernel("scatter_checked"))
    cs = _propose(vec.new_text, "scatter_checked")
    assert not isinstance(cs, NotApplicable), cs.reason
    assert cs[0].new_text.count("atomicAdd(&htam_hist[b]") == 2 and "extern __shared__ float htam_hist[];" in \
        cs[0].new_text
