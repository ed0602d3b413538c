"""KernelBench level 1, problem 19_ReLU: ReLU, naive Triton start solution.

Written as a user's first version: one element per program instance slot, 128-element blocks, default
launch settings. The reference (class Model) is the KernelBench problem file, supplied at run time.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.maximum(x, 0.0)
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        BLOCK_SIZE = 128
        grid = (triton.cdiv(n, BLOCK_SIZE),)
        relu_kernel[grid](x, y, n, BLOCK_SIZE=BLOCK_SIZE)
        return y
