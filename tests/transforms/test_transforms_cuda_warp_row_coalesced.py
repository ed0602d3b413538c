"""``cuda.warp_per_row`` is not offered on a kernel whose thread index already takes neighbouring elements and
whose loop reduces nothing; a thread-per-row kernel still gets it.

Regression from the public-corpus hand check: a planar-to-interleaved conversion (thread per pixel, a loop over
the images of a batch) was offered "one warp per row", which moves the lanes onto the batch loop (strided) and
launches 32x the blocks. Kernels written here, in that shape.
"""

from __future__ import annotations

from htam_core.source import parse_text
from htam_core.transforms.base import NotApplicable
from htam_core.transforms.registry import propose

PIXELS = r"""
__global__ void planes_to_bytes(const float *planes, unsigned char *out, int pixels, int images) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= pixels) return;
  int stride = pixels * 3;
  for (int b = 0; b < images; b++) {
    out[b * stride + p * 3 + 0] = (unsigned char)planes[b * stride + p];
    out[b * stride + p * 3 + 1] = (unsigned char)planes[b * stride + pixels + p];
    out[b * stride + p * 3 + 2] = (unsigned char)planes[b * stride + 2 * pixels + p];
  }
}
void run_planes(const float *planes, unsigned char *out, int pixels, int images) {
  planes_to_bytes<<<(pixels + 255) / 256, 256>>>(planes, out, pixels, images);
}
"""

ROWS = r"""
__global__ void row_scale(const float *x, float *y, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  for (int c = 0; c < cols; c++) y[r * cols + c] = 2.0f * x[r * cols + c];
}
void run_rows(const float *x, float *y, int rows, int cols) {
  row_scale<<<(rows + 255) / 256, 256>>>(x, y, rows, cols);
}
"""


def _propose(src: str):
    model = parse_text(src, "cuda")
    return propose("cuda.warp_per_row", model, model.kernels[0])


def test_lanes_on_neighbouring_pixels_keep_their_mapping() -> None:
    res = _propose(PIXELS)
    assert isinstance(res, NotApplicable)
    assert "do not walk a row owned by one thread" in res.reason


def test_a_thread_per_row_loop_still_gets_a_warp() -> None:
    res = _propose(ROWS)
    assert isinstance(res, list) and res
    assert "c += 32" in res[0].new_text
