"""Host code in the style of NVIDIA's samples: pointers declared ``NULL`` and allocated through ``err =
cudaMalloc(...)`` with the error checked after each call (htam_core.harness.cu_eval, read by infer_cuda)."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.harness.infer_cuda import infer_cuda_harness

PROGRAM = """#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void axpb(const float *x, float *y, float a, int n) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + 1.0f;
}

int main(void) {
  cudaError_t err = cudaSuccess;
  int n = 40000;
  size_t size = n * sizeof(float);
  float *d_x = INIT;
  err = cudaMalloc((void **)&d_x, size);
  if (err != cudaSuccess) {
    fprintf(stderr, "failed (%s)\\n", cudaGetErrorString(err));
    exit(EXIT_FAILURE);
  }
  float *d_y = INIT;
  err = cudaMalloc((void **)&d_y, size);
  if (err != cudaSuccess) {
    exit(EXIT_FAILURE);
  }
  int threadsPerBlock = 256;
  int blocksPerGrid = (n + threadsPerBlock - 1) / threadsPerBlock;
  axpb<<<blocksPerGrid, threadsPerBlock>>>(d_x, d_y, 2.0f, n);
  err = cudaGetLastError();
  return 0;
}
"""


@pytest.mark.parametrize("init", ["NULL", "nullptr", "0", "(float *)NULL"])
def test_null_pointers_allocated_by_an_assigned_cuda_malloc(tmp_path: Path, init: str) -> None:
    """Regression: ``float *d_x = NULL;`` read as "NULL is not a constant expression", and ``err = cudaMalloc(...)``
    allocated nothing, so the samples' main() gave no harness."""
    src = tmp_path / "axpb.cu"
    src.write_text(PROGRAM.replace("INIT", init))
    h = infer_cuda_harness(src, "axpb")
    assert (h.grid, h.block) == ("(157, 1, 1)", "(256, 1, 1)")  # ceil(40000 / 256)
    shapes = {i.name: i.shape for i in h.inputs}
    assert shapes["x"] == [40000] and shapes["y"] == [40000] and h.outputs == ["y"]
