"""Fused bias add + dropout with tl.rand (Philox on the global element index), 2-D grid
(row, column block) through program_id(1), mask as a 2-D broadcast, seed and p as scalars."""
import torch
import triton
import triton.language as tl


@triton.jit
def bias_dropout_kernel(x_ptr, bias_ptr, out_ptr, N, stride, p, seed, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    b = tl.load(bias_ptr + cols, mask=mask, other=0.0)
    r = tl.rand(seed, row * N + cols)
    keep = r > p
    y = tl.where(keep, (x + b) / (1.0 - p), 0.0)
    tl.store(out_ptr + row * stride + cols, y, mask=mask)


def bias_dropout(x: torch.Tensor, bias: torch.Tensor, p: float, seed: int) -> torch.Tensor:
    M, N = x.shape
    out = torch.empty_like(x)
    BLOCK = 128
    bias_dropout_kernel[(M, triton.cdiv(N, BLOCK))](x, bias, out, N, x.stride(0), p, seed, BLOCK=BLOCK)
    return out


if __name__ == "__main__":
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    for M, N in [(3, 100), (8, 513), (4, 2000)]:
        x = torch.randn(M, N, device=device)
        bias = torch.randn(N, device=device)
        out = bias_dropout(x, bias, 0.25, 1234)
        kept = out != 0
        ref = torch.where(kept, (x + bias) / 0.75, torch.zeros_like(x))
        torch.testing.assert_close(out, ref)
        assert 0.6 < kept.float().mean().item() < 0.9
        torch.testing.assert_close(bias_dropout(x, bias, 0.25, 1234), out)
    print("ok")
