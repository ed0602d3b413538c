"""KernelBench level 2, problem 63_Gemm_ReLU_Divide: Linear, ReLU, divide.

Naive Triton start solution.

Written as a user's first version: cuBLAS's linear layer, then one Triton kernel for ReLU and the division;
one element per program instance slot, 128-element blocks, default launch settings, the intermediate read back
from global memory. The reference (class Model) is the KernelBench problem file, supplied at run time.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gemm_relu_divide_epilogue_kernel(x_ptr, y_ptr, divisor, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.maximum(x, 0.0) / divisor
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, divisor):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.divisor = divisor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x).contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        BLOCK_SIZE = 128
        grid = (triton.cdiv(n, BLOCK_SIZE),)
        gemm_relu_divide_epilogue_kernel[grid](x, y, self.divisor, n, BLOCK_SIZE=BLOCK_SIZE)
        return y
