"""Row layernorm, one row per program, bf16 input with fp32 statistics, loops over column tiles."""
import torch
import triton
import triton.language as tl


@triton.jit
def layernorm_fwd(x_ptr, w_ptr, b_ptr, y_ptr, stride_x, stride_y, n_cols, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    x_ptr += row * stride_x
    y_ptr += row * stride_y
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK_N):
        c = off + tl.arange(0, BLOCK_N)
        acc += tl.load(x_ptr + c, mask=c < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    acc2 = tl.zeros([BLOCK_N], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK_N):
        c = off + tl.arange(0, BLOCK_N)
        v = tl.load(x_ptr + c, mask=c < n_cols, other=0.0).to(tl.float32)
        d = tl.where(c < n_cols, v - mean, 0.0)
        acc2 += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc2, axis=0) / n_cols + eps)
    for off in range(0, n_cols, BLOCK_N):
        c = off + tl.arange(0, BLOCK_N)
        m = c < n_cols
        v = tl.load(x_ptr + c, mask=m, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c, mask=m).to(tl.float32)
        b = tl.load(b_ptr + c, mask=m).to(tl.float32)
        tl.store(y_ptr + c, ((v - mean) * rstd * w + b).to(tl.bfloat16), mask=m)


def layernorm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    layernorm_fwd[(M,)](x, w, b, y, x.stride(0), y.stride(0), N, eps, BLOCK_N=256)
    return y


if __name__ == "__main__":
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    for M, N in [(4, 200), (9, 777), (16, 1024)]:
        x = torch.randn(M, N, device=device, dtype=torch.bfloat16)
        w = torch.randn(N, device=device, dtype=torch.bfloat16)
        b = torch.randn(N, device=device, dtype=torch.bfloat16)
        ref = torch.nn.functional.layer_norm(x.float(), (N,), w.float(), b.float(), 1e-5).to(torch.bfloat16)
        torch.testing.assert_close(layernorm(x, w, b), ref, rtol=2e-2, atol=2e-2)
    print("ok")
