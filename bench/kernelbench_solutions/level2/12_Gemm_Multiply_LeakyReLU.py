"""KernelBench level 2, problem 12_Gemm_Multiply_LeakyReLU: Linear, multiply, LeakyReLU.

Naive Triton start solution.

Written as a user's first version: cuBLAS's linear layer, then one Triton kernel for the multiply and
LeakyReLU; one element per program instance slot, 128-element blocks, default launch settings, the
intermediate read back from global memory. The reference (class Model) is the KernelBench problem file,
supplied at run time.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gemm_multiply_leakyrelu_epilogue_kernel(x_ptr, y_ptr, mult, slope, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    v = x * mult
    y = tl.where(v >= 0.0, v, v * slope)
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.gemm(x).contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        BLOCK_SIZE = 128
        grid = (triton.cdiv(n, BLOCK_SIZE),)
        gemm_multiply_leakyrelu_epilogue_kernel[grid](x, y, self.multiplier, self.negative_slope, n, BLOCK_SIZE=BLOCK_SIZE)
        return y
