"""KernelBench level 2, problem 40_Matmul_Scaling_ResidualAdd: Linear, scaling, residual add.

Naive Triton start solution.

Written as a user's first version: cuBLAS's linear layer, then one Triton kernel for x * s + x; one element
per program instance slot, 128-element blocks, default launch settings, the intermediate read back from global
memory. The reference (class Model) is the KernelBench problem file, supplied at run time.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_scaling_residualadd_epilogue_kernel(x_ptr, y_ptr, scale, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    y = x * scale + x
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scaling_factor):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.matmul(x).contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        BLOCK_SIZE = 128
        grid = (triton.cdiv(n, BLOCK_SIZE),)
        matmul_scaling_residualadd_epilogue_kernel[grid](x, y, self.scaling_factor, n, BLOCK_SIZE=BLOCK_SIZE)
        return y
