"""KernelBench level 1, problem 47_Sum_reduction_over_a_dimension: sum over dimension 1 of a 3-D tensor, naive Triton start.

Written as a user's first version for the problem's layout (batch, reduced, inner) with dim = 1: one program per
(batch, 32 inner columns), walking the reduced dimension one row at a time. The reference (class Model) is
supplied at run time.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_dim1_kernel(x_ptr, y_ptr, n_red, n_inner, BLOCK_J: tl.constexpr):
    b = tl.program_id(0)
    pj = tl.program_id(1)
    cols = pj * BLOCK_J + tl.arange(0, BLOCK_J)
    mask = cols < n_inner
    base = x_ptr + b * n_red * n_inner
    acc = tl.zeros((BLOCK_J,), tl.float32)
    for i in range(0, n_red):
        x = tl.load(base + i * n_inner + cols, mask=mask, other=0.0)
        acc += x
    tl.store(y_ptr + b * n_inner + cols, acc, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert x.dim() == 3 and self.dim == 1, "this kernel handles the problem's case: 3-D input, dim = 1"
        x = x.contiguous()
        b, n_red, n_inner = x.shape
        y = torch.empty((b, 1, n_inner), device=x.device, dtype=x.dtype)
        BLOCK_J = 32
        grid = (b, triton.cdiv(n_inner, BLOCK_J))
        sum_dim1_kernel[grid](x, y, n_red, n_inner, BLOCK_J=BLOCK_J)
        return y
