"""KernelBench level 2, problem 87_Conv2d_Subtract_Subtract_Mish: Conv2d, two subtracts, Mish.

Naive Triton start solution.

Written as a user's first version: cuDNN's convolution, then one Triton kernel for both subtractions and Mish;
one element per program instance slot, 128-element blocks, default launch settings, the intermediate read back
from global memory. The reference (class Model) is the KernelBench problem file, supplied at run time.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv2d_subtract_subtract_mish_epilogue_kernel(x_ptr, y_ptr, s1, s2, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    v = x - s1 - s2
    sp = tl.where(v > 20.0, v, tl.log(1.0 + tl.exp(v)))
    y = v * (2.0 / (1.0 + tl.exp(-2.0 * sp)) - 1.0)
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, subtract_value_1, subtract_value_2):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.subtract_value_1 = subtract_value_1
        self.subtract_value_2 = subtract_value_2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x).contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        BLOCK_SIZE = 128
        grid = (triton.cdiv(n, BLOCK_SIZE),)
        conv2d_subtract_subtract_mish_epilogue_kernel[grid](x, y, self.subtract_value_1, self.subtract_value_2, n, BLOCK_SIZE=BLOCK_SIZE)
        return y
