"""KernelBench level 1, problem 23_Softmax: softmax over dim 1 of a (batch, dim) tensor, naive Triton start.

Written as a user's first version: one program per row, three passes over the row in 1024-element chunks
(max, sum of exponentials, output). The reference (class Model) is supplied at run time.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_rows_kernel(x_ptr, y_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * n_cols
    y_row = y_ptr + row * n_cols
    m = tl.full((BLOCK_SIZE,), -float("inf"), tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + offs, mask=offs < n_cols, other=-float("inf"))
        m = tl.maximum(m, x)
    row_max = tl.max(m, axis=0)
    s = tl.zeros((BLOCK_SIZE,), tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + offs, mask=offs < n_cols, other=-float("inf"))
        s += tl.exp(x - row_max)
    denom = tl.sum(s, axis=0)
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + tl.arange(0, BLOCK_SIZE)
        mask = offs < n_cols
        x = tl.load(x_row + offs, mask=mask, other=-float("inf"))
        tl.store(y_row + offs, tl.exp(x - row_max) / denom, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, cols = x.shape
        BLOCK_SIZE = 1024
        softmax_rows_kernel[(rows,)](x, y, cols, BLOCK_SIZE=BLOCK_SIZE)
        return y
