"""y = A @ x for a bf16 matrix A (M x K) and bf16 vector x, fp32 accumulation: BLOCK_M rows per program,
walking K in BLOCK_K chunks."""
import torch
import triton
import triton.language as tl


@triton.jit
def gemv_kernel(a_ptr, x_ptr, y_ptr, M, K, stride_am, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    acc = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rows[:, None] * stride_am + ks[None, :], mask=(rows[:, None] < M) & (ks[None, :] < K),
                    other=0.0)
        x = tl.load(x_ptr + ks, mask=ks < K, other=0.0)
        acc += tl.sum(a.to(tl.float32) * x[None, :].to(tl.float32), axis=1)
    tl.store(y_ptr + rows, acc.to(tl.bfloat16), mask=rows < M)


def gemv(a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    y = torch.empty(M, device=a.device, dtype=torch.bfloat16)
    block_m = 16
    gemv_kernel[(triton.cdiv(M, block_m),)](a, x, y, M, K, a.stride(0), BLOCK_M=block_m, BLOCK_K=128)
    return y
