"""An index read inside one row of a buffer (``row[idx[r]]`` with ``row = x + r * V``, ``x[r * V + idx[r]]``,
``(x + r * V)[t[r]]``) ranges over the row's length, not the whole buffer's: the whole buffer's range would make
every row but the first read past the end of ``x``. An index whose other terms cannot be bounded keeps the whole
buffer's range, and the harness says so in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.harness.base import Harness, InputSpec
from htam_core.harness.infer_cuda import harness_table, infer_cuda_harness

_MAIN = """
int main() {{
  const int B = {rows}, V = {cols};
  float *x, *out; int* idx;
  cudaMalloc(&x, (size_t)B * V * sizeof(float));
  cudaMalloc(&idx, B * sizeof(int));
  cudaMalloc(&out, B * sizeof(float));
  pick<<<(B + 127) / 128, 128>>>(x, idx, out, B, V);
  cudaDeviceSynchronize();
  return 0;
}}
"""

_HEAD = "__global__ void pick(const float* x, const int* idx, float* out, int B, int V) {\n" \
        "  int r = blockIdx.x * blockDim.x + threadIdx.x;\n  if (r >= B) return;\n"

_ROW_FORMS = {
    "alias": "  const float* row = x + (size_t)r * V;\n  out[r] = row[idx[r]];\n",
    "inline": "  out[r] = x[r * V + idx[r]];\n",
    "parenthesized": "  out[r] = (x + (size_t)r * V)[idx[r]];\n",
    "local": "  int t = idx[r];\n  out[r] = x[(size_t)V * r + t];\n",
}


def _infer(tmp_path: Path, body: str, rows: int, cols: int) -> Harness:
    p = tmp_path / "pick.cu"
    p.write_text(_HEAD + body + "}\n" + _MAIN.format(rows=rows, cols=cols))
    return infer_cuda_harness(p, "pick")


def _idx(h: Harness) -> InputSpec:
    return next(i for i in h.inputs if i.name == "idx")


@pytest.mark.parametrize("form", ["alias", "inline", "parenthesized", "local"])
@pytest.mark.parametrize("rows,cols", [(4096, 512), (300, 7)])
def test_an_index_inside_a_row_ranges_over_the_row(tmp_path, form, rows, cols):
    h = _infer(tmp_path, _ROW_FORMS[form], rows, cols)
    assert (_idx(h).low, _idx(h).high) == (0, cols)
    assert any(f"`idx` holds indices into a row of `x` ({cols} elements, line" in n for n in h.notes), h.notes
    assert f"high = {cols}," in harness_table(h) or f"high = {cols} " in harness_table(h)


def test_a_constant_inside_the_row_shortens_the_range(tmp_path):
    h = _infer(tmp_path, "  out[r] = x[(size_t)r * V + idx[r] + 2];\n", 100, 64)
    assert _idx(h).high == 62


def test_an_index_with_an_unbounded_offset_says_so(tmp_path):
    h = _infer(tmp_path, "  out[r] = x[r + idx[r]];\n", 64, 32)
    notes = [n for n in h.notes if "`idx`" in n]
    assert _idx(h).high == 64 * 32
    assert any("cannot bound" in n and "\n" not in n for n in notes), notes
    assert not any("holds indices into" in n for n in notes), notes
