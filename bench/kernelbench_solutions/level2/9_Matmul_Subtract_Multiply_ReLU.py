"""KernelBench level 2, problem 9_Matmul_Subtract_Multiply_ReLU: Linear, subtract, multiply, ReLU.

Naive Triton start solution.

Written as a user's first version: cuBLAS's linear layer, then one Triton kernel for the subtract, multiply
and ReLU; one element per program instance slot, 128-element blocks, default launch settings, the intermediate
read back from global memory. The reference (class Model) is the KernelBench problem file, supplied at run
time.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_subtract_multiply_relu_epilogue_kernel(x_ptr, y_ptr, sub, mul, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.maximum((x - sub) * mul, 0.0)
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, subtract_value, multiply_value):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.subtract_value = subtract_value
        self.multiply_value = multiply_value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x).contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        BLOCK_SIZE = 128
        grid = (triton.cdiv(n, BLOCK_SIZE),)
        matmul_subtract_multiply_relu_epilogue_kernel[grid](x, y, self.subtract_value, self.multiply_value, n, BLOCK_SIZE=BLOCK_SIZE)
        return y
