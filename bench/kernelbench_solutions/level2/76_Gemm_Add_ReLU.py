"""KernelBench level 2, problem 76_Gemm_Add_ReLU: Linear without bias, bias add, ReLU.

Naive Triton start solution.

Written as a user's first version: cuBLAS's matrix product, then one Triton kernel for the per-column bias and
ReLU; one element per program instance slot, 128-element blocks, default launch settings, the intermediate
read back from global memory. The reference (class Model) is the KernelBench problem file, supplied at run
time.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gemm_add_relu_epilogue_kernel(x_ptr, y_ptr, b_ptr, n_cols, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    c = offs % n_cols
    b = tl.load(b_ptr + c, mask=mask)
    y = tl.maximum(x + b, 0.0)
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.gemm(x).contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        n_cols = x.shape[-1]
        BLOCK_SIZE = 128
        grid = (triton.cdiv(n, BLOCK_SIZE),)
        gemm_add_relu_epilogue_kernel[grid](x, y, self.bias, n_cols, n, BLOCK_SIZE=BLOCK_SIZE)
        return y
