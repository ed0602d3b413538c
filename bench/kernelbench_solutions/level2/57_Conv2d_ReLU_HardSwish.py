"""KernelBench level 2, problem 57_Conv2d_ReLU_HardSwish: Conv2d, ReLU, HardSwish.

Naive Triton start solution.

Written as a user's first version: cuDNN's convolution, then one Triton kernel for ReLU and x * clamp((x + 3)
/ 6, 0, 1); one element per program instance slot, 128-element blocks, default launch settings, the
intermediate read back from global memory. The reference (class Model) is the KernelBench problem file,
supplied at run time.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv2d_relu_hardswish_epilogue_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    r = tl.maximum(x, 0.0)
    y = r * tl.minimum(tl.maximum((r + 3.0) / 6.0, 0.0), 1.0)
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
        conv2d_relu_hardswish_epilogue_kernel[grid](x, y, n, BLOCK_SIZE=BLOCK_SIZE)
        return y
