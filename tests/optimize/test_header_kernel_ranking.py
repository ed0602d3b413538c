"""A kernel in a header, launched from the ``.cu`` file that includes it: the loop ranks each kernel version as read
at the header's place (where its launch is found), not at its copy under ``--out`` (where nothing launches it), so
a step that needs the launch (the 2-D stencil tile, sized by the launch's block) is ranked and tried first as
``htam suggest`` ranks it, instead of being left out of the search."""

from __future__ import annotations

from pathlib import Path

from htam_core.optimize import OptimizeTask, run_optimize

HEADER = """#pragma once
__global__ void box3(const float* in, float* out, int H, int W) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= W || y >= H) return;
    float acc = 0.f;
    for (int dy = 0; dy < 3; ++dy) {
        for (int dx = 0; dx < 3; ++dx) {
            int yy = y + dy - 1, xx = x + dx - 1;
            if (yy >= 0 && yy < H && xx >= 0 && xx < W) acc += in[yy * W + xx];
        }
    }
    out[y * W + x] = acc * (1.f / 9.f);
}
"""
MAIN = """#include <cuda_runtime.h>
#include "box3.cuh"
int main() {
    const int H = 256, W = 256;
    float *in, *out;
    cudaMalloc(&in, H * W * sizeof(float));
    cudaMalloc(&out, H * W * sizeof(float));
    box3<<<dim3(W / 16, H / 16), dim3(16, 16)>>>(in, out, H, W);
    cudaDeviceSynchronize();
    cudaFree(in);
    cudaFree(out);
    return 0;
}
"""


def test_a_header_kernels_stencil_tile_is_ranked_from_its_launch(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "box3.cuh").write_text(HEADER)
    (src / "main.cu").write_text(MAIN)
    res = run_optimize(OptimizeTask(path=str(src / "box3.cuh"), kernel="box3", engine="rules", budget=1, static=True,
                                    out_dir=str(tmp_path / "out"), memory_path=str(tmp_path / "mem.sqlite3")))
    assert [s.strategy for s in res.steps] == ["stencil_smem_tile"], [(s.strategy, s.status) for s in res.steps]
    assert "__shared__" in Path(res.steps[0].candidate_path).read_text()
