"""The inferred harness of CSR kernels whose lanes share a row (a warp or a block per row, the bounds inline or in
locals, 32- or 64-bit offsets): the row pointer is an offsets array from 0 to the number of nonzeros and the column
indices lie inside ``x``; the input set drawn from it on the CPU keeps every row's range inside the nonzeros."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.harness.base import Harness, InputSpec
from htam_core.harness.infer_cuda import infer_cuda_harness

MAIN = """
int main() {{
  const int m = {rows}, nnz = {nnz}, ncols = {ncols}, threads = 128;
  {itype} *rp; int *ci; float *vals, *x, *y;
  cudaMalloc(&rp, (m + 1) * sizeof({itype})); cudaMalloc(&ci, (size_t)nnz * sizeof(int));
  cudaMalloc(&vals, (size_t)nnz * sizeof(float)); cudaMalloc(&x, ncols * sizeof(float));
  cudaMalloc(&y, m * sizeof(float));
  spmv<<<{grid}, threads>>>(rp, ci, vals, x, y, m);
  return 0;
}}
"""

KERNELS = {  # (kernel, grid of the launch)
    "warp_locals": ("__global__ void spmv(const {itype} *__restrict__ rp, const int *__restrict__ ci, const float *vals,"
                    " const float *x, float *y, int m) {{\n"
                    "  int row = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;\n  int lane = threadIdx.x & 31;\n"
                    "  if (row >= m) return;\n  {itype} start = rp[row], end = rp[row + 1];\n  float s = 0.0f;\n"
                    "  for ({itype} j = start + lane; j < end; j += 32) s += vals[j] * __ldg(&x[ci[j]]);\n"
                    "  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);\n"
                    "  if (lane == 0) y[row] = s;\n}}\n", "(int)(((long long)m * 32 + threads - 1) / threads)"),
    "warp_inline": ("__global__ void spmv(const {itype} *rp, const int *ci, const float *vals, const float *x, float *y,"
                    " int m) {{\n  const int w = (threadIdx.x + blockIdx.x * blockDim.x) / warpSize;\n"
                    "  const int lane = threadIdx.x % warpSize;\n  if (w < m) {{\n    float s = 0.0f;\n"
                    "    for ({itype} j = rp[w] + lane; j < rp[w + 1]; j += warpSize) s += vals[j] * x[ci[j]];\n"
                    "    s += __shfl_xor_sync(0xffffffffu, s, 16);\n    if (lane == 0) y[w] = s;\n  }}\n}}\n",
                    "(m * 32 + threads - 1) / threads"),
    "block_row": ("__global__ void spmv(const {itype} *rp, const int *ci, const float *vals, const float *x, float *y,"
                  " int m) {{\n  const int row = blockIdx.x;\n  const {itype} b = rp[row];\n"
                  "  const {itype} e = rp[row + 1];\n  float s = 0.0f;\n"
                  "  for ({itype} j = b + threadIdx.x; j < e; j += blockDim.x) s += vals[j] * x[ci[j]];\n"
                  "  atomicAdd(&y[row], s);\n}}\n", "m"),
}


def _spec(h: Harness, name: str) -> InputSpec:
    return next(i for i in h.inputs if i.name == name)


def _infer(tmp_path: Path, which: str, itype: str, rows: int, nnz: int, ncols: int) -> Harness:
    kernel, grid = KERNELS[which]
    p = tmp_path / f"{which}.cu"
    p.write_text(kernel.format(itype=itype) + MAIN.format(rows=rows, nnz=nnz, ncols=ncols, itype=itype, grid=grid))
    return infer_cuda_harness(p, "spmv")


@pytest.mark.parametrize("which", sorted(KERNELS))
@pytest.mark.parametrize("itype,dtype", [("int", "int32"), ("long long", "int64")])
@pytest.mark.parametrize("rows,nnz,ncols", [(300, 2100, 170), (40, 33, 64)])
def test_the_row_pointer_of_a_lane_shared_row_is_an_offsets_array(tmp_path, which, itype, dtype, rows, nnz, ncols):
    h = _infer(tmp_path, which, itype, rows, nnz, ncols)
    rp = _spec(h, "rp")
    assert (rp.init, rp.dtype, rp.shape, rp.low, rp.high) == ("offsets", dtype, [rows + 1], 0, nnz)
    assert any(n.startswith("`rp` is an offsets array") for n in h.notes), h.notes
    ci = _spec(h, "ci")
    assert (ci.init, ci.low, ci.high) == ("randint", 0, ncols)


@pytest.mark.parametrize("which", sorted(KERNELS))
def test_the_drawn_inputs_keep_every_row_inside_the_nonzeros(tmp_path, which):
    torch = pytest.importorskip("torch")
    from htam_core.harness.runner import _make_spec_inputs

    rows, nnz, ncols = 50, 400, 37
    h = _infer(tmp_path, which, "long long", rows, nnz, ncols)
    for seed in (0, 1):
        got = dict(zip((i.name for i in h.inputs), _make_spec_inputs(h, (h.sizes or [{}])[0], seed, 1.0, "cpu"), strict=True))
        rp, ci, vals = got["rp"], got["ci"], got["vals"]
        assert int(rp[0]) == 0 and int(rp[-1]) == vals.numel() == nnz
        assert bool((rp[1:] >= rp[:-1]).all())
        assert int(ci.min()) >= 0 and int(ci.max()) < got["x"].numel() == ncols
        # the scalar row loop of the kernel, on the CPU: every position it reads lies inside the nonzeros
        y = torch.stack([(vals[rp[r]:rp[r + 1]] * got["x"][ci[rp[r]:rp[r + 1]].long()]).sum() for r in range(rows)])
        assert y.shape == (rows,) and bool(torch.isfinite(y).all())
