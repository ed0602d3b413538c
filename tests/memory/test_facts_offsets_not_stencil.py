"""A loop from one loaded offset to the next (CSR SpMV's ``for (j = row_ptr[r]; j < row_ptr[r + 1]; ++j)``, a
segment's range) reads the offsets array at neighbouring elements, but those reads are loop bounds, not a stencil
window: the kernel is not ``stencil_like``, gets no stencil tile, and one warp per row is ranked. Reads of
neighbours whose values the kernel computes with stay a stencil, also beside an offsets loop."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.memory import load_knowledge
from htam_core.memory.facts import compute_facts
from htam_core.source.api import parse_text

KB = load_knowledge()
CSR = (Path(__file__).resolve().parents[1] / "fixtures" / "transforms" / "csr_rows.cu").read_text()


def _facts(text: str, kernel: str) -> dict:
    model = parse_text(text, "cuda")
    k = model.kernel(kernel)
    return compute_facts(k.features, k.language, None, kernel=k, model=model)


@pytest.mark.parametrize("kernel", ["csr_inline", "csr_locals", "segment_max", "segment_len_sum"])
def test_an_offsets_loop_is_not_a_stencil_and_keeps_warp_per_row(kernel):
    f = _facts(CSR, kernel)
    assert f["stencil_like"] is False and f["stencil_window"] is False
    assert KB.strategy("stencil_smem_tile").applies.evaluate(f) is False
    assert KB.strategy("warp_per_row").applies.evaluate(f) is True


def test_neighbours_computed_with_stay_a_stencil_beside_an_offsets_loop():
    f = _facts("""__global__ void k(const int *rp, const float *v, const float *in, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 1 || i >= n - 1) return;
  float s = in[i - 1] - 2.0f * in[i] + in[i + 1];
  for (int j = rp[i]; j < rp[i + 1]; ++j) s += v[j];
  out[i] = s;
}
void launch(const int *rp, const float *v, const float *in, float *out, int n) {
  k<<<(n + 255) / 256, 256>>>(rp, v, in, out, n);
}
""", "k")
    assert f["stencil_like"] is True and f["stencil_window"] is True


@pytest.mark.parametrize("kernel", ["csr_inline", "csr_locals", "segment_max", "segment_len_sum"])
def test_a_thread_per_row_offsets_loop_boosts_warp_per_row(kernel):
    f = _facts(CSR, kernel)
    assert f["offsets_row_loop"] is True and f["reduction_like"] is True
    wpr = KB.strategy("warp_per_row")
    assert any("offsets_row_loop" in s.when.text for s in wpr.signals if s.when.evaluate(f))


def test_a_block_per_row_offsets_loop_is_no_thread_row_loop():
    """A block per row whose threads split the row (``j = row_ptr[row] + threadIdx.x``) is coalesced already."""
    f = _facts("""__global__ void k(const int *rp, const float *v, float *out, int rows) {
  int row = blockIdx.x;
  float s = 0.f;
  for (int j = rp[row]; j < rp[row + 1]; ++j) s += v[j];
  if (threadIdx.x == 0) out[row] = s;
}
void launch(const int *rp, const float *v, float *out, int rows) { k<<<rows, 32>>>(rp, v, out, rows); }
""", "k")
    assert f["offsets_row_loop"] is False and f["stencil_like"] is False
