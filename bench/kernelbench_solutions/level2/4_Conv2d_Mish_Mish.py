"""KernelBench level 2, problem 4_Conv2d_Mish_Mish: Conv2d, Mish, Mish.

Naive Triton start solution.

Written as a user's first version: cuDNN's convolution, then one Triton kernel for both Mish; one element per
program instance slot, 128-element blocks, default launch settings, the intermediate read back from global
memory. The reference (class Model) is the KernelBench problem file, supplied at run time.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv2d_mish_mish_epilogue_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    sp = tl.where(x > 20.0, x, tl.log(1.0 + tl.exp(x)))
    m = x * (2.0 / (1.0 + tl.exp(-2.0 * sp)) - 1.0)
    sp2 = tl.where(m > 20.0, m, tl.log(1.0 + tl.exp(m)))
    y = m * (2.0 / (1.0 + tl.exp(-2.0 * sp2)) - 1.0)
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x).contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        BLOCK_SIZE = 128
        grid = (triton.cdiv(n, BLOCK_SIZE),)
        conv2d_mish_mish_epilogue_kernel[grid](x, y, n, BLOCK_SIZE=BLOCK_SIZE)
        return y
