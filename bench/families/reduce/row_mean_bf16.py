"""Mean of each row of a bf16 matrix (a segmented reduction over equal segments), fp32 accumulation:
each program owns BLOCK_R rows and walks across them in BLOCK_C column chunks. The __main__ block checks
it against torch."""
import torch
import triton
import triton.language as tl


@triton.jit
def row_mean_kernel(x_ptr, out_ptr, n_rows, n_cols, stride, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_R + tl.arange(0, BLOCK_R)
    acc = tl.zeros([BLOCK_R, BLOCK_C], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_C):
        cols = start + tl.arange(0, BLOCK_C)
        mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
        acc += tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + rows, tl.sum(acc, axis=1) / n_cols, mask=rows < n_rows)


def row_mean(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty(rows, device=x.device, dtype=torch.float32)
    block_r = 4
    row_mean_kernel[(triton.cdiv(rows, block_r),)](x, out, rows, cols, x.stride(0), BLOCK_R=block_r,
                                                   BLOCK_C=128, num_warps=4)
    return out


if __name__ == "__main__":
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    for shape in ((5, 1000), (64, 777)):
        x = torch.randn(*shape, device=dev).to(torch.bfloat16)
        torch.testing.assert_close(row_mean(x), x.float().mean(dim=1), atol=1e-3, rtol=1e-3)
    print("row_mean: ok")
