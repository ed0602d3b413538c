"""``cuda.block_size`` with a grid that reads the block variable: ``(N + block.x - 1) / block.x`` follows it."""

from __future__ import annotations

from htam_core.source import parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

_SRC = """__global__ void scale(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
void launch(const float* x, float* y, int N) {
  dim3 block(256);
  dim3 grid(%s);
  scale<<<grid, block>>>(x, y, N);
}
"""


def _propose(grid: str):
    model = parse_text(_SRC % grid, "cuda")
    return registry.propose("cuda.block_size", model, model.kernel("scale"))


def test_a_grid_reading_block_x_is_retuned_with_only_the_block_changed():
    res = _propose("(N + block.x - 1) / block.x")
    assert not isinstance(res, NotApplicable), res.reason
    c = next(c for c in res if c.params["block"] == [128])
    assert "dim3 block(128);" in c.new_text
    assert "dim3 grid((N + block.x - 1) / block.x);" in c.new_text


def test_a_grid_reading_block_y_does_not_follow_x():
    res = _propose("(N + block.y - 1) / block.y")
    assert isinstance(res, NotApplicable)
    assert "does not follow the block size along x" in res.reason


def test_a_grid_mixing_block_x_with_the_size_literal_is_refused():
    res = _propose("(N + 255) / block.x")
    assert isinstance(res, NotApplicable)
    assert "mixes block.x" in res.reason
