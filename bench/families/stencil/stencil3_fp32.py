"""Three-point stencil y[i] = a*x[i-1] + b*x[i] + c*x[i+1] on an fp32 vector (zero outside), three shifted
masked loads per block."""
import torch
import triton
import triton.language as tl


@triton.jit
def stencil3_kernel(x_ptr, y_ptr, n, a, b, c, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    left = tl.load(x_ptr + offs - 1, mask=(offs >= 1) & (offs - 1 < n), other=0.0)
    mid = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    right = tl.load(x_ptr + offs + 1, mask=offs + 1 < n, other=0.0)
    tl.store(y_ptr + offs, a * left + b * mid + c * right, mask=offs < n)


def stencil3(x: torch.Tensor, a: float = 0.25, b: float = 0.5, c: float = 0.25) -> torch.Tensor:
    y = torch.empty_like(x)
    n = x.numel()
    stencil3_kernel[(triton.cdiv(n, 256),)](x, y, n, a, b, c, BLOCK_SIZE=256)
    return y
