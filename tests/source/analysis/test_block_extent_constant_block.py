"""A thread's global index written with the launch's block as a constant (``blockIdx.x * THREADS + threadIdx.x``
launched with ``THREADS`` threads) is the global index, also inside a division or a remainder: the row ``idx /
cols`` or the column ``idx % cols`` of the thread's element is placed by the element, not by the block's extent
(:func:`htam_core.source.analysis.contracts.block_extent_results`), however the constant is spelled (a macro, a
``constexpr``, an enumerator, a template argument). A constant that is not the launch's block, and a per-block
result (``partial[blockIdx.x]``), keep their refusals.

The kernels are written here for these tests.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htam_core.source import parse_text
from htam_core.source.analysis import analyze
from htam_core.source.analysis.contracts import block_extent_results
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable
from tests.support.nvcc_check import assert_compiles

BODY = """
    int idx = blockIdx.x * TB + threadIdx.x;
    if (idx < rows * cols) {
        int r = idx PLACE cols;
        out[idx] = in[idx] * scale[r];
    } else return;
}
"""
PARAMS = "(const float* in, const float* scale, float* out, int rows, int cols) {"

#: name -> (declarations, the kernel's head, the launch's template arguments, TB's value)
SPELLINGS = {
    "macro": ("#define TB 256", "__global__ void k", "", 256),
    "constexpr": ("constexpr int TB = 256;", "__global__ void k", "", 256),
    "enum": ("namespace cfg { enum { THREADS = 256 }; }\n#define TB cfg::THREADS", "__global__ void k", "", 256),
    "template": ("", "template <int TB> __global__ void k", "<256>", 256),
}


def _src(name: str, place: str = "/", launch_block: int | None = None) -> str:
    decls, head, targs, tb = SPELLINGS[name]
    block = launch_block or tb
    return (f"{decls}\n{head}{PARAMS}{BODY.replace('PLACE', place)}\n"
            "void run(const float* in, const float* s, float* out, int rows, int cols) {\n"
            f"    int n = rows * cols;\n    k{targs}<<<(n + {block} - 1) / {block}, {block}>>>(in, s, out, rows, cols);\n}}\n")


@pytest.mark.parametrize("place", ["/", "%"])
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_the_row_of_the_global_index_is_no_block_place(name: str, place: str) -> None:
    model = parse_text(_src(name, place), "cuda", "k.cu")
    facts = analyze(model, model.kernels[0])
    assert block_extent_results(facts, "x", 256, index_only=True) is None
    assert block_extent_results(facts, "x", 256) is None
    r = registry.propose("cuda.vectorize_float4", model, model.kernels[0])
    assert not isinstance(r, NotApplicable), r.reason


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_a_constant_that_is_not_the_launch_block_is_no_global_index(name: str) -> None:
    # blockIdx.x * 256 + threadIdx.x with 128 threads a block skips half the elements: not the global index
    model = parse_text(_src(name, launch_block=128), "cuda", "k.cu")
    r = registry.propose("cuda.vectorize_float4", model, model.kernels[0])
    assert isinstance(r, NotApplicable) and "not an elementwise kernel" in r.reason


PARTIAL = """#define BLOCK 256
__global__ void partial_sum(const float* x, float* partial, int n) {
    __shared__ float buf[BLOCK];
    int tid = threadIdx.x;
    int i = blockIdx.x * BLOCK + tid;
    buf[tid] = (i < n) ? x[i] : 0.0f;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) buf[tid] += buf[tid + s];
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = buf[0];
}
void run(const float* x, float* partial, int n) { partial_sum<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(x, partial, n); }
"""


@pytest.mark.parametrize("step", ["cuda.vectorize_float4", "cuda.block_size", "cuda.grid_size"])
def test_a_per_block_result_keeps_its_contract(step: str) -> None:
    model = parse_text(PARTIAL, "cuda", "k.cu")
    r = registry.propose(step, model, model.kernels[0])
    assert isinstance(r, NotApplicable), step


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_kernels_are_valid_cuda(tmp_path: Path) -> None:
    for i, name in enumerate(sorted(SPELLINGS)):
        for place in "/%":
            assert_compiles(_src(name, place), tmp=tmp_path, name=f"k{i}{'d' if place == '/' else 'm'}.cu")
    assert_compiles(PARTIAL, tmp=tmp_path, name="partial.cu")
