"""``htam verify EXPERT --against NAIVE`` where the expert launches its kernel in its own ``main()`` with another
mapping (one warp per row: 32 times the blocks of the naive's thread per row): the expert runs on its own launch
(:func:`htam_core.harness.relaunch.relaunch`), the naive on the one inferred from its ``main()``, both on the same
inputs; parameter names may differ. An expert whose ``main()`` launches on other sizes keeps the naive's launch,
and the verdict says which launch the expert runs on. Read on the CPU from the harness objects (nothing runs).

The kernels are written here for these tests.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htam_core.harness.relaunch import relaunch, relaunched
from htam_core.verify.check import resolve_harness, verify_candidate

NAIVE_KERNEL = """#pragma once
#include <cuda_runtime.h>
namespace ops {
template <typename T>
__global__ void rowsum(const T* m, T* out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        T s = 0;
        for (int c = 0; c < cols; ++c) s += m[r * cols + c];
        out[r] = s;
    }
}
}
"""
NAIVE_MAIN = """#include "rowsum_kernels.cuh"
int main() {
    int rows = 2048, cols = 1000;
    float *m, *o;
    cudaMalloc(&m, sizeof(float) * rows * cols);
    cudaMalloc(&o, sizeof(float) * rows);
    ops::rowsum<float><<<(rows + 127) / 128, 128>>>(m, o, rows, cols);
    cudaDeviceSynchronize();
    return 0;
}
"""
EXPERT = """#include <cuda_runtime.h>
namespace ops {
template <typename T>
__global__ void rowsum(const T* __restrict__ M, T* __restrict__ RES, int NR, int NC) {
    int lane = threadIdx.x & 31;
    int r = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    if (r >= NR) return;
    T s = 0;
    for (int c = lane; c < NC; c += 32) s += M[r * NC + c];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if (lane == 0) RES[r] = s;
}
}

int main() {
    int rows = ROWS, cols = 1000;
    float *m, *o;
    cudaMalloc(&m, sizeof(float) * rows * cols);
    cudaMalloc(&o, sizeof(float) * rows);
    ops::rowsum<float><<<(rows * 32 + 127) / 128, 128>>>(m, o, rows, cols);
    cudaDeviceSynchronize();
    return 0;
}
"""


def _files(tmp_path: Path, rows: int = 2048, names: bool = False) -> tuple[Path, Path]:
    (tmp_path / "rowsum_kernels.cuh").write_text(NAIVE_KERNEL)
    naive = tmp_path / "naive.cu"
    naive.write_text(NAIVE_MAIN)
    expert = tmp_path / "expert.cu"
    text = EXPERT.replace("ROWS", str(rows))
    if not names:  # the naive's parameter names
        for a, b in (("RES", "out"), ("NR", "rows"), ("NC", "cols"), ("M[", "m["), ("T* __restrict__ M", "T* m")):
            text = text.replace(a, b)
    expert.write_text(text)
    return naive, expert


@pytest.mark.parametrize("names", [False, True], ids=["same_names", "other_names"])
def test_the_expert_runs_on_its_own_launch(tmp_path: Path, names: bool) -> None:
    naive, expert = _files(tmp_path, names=names)
    h = resolve_harness(expert, against=naive)
    assert (h.grid, h.block) == ("(16, 1, 1)", "(128, 1, 1)")  # the naive's launch: the oracle runs on it
    moved, note = relaunch(h)
    assert (moved.grid, moved.block) == ("(512, 1, 1)", "(128, 1, 1)")  # 2048 rows, a warp each
    assert moved.inputs == h.inputs and moved.args == h.args  # the same inputs, passed by position
    assert "the candidate runs on its own launch (main() of expert.cu): grid (512, 1, 1)" in note
    assert "the starting kernel on its own: grid (16, 1, 1)" in note


def test_an_expert_launched_on_other_sizes_keeps_the_starting_launch(tmp_path: Path) -> None:
    # its grid was computed for 1024 rows: it would leave half the naive's 2048 rows unwritten
    naive, expert = _files(tmp_path, rows=1024)
    h = resolve_harness(expert, against=naive)
    moved, note = relaunch(h)
    assert (moved.grid, moved.block) == (h.grid, h.block)
    assert "main() launches rowsum on other inputs" in note and "starting kernel's launch" in note


def test_the_starting_kernel_itself_keeps_its_launch(tmp_path: Path) -> None:
    naive, _ = _files(tmp_path)
    h = resolve_harness(tmp_path / "rowsum_kernels.cuh", against=naive)
    assert relaunch(h) == (h, "") and relaunched(h) is h


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the compile-only check)")
def test_the_verdict_says_which_launch_the_expert_runs_on(tmp_path: Path) -> None:
    naive, expert = _files(tmp_path, names=True)
    v = verify_candidate(expert, resolve_harness(expert, against=naive), timeout_s=300)
    assert any(m.startswith("the candidate runs on its own launch (main() of expert.cu): grid (512, 1, 1)")
               for m in v.messages), v.messages
