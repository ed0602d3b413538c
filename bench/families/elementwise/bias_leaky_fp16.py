"""y = leaky_relu(x + bias[None, :]) on an fp16 M x N matrix, tiled in 2-D with BLOCK_M x BLOCK_N programs."""
import torch
import triton
import triton.language as tl


@triton.jit
def bias_leaky_kernel(x_ptr, b_ptr, y_ptr, M, N, stride_xm, stride_ym, slope,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * stride_xm + rn[None, :], mask=mask, other=0.0)
    b = tl.load(b_ptr + rn, mask=rn < N, other=0.0)
    v = x.to(tl.float32) + b[None, :].to(tl.float32)
    v = tl.where(v > 0, v, v * slope)
    tl.store(y_ptr + rm[:, None] * stride_ym + rn[None, :], v.to(tl.float16), mask=mask)


def bias_leaky(x: torch.Tensor, bias: torch.Tensor, slope: float = 0.01) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    grid = (triton.cdiv(M, 16), triton.cdiv(N, 64))
    bias_leaky_kernel[grid](x, bias, y, M, N, x.stride(0), y.stride(0), slope, BLOCK_M=16, BLOCK_N=64)
    return y
