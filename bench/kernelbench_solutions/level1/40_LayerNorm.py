"""KernelBench level 1, problem 40_LayerNorm: nn.LayerNorm over the last three dimensions, naive Triton start.

Written as a user's first version: one program per sample walks all normalized elements three times (mean,
variance, output) in 1024-element chunks; elementwise affine weight and bias as in nn.LayerNorm (ones and
zeros at construction). The reference (class Model) is supplied at run time.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * n
    y_row = y_ptr + row * n
    acc = tl.zeros((BLOCK_SIZE,), tl.float32)
    for start in range(0, n, BLOCK_SIZE):
        offs = start + tl.arange(0, BLOCK_SIZE)
        acc += tl.load(x_row + offs, mask=offs < n, other=0.0)
    mean = tl.sum(acc, axis=0) / n
    acc2 = tl.zeros((BLOCK_SIZE,), tl.float32)
    for start in range(0, n, BLOCK_SIZE):
        offs = start + tl.arange(0, BLOCK_SIZE)
        mask = offs < n
        d = tl.where(mask, tl.load(x_row + offs, mask=mask, other=0.0) - mean, 0.0)
        acc2 += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc2, axis=0) / n + eps)
    for start in range(0, n, BLOCK_SIZE):
        offs = start + tl.arange(0, BLOCK_SIZE)
        mask = offs < n
        x = tl.load(x_row + offs, mask=mask, other=0.0)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0)
        b = tl.load(b_ptr + offs, mask=mask, other=0.0)
        tl.store(y_row + offs, (x - mean) * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.normalized_shape = tuple(normalized_shape)
        self.weight = nn.Parameter(torch.ones(self.normalized_shape))
        self.bias = nn.Parameter(torch.zeros(self.normalized_shape))
        self.eps = 1e-5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n = math.prod(self.normalized_shape)
        rows = x.numel() // n
        y = torch.empty_like(x)
        BLOCK_SIZE = 1024
        layernorm_kernel[(rows,)](x, self.weight, self.bias, y, n, self.eps, BLOCK_SIZE=BLOCK_SIZE)
        return y
