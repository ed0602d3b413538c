"""``cuda.coarsen_reduction`` when a count's guard calls a ``__device__`` helper of the unit (probe2 c02:
``s[t] = (i < n && above(x[i], thr)) ? 1u : 0u;`` with ``__device__ bool above(float v, float t) { return v > t;
}``): the helper is pure (:attr:`KernelFacts.pure_calls`), so the term follows the grid-stride loop's index like
``x[i] > thr`` does. A helper that writes memory is refused. The kernel is written for these tests; the candidate
compiles with nvcc (sm_90) and counts the same on the CPU (:func:`cpu_emulation.run_block_main`)."""

from __future__ import annotations

import shutil

import pytest
from cpu_emulation import SM_GRID_PRELUDE, compiler, run_block_main
from transform_helpers import assert_nvcc_compiles, facts_of_text

from htam_core.memory.facts import compute_facts
from htam_core.source import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

TID = "cuda.coarsen_reduction"

_TEXT = """
HELPER
__global__ void count_above(const float *x, int n, float thr, unsigned int *total)
{
    __shared__ unsigned int s[256];
    unsigned int t = threadIdx.x;
    unsigned int gid = blockIdx.x * blockDim.x + t;
    s[t] = (gid < n && above(x[gid], thr)) ? 1u : 0u;
    __syncthreads();
    for (unsigned int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) atomicAdd(total, s[0]);
}
void run(const float *x, int n, float thr, unsigned int *total) {
    count_above<<<(n + 255) / 256, 256>>>(x, n, thr, total);
}
"""
PURE = "__device__ __forceinline__ bool above(float v, float t) { return v > t; }"
#: The same predicate, but it also records into a global: not a value any more.
WRITES = "__device__ unsigned int g_seen;\n__device__ bool above(float v, float t) { g_seen = 1u; return v > t; }"
WRITES_POINTER = ("__device__ float *g_last;\n"
                  "__device__ bool above(float v, float t) { g_last[0] = v; return v > t; }")


def _propose(helper: str):
    model = parse_text(_TEXT.replace("HELPER", helper), "cuda", "count_helper.cu")
    return model, registry.propose(TID, model, model.kernel("count_above"))


def test_a_count_through_a_pure_helper_is_coarsened():
    """Regression (probe2 c02): the helper's call was not a pure expression, so the load was not read at all and
    the step fell back to the generic "no one-element load" refusal."""
    model, cs = _propose(PURE)
    assert not isinstance(cs, NotApplicable), cs.reason
    assert [c.params["blocks_per_sm"] for c in cs] == [4, 8]
    for c in cs:
        assert "above(x[htam_j], thr)" in c.new_text and "s[t] = (gid < n" not in c.new_text
    k = model.kernel("count_above")
    assert compute_facts(k.features, k.language, kernel=k, model=model)["one_element_tree"] is True


@pytest.mark.parametrize("helper", [WRITES, WRITES_POINTER])
def test_a_helper_that_writes_memory_is_refused(helper):
    model, r = _propose(helper)
    assert isinstance(r, NotApplicable)
    k = model.kernel("count_above")
    assert compute_facts(k.features, k.language, kernel=k, model=model)["one_element_tree"] is False


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_coarsened_count_compiles(tmp_path):
    _, cs = _propose(PURE)
    for i, c in enumerate(cs):
        assert_nvcc_compiles(c.new_text, tmp_path, f"h{i}.cu")


_MAIN = """
int main() {
    for (int n : {1, 255, 1000, 5003}) {
        std::vector<float> x(n);
        std::vector<unsigned int> total(1, 0u);
        for (int k = 0; k < n; ++k) x[k] = (float)((k * 37) % 101) / 100.0f;
        htam_launch(GRID, 256, 1, [&] { count_above(x.data(), n, 0.5f, total.data()); });
        std::printf("%u\\n", total[0]);
    }
    return 0;
}
"""


@pytest.mark.skipif(compiler() is None, reason="no host C++ compiler")
def test_the_coarsened_count_counts_the_same_on_the_cpu(tmp_path):
    _, cs = _propose(PURE)
    text = cs[0].new_text
    (grid,) = [d.text for d in facts_of_text(text, "count_above").launches[0].grid]
    got = run_block_main(text, "count_above", _MAIN.replace("GRID", grid), tmp_path, helpers=("above",),
                         prelude="#define __forceinline__\n" + SM_GRID_PRELUDE)
    assert got == [sum(1 for k in range(n) if ((k * 37) % 101) / 100.0 > 0.5) for n in (1, 255, 1000, 5003)]
