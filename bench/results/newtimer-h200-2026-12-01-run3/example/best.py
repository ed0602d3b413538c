"""Bundled example for `make demo`: c = a + b in Triton, first cut with a tiny tile.

Each program instance handles only 64 elements with 4 warps (128 threads), so half of the
threads are masked off and the grid is huge: a memory-bound kernel running far below the
copy bandwidth. `htam optimize examples/vector_add.py --kernel add_kernel` finds better steps.

Changed by HTAM since this text was written: BLOCK_SIZE 64 → 1024.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n_elements = out.numel()
    BLOCK_SIZE = 1024
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
    return out


if __name__ == "__main__":
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    for n in (1, 1000, 98_432):
        a = torch.rand(n, device=dev)
        b = torch.rand(n, device=dev)
        torch.testing.assert_close(add(a, b), a + b)
    print("add: ok")
