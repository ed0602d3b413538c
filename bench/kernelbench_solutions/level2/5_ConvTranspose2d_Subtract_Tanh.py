"""KernelBench level 2, problem 5_ConvTranspose2d_Subtract_Tanh: ConvTranspose2d, bias subtract, tanh.

Naive Triton start solution.

Written as a user's first version: cuDNN's transposed convolution, then one Triton kernel for the (C, 1, 1)
subtract and tanh; one element per program instance slot, 128-element blocks, default launch settings, the
intermediate read back from global memory. The reference (class Model) is the KernelBench problem file,
supplied at run time.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def convtranspose2d_subtract_tanh_epilogue_kernel(x_ptr, y_ptr, b_ptr, hw, channels, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    c = (offs // hw) % channels
    b = tl.load(b_ptr + c, mask=mask)
    v = x - b
    y = 2.0 / (1.0 + tl.exp(-2.0 * v)) - 1.0
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape, stride=2, padding=1, output_padding=1):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding, output_padding=output_padding)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv_transpose(x).contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        hw = x[0, 0].numel()
        channels = x.shape[1]
        BLOCK_SIZE = 128
        grid = (triton.cdiv(n, BLOCK_SIZE),)
        convtranspose2d_subtract_tanh_epilogue_kernel[grid](x, y, self.bias, hw, channels, n, BLOCK_SIZE=BLOCK_SIZE)
        return y
