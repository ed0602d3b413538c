"""Row softmax kernel, three passes over column tiles (max, sum, write). Launched from run_softmax.py."""
import triton
import triton.language as tl


@triton.jit
def softmax_loop_kernel(X, Y, stride_xm, stride_ym, N, TILE: tl.constexpr):
    row = tl.program_id(0)
    x_row = X + row * stride_xm
    y_row = Y + row * stride_ym
    m = -float("inf")
    for start in range(0, N, TILE):
        cols = start + tl.arange(0, TILE)
        v = tl.load(x_row + cols, mask=cols < N, other=-float("inf")).to(tl.float32)
        m = tl.maximum(m, tl.max(v, axis=0))
    s = 0.0
    for start in range(0, N, TILE):
        cols = start + tl.arange(0, TILE)
        v = tl.load(x_row + cols, mask=cols < N, other=-float("inf")).to(tl.float32)
        s += tl.sum(tl.math.exp(v - m), axis=0)
    for start in range(0, N, TILE):
        cols = start + tl.arange(0, TILE)
        v = tl.load(x_row + cols, mask=cols < N, other=-float("inf")).to(tl.float32)
        tl.store(y_row + cols, tl.math.exp(v - m) / s, mask=cols < N)
