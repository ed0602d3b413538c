"""KernelBench level 2, problem 54_Conv2d_Multiply_LeakyReLU_GELU: Conv2d, per-channel multiply, LeakyReLU, GELU.

Naive Triton start solution.

Written as a user's first version: cuDNN's convolution, then one Triton kernel for the (C, 1, 1) multiplier,
LeakyReLU(0.01) and exact GELU; one element per program instance slot, 128-element blocks, default launch
settings, the intermediate read back from global memory. The reference (class Model) is the KernelBench
problem file, supplied at run time.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv2d_multiply_leakyrelu_gelu_epilogue_kernel(x_ptr, y_ptr, m_ptr, hw, channels, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    c = (offs // hw) % channels
    m = tl.load(m_ptr + c, mask=mask)
    v = x * m
    v = tl.where(v >= 0.0, v, v * 0.01)
    y = 0.5 * v * (1.0 + tl.erf(v * 0.7071067811865476))
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, multiplier_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.multiplier = nn.Parameter(torch.randn(multiplier_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x).contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        hw = x[0, 0].numel()
        channels = x.shape[1]
        BLOCK_SIZE = 128
        grid = (triton.cdiv(n, BLOCK_SIZE),)
        conv2d_multiply_leakyrelu_gelu_epilogue_kernel[grid](x, y, self.multiplier, hw, channels, n, BLOCK_SIZE=BLOCK_SIZE)
        return y
