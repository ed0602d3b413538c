"""RMSNorm backward (dx only) with the forward's rstd given: dx = rstd*w*dy - x*rstd^3*mean(w*dy*x).
One row per program, @triton.heuristics computes a constexpr tile count, loops with tl.static_range."""
import torch
import triton
import triton.language as tl


@triton.heuristics({"NUM_TILES": lambda args: triton.cdiv(args["N"], args["BLOCK_N"])})
@triton.jit
def rmsnorm_bwd_kernel(dy_ptr, x_ptr, w_ptr, rstd_ptr, dx_ptr, stride, N,
                       BLOCK_N: tl.constexpr, NUM_TILES: tl.constexpr):
    row = tl.program_id(0)
    rstd = tl.load(rstd_ptr + row)
    dot = tl.zeros([BLOCK_N], dtype=tl.float32)
    for t in tl.static_range(NUM_TILES):
        c = t * BLOCK_N + tl.arange(0, BLOCK_N)
        m = c < N
        dy = tl.load(dy_ptr + row * stride + c, mask=m, other=0.0)
        x = tl.load(x_ptr + row * stride + c, mask=m, other=0.0)
        w = tl.load(w_ptr + c, mask=m, other=0.0)
        dot += dy * w * x
    mean_dot = tl.sum(dot, axis=0) / N
    for t in tl.static_range(NUM_TILES):
        c = t * BLOCK_N + tl.arange(0, BLOCK_N)
        m = c < N
        dy = tl.load(dy_ptr + row * stride + c, mask=m, other=0.0)
        x = tl.load(x_ptr + row * stride + c, mask=m, other=0.0)
        w = tl.load(w_ptr + c, mask=m, other=0.0)
        dx = rstd * w * dy - x * (rstd * rstd * rstd) * mean_dot
        tl.store(dx_ptr + row * stride + c, dx, mask=m)


def rmsnorm_bwd(dy: torch.Tensor, x: torch.Tensor, w: torch.Tensor, rstd: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    dx = torch.empty_like(x)
    rmsnorm_bwd_kernel[(M,)](dy, x, w, rstd, dx, x.stride(0), N, BLOCK_N=128)
    return dx


def rmsnorm_bwd_ref(dy, x, w, rstd):
    mean_dot = (dy * w * x).mean(dim=1, keepdim=True)
    r = rstd[:, None]
    return r * w * dy - x * r ** 3 * mean_dot


if __name__ == "__main__":
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    for M, N in [(3, 128), (6, 333), (4, 1000)]:
        x = torch.randn(M, N, device=device)
        w = torch.randn(N, device=device)
        dy = torch.randn(M, N, device=device)
        rstd = torch.rsqrt(x.pow(2).mean(dim=1) + 1e-6)
        dx = rmsnorm_bwd(dy, x, w, rstd)
        xr = x.clone().requires_grad_(True)
        y = xr * torch.rsqrt(xr.pow(2).mean(dim=1, keepdim=True) + 1e-6) * w
        y.backward(dy)
        torch.testing.assert_close(dx, xr.grad, rtol=1e-4, atol=1e-4)
    print("ok")
