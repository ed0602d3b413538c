"""KernelBench level 2, problem 53_Gemm_Scaling_Hardtanh_GELU: Linear, scaling, Hardtanh, GELU.

Naive Triton start solution.

Written as a user's first version: cuBLAS's linear layer, then one Triton kernel for the scaling, Hardtanh and
exact GELU; one element per program instance slot, 128-element blocks, default launch settings, the
intermediate read back from global memory. The reference (class Model) is the KernelBench problem file,
supplied at run time.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gemm_scaling_hardtanh_gelu_epilogue_kernel(x_ptr, y_ptr, scale, lo, hi, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    v = tl.minimum(tl.maximum(x * scale, lo), hi)
    y = 0.5 * v * (1.0 + tl.erf(v * 0.7071067811865476))
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scaling_factor, hardtanh_min, hardtanh_max):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor
        self.hardtanh_min = hardtanh_min
        self.hardtanh_max = hardtanh_max

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.gemm(x).contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        BLOCK_SIZE = 128
        grid = (triton.cdiv(n, BLOCK_SIZE),)
        gemm_scaling_hardtanh_gelu_epilogue_kernel[grid](x, y, self.scaling_factor, float(self.hardtanh_min), float(self.hardtanh_max), n, BLOCK_SIZE=BLOCK_SIZE)
        return y
