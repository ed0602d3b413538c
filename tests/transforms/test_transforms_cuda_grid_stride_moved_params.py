"""``cuda.grid_stride`` refuses a body that moves a parameter; a body that leaves them alone still gets the step.

Regression from the public-corpus hand check: a kernel that offsets its pointer parameters per thread
(``keys += base;``) was made a grid-stride loop, so a thread's second element started from the first one's
offset. Kernels written here, in that shape.
"""

from __future__ import annotations

from htam_core.source import parse_text
from htam_core.transforms.base import NotApplicable
from htam_core.transforms.registry import propose

MOVED = r"""
__global__ void rank_samples(unsigned *ranks, const unsigned *keys, unsigned width, unsigned count) {
  unsigned pos = blockIdx.x * blockDim.x + threadIdx.x;
  if (pos >= count) return;
  const unsigned lane = pos & (width - 1);
  const unsigned base = (pos - lane) * 2;
  keys += base;
  ranks += base / 2;
  ranks[lane] = keys[lane] + keys[lane + width];
}
void run_rank(unsigned *ranks, const unsigned *keys, unsigned width, unsigned count) {
  rank_samples<<<(count + 127) / 128, 128>>>(ranks, keys, width, count);
}
"""

KEPT = MOVED.replace("  keys += base;\n  ranks += base / 2;\n  ranks[lane] = keys[lane] + keys[lane + width];",
                     "  ranks[base / 2 + lane] = keys[base + lane] + keys[base + lane + width];")


def _propose(src: str):
    model = parse_text(src, "cuda")
    return propose("cuda.grid_stride", model, model.kernels[0])


def test_a_body_that_moves_a_parameter_is_refused() -> None:
    res = _propose(MOVED)
    assert isinstance(res, NotApplicable)
    assert "moves parameter" in res.reason and ("keys" in res.reason or "ranks" in res.reason)


def test_the_same_kernel_with_indices_gets_the_step() -> None:
    res = _propose(KEPT)
    assert isinstance(res, list) and res
    text = res[0].new_text
    assert "for (long long htam_gi = blockIdx.x * blockDim.x + threadIdx.x; htam_gi < count;" in text
    assert "unsigned pos = (unsigned)htam_gi;" in text
