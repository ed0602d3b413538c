"""Steps on kernels whose sizes are enumerators (``enum { NCLASS = 100 };``, ``enum class``, a namespaced enum) or the
template arguments of a host launch wrapper (``template <int BX, int BY> void launch(...)`` called as
``launch<32, 8>(...)``): the ranking offers the step, the rules engine makes it, and nvcc compiles the result for
sm_90. Kernels written for this test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htam_core.memory.facts import compute_facts
from htam_core.memory.knowledge import load_knowledge
from htam_core.source import parse_text
from htam_core.transforms.registry import NotApplicable, propose
from tests.transforms.transform_helpers import assert_nvcc_compiles

_HIST = """{decl}
__global__ void count_labels(const int* labels, unsigned int* counts, int n) {{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {{
        int c = labels[i];
        if (c >= 0 && c < {bound}) atomicAdd(&counts[c], 1u);
    }}
}}
void run(const int* l, unsigned int* c, int n) {{ count_labels<<<1024, 256>>>(l, c, n); }}
"""
HISTOGRAMS = [
    _HIST.format(decl="enum { NCLASS = 100 };", bound="NCLASS"),
    _HIST.format(decl="namespace cfg { enum Classes { FIRST, NCLASS = 64 }; }", bound="cfg::NCLASS"),
    _HIST.format(decl="enum class Bins : int { Count = 48 };", bound="static_cast<int>(Bins::Count)"),
]

REDUCTION = """enum { BLOCK = 256 };
__global__ void abs_sum(const float* a, float* out, int n) {
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    int i = blockIdx.x * BLOCK + t;
    buf[t] = i < n ? fabsf(a[i]) : 0.0f;
    __syncthreads();
    for (int s = 1; s < BLOCK; s *= 2) {
        if (t % (2 * s) == 0) buf[t] += buf[t + s];
        __syncthreads();
    }
    if (t == 0) atomicAdd(out, buf[0]);
}
void run(const float* a, float* out, int n) { abs_sum<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(a, out, n); }
"""

WRAPPER = """__global__ void scale2d(const float* x, float* y, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) y[r * cols + c] = 3.0f * x[r * cols + c];
}
template <int BX, int BY>
void launch_scale(const float* x, float* y, int rows, int cols) {
    dim3 block(BX, BY);
    dim3 grid((cols + BX - 1) / BX, (rows + BY - 1) / BY);
    scale2d<<<grid, block>>>(x, y, rows, cols);
}
void run(const float* x, float* y, int rows, int cols) { launch_scale<32, 8>(x, y, rows, cols); }
"""
WRAPPER_TWICE = WRAPPER + "void run_small(const float* x, float* y) { launch_scale<16, 16>(x, y, 8, 8); }\n"


def _offered_and_made(text: str, kernel: str, strategy: str, transform: str):
    model = parse_text(text, "cuda", "k.cu")
    k = model.kernel(kernel)
    facts = compute_facts(k.features, k.language, None, k, model)
    assert load_knowledge().strategy(strategy).applies.evaluate(facts) is True
    res = propose(transform, model, k)
    assert not isinstance(res, NotApplicable), res.reason
    return res


@pytest.mark.parametrize("text", HISTOGRAMS)
def test_histogram_bound_by_an_enumerator(text: str) -> None:
    new = _offered_and_made(text, "count_labels", "smem_histogram", "cuda.smem_histogram")[0].new_text
    assert "__shared__ unsigned int htam_hist[" in new


def test_reduction_sized_by_an_enumerator() -> None:
    new = _offered_and_made(REDUCTION, "abs_sum", "sequential_addressing", "cuda.sequential_addressing")[0].new_text
    assert "s >>= 1" in new or "s /= 2" in new or ">> 1" in new


@pytest.mark.parametrize(("strategy", "transform"), [("cuda_block_size", "cuda.block_size"),
                                                      ("launch_bounds", "cuda.launch_bounds")])
def test_wrapper_template_arguments_are_the_block(strategy: str, transform: str) -> None:
    res = _offered_and_made(WRAPPER, "scale2d", strategy, transform)
    if transform == "cuda.launch_bounds":
        assert "__launch_bounds__(256)" in res[0].new_text
    else:  # the block is changed where its value is written: the wrapper's one call
        assert any("launch_scale<32, 8>" not in c.new_text and "launch_scale<" in c.new_text for c in res)


def test_wrapper_instantiated_twice_says_so() -> None:
    model = parse_text(WRAPPER_TWICE, "cuda", "k.cu")
    for transform in ("cuda.block_size", "cuda.launch_bounds"):
        res = propose(transform, model, model.kernel("scale2d"))
        assert isinstance(res, NotApplicable)
        assert "BX = 16, 32: several instantiations disagree" in res.reason


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_results_compile_for_sm90(tmp_path: Path) -> None:
    made = [(_offered_and_made(t, "count_labels", "smem_histogram", "cuda.smem_histogram")[0].new_text, f"h{k}.cu")
            for k, t in enumerate(HISTOGRAMS)]
    made.append((_offered_and_made(REDUCTION, "abs_sum", "sequential_addressing",
                                   "cuda.sequential_addressing")[0].new_text, "r.cu"))
    made.append((_offered_and_made(WRAPPER, "scale2d", "cuda_block_size", "cuda.block_size")[0].new_text, "b.cu"))
    made.append((_offered_and_made(WRAPPER, "scale2d", "launch_bounds", "cuda.launch_bounds")[0].new_text, "l.cu"))
    for text, name in made:
        assert_nvcc_compiles(text, tmp_path, name)
