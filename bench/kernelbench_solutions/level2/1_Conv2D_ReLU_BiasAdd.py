"""KernelBench level 2, problem 1_Conv2D_ReLU_BiasAdd: Conv2d, ReLU, per-channel bias add.

Naive Triton start solution.

Written as a user's first version: cuDNN's convolution, then one Triton kernel for ReLU and the (C, 1, 1)
bias; one element per program instance slot, 128-element blocks, default launch settings, the intermediate
read back from global memory. The reference (class Model) is the KernelBench problem file, supplied at run
time.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv2d_relu_biasadd_epilogue_kernel(x_ptr, y_ptr, b_ptr, hw, channels, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    c = (offs // hw) % channels
    b = tl.load(b_ptr + c, mask=mask)
    y = tl.maximum(x, 0.0) + b
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x).contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        hw = x[0, 0].numel()
        channels = x.shape[1]
        BLOCK_SIZE = 128
        grid = (triton.cdiv(n, BLOCK_SIZE),)
        conv2d_relu_biasadd_epilogue_kernel[grid](x, y, self.bias, hw, channels, n, BLOCK_SIZE=BLOCK_SIZE)
        return y
