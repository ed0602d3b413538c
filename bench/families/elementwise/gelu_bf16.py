"""Exact (erf) GELU on bf16 tensors, fp32 math inside; the __main__ block checks it against torch."""
import torch
import triton
import triton.language as tl


@triton.jit
def gelu_bf16_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float32)
    y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y.to(tl.bfloat16), mask=m)


def gelu(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    n = x.numel()
    gelu_bf16_kernel[(triton.cdiv(n, 512),)](x, y, n, BLOCK=512, num_warps=2)
    return y


if __name__ == "__main__":
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    for n in (1000, 4099):
        x = torch.randn(n, device=dev).to(torch.bfloat16)
        torch.testing.assert_close(gelu(x), torch.nn.functional.gelu(x.float()).to(torch.bfloat16),
                                   atol=1e-2, rtol=1e-2)
    print("gelu_bf16: ok")
