"""``htam verify CAND --against START`` where START's kernel lives in a local header it includes: the candidate is
checked kernel against kernel, on the launch inferred from START's ``main()`` (the harness ``htam optimize`` runs on
the header), not refused because START's own harness is its ``main()`` run whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.harness.base import HarnessError
from htam_core.verify.check import resolve_harness

KERNEL = """#pragma once
__global__ void scale2(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.f * x[i];
}
"""
MAIN = """#include <cuda_runtime.h>
{include}
int main() {{
    const int n = 1 << 16;
    float *x, *y;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    scale2<<<(n + 255) / 256, 256>>>(x, y, n);
    cudaDeviceSynchronize();
    cudaFree(x);
    cudaFree(y);
    return 0;
}}
"""


def _pair(tmp_path: Path) -> tuple[Path, Path, Path]:
    (tmp_path / "scale.cuh").write_text(KERNEL)
    naive = tmp_path / "naive.cu"
    naive.write_text(MAIN.format(include='#include "scale.cuh"'))
    expert = tmp_path / "expert.cu"
    expert.write_text(MAIN.format(include=KERNEL.replace("#pragma once\n", "").replace("2.f * x[i]", "x[i] + x[i]")))
    return tmp_path / "scale.cuh", naive, expert


@pytest.mark.parametrize("kernel", ["scale2", None])
def test_against_a_main_whose_kernel_is_in_a_header_uses_the_headers_launch(tmp_path: Path, kernel) -> None:
    header, naive, expert = _pair(tmp_path)
    h = resolve_harness(expert, against=naive, kernel=kernel)
    assert h.kind == "inferred" and h.traits.launches
    assert Path(h.path) == expert.resolve() and Path(h.oracle_path) == header.resolve()
    assert h.kernel == "scale2" and h.block == "(256, 1, 1)"
    assert "oracle: the starting kernel scale.cuh (--against naive.cu)" in h.source


def test_against_the_header_itself_is_the_same_harness(tmp_path: Path) -> None:
    header, naive, expert = _pair(tmp_path)
    via_main = resolve_harness(expert, against=naive, kernel="scale2")
    direct = resolve_harness(expert, against=header, kernel="scale2")
    assert (direct.oracle_path, direct.grid, direct.block, direct.args) == (
        via_main.oracle_path, via_main.grid, via_main.block, via_main.args)


def test_against_a_main_with_no_kernel_anywhere_still_says_so(tmp_path: Path) -> None:
    _, naive, expert = _pair(tmp_path)
    naive.write_text(MAIN.format(include='#include "missing.cuh"'))
    with pytest.raises(HarnessError, match="kernel"):
        resolve_harness(expert, against=naive, kernel="scale2")
