"""KernelBench level 2, problem 95_Matmul_Add_Swish_Tanh_GELU_Hardtanh: Linear, add, Swish, tanh, GELU, Hardtanh.

Naive Triton start solution.

Written as a user's first version: cuBLAS's linear layer, then one Triton kernel for the per-column add and
the four activations; one element per program instance slot, 128-element blocks, default launch settings, the
intermediate read back from global memory. The reference (class Model) is the KernelBench problem file,
supplied at run time.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_add_swish_tanh_gelu_hardtanh_epilogue_kernel(x_ptr, y_ptr, a_ptr, n_cols, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    c = offs % n_cols
    a = tl.load(a_ptr + c, mask=mask)
    v = x + a
    v = v * (1.0 / (1.0 + tl.exp(-v)))
    v = 2.0 / (1.0 + tl.exp(-2.0 * v)) - 1.0
    g = 0.5 * v * (1.0 + tl.erf(v * 0.7071067811865476))
    y = tl.minimum(tl.maximum(g, -1.0), 1.0)
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, add_value_shape):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.add_value = nn.Parameter(torch.randn(add_value_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.matmul(x).contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        n_cols = x.shape[-1]
        BLOCK_SIZE = 128
        grid = (triton.cdiv(n, BLOCK_SIZE),)
        matmul_add_swish_tanh_gelu_hardtanh_epilogue_kernel[grid](x, y, self.add_value, n_cols, n, BLOCK_SIZE=BLOCK_SIZE)
        return y
