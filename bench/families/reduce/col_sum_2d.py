"""Sum over the rows of an M x N fp32 matrix (bias gradient), each program owning BLOCK_N columns and
walking down the rows in BLOCK_M steps."""
import torch
import triton
import triton.language as tl


@triton.jit
def col_sum_kernel(x_ptr, out_ptr, M, N, stride_m, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for m0 in range(0, M, BLOCK_M):
        rows = m0 + tl.arange(0, BLOCK_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        acc += tl.load(x_ptr + rows[:, None] * stride_m + cols[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + cols, tl.sum(acc, axis=0), mask=cols < N)


def col_sum(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    out = torch.empty(N, device=x.device, dtype=torch.float32)
    block_n = 32
    col_sum_kernel[(triton.cdiv(N, block_n),)](x, out, M, N, x.stride(0), BLOCK_M=64, BLOCK_N=block_n,
                                               num_warps=2)
    return out
