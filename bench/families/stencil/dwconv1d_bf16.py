"""Depthwise 1-D convolution (width KW, 'valid' on the left via zero padding: causal) of bf16 (B, C, L)
data with an fp32 (C, KW) filter: one program per (batch*channel, block of positions), fp32 accumulation."""
import torch
import triton
import triton.language as tl


@triton.jit
def dwconv1d_kernel(x_ptr, w_ptr, y_ptr, C, L, KW: tl.constexpr, BLOCK_L: tl.constexpr):
    row = tl.program_id(0)
    pid_l = tl.program_id(1)
    c = row % C
    t = pid_l * BLOCK_L + tl.arange(0, BLOCK_L)
    acc = tl.zeros([BLOCK_L], dtype=tl.float32)
    for k in range(KW):
        src = t - (KW - 1) + k
        xv = tl.load(x_ptr + row * L + src, mask=(src >= 0) & (src < L), other=0.0).to(tl.float32)
        acc += tl.load(w_ptr + c * KW + k) * xv
    tl.store(y_ptr + row * L + t, acc.to(tl.bfloat16), mask=t < L)


def dwconv1d(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    B, C, L = x.shape
    y = torch.empty_like(x)
    grid = (B * C, triton.cdiv(L, 128))
    dwconv1d_kernel[grid](x, w, y, C, L, KW=w.shape[1], BLOCK_L=128, num_warps=4)
    return y
