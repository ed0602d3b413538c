"""The notes of an inferred harness name each argument as the user wrote it: a parameter renamed for Python
(``in`` is the input ``in_``, ``lambda`` is ``lambda_``) is quoted in its own spelling, as the index target and as
the indexed buffer alike."""

from __future__ import annotations

import pytest

from htam_core.harness.infer_cuda import infer_cuda_harness

_SRC = """__global__ void k(const float* {t}, const int* {i}, const int* w, float* out, int n) {{
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < n) out[r] = {t}[{i}[r]] * w[r];
}}
int main() {{
  const int n = 1000; float *a, *o; int *b, *c;
  cudaMalloc(&a, n * sizeof(float)); cudaMalloc(&o, n * sizeof(float));
  cudaMalloc(&b, n * sizeof(int)); cudaMalloc(&c, n * sizeof(int));
  k<<<(n + 127) / 128, 128>>>(a, b, c, o, n);
  return 0;
}}
"""


@pytest.mark.parametrize("t,i", [("in", "idx"), ("x", "lambda"), ("in", "from")])
def test_notes_name_the_parameters_as_written(tmp_path, t, i):
    p = tmp_path / "k.cu"
    p.write_text(_SRC.format(t=t, i=i))
    h = infer_cuda_harness(p, "k")
    assert {f"{t}_", f"{i}_"} & {s.name for s in h.inputs}  # renamed for Python in the table
    text = " ".join(h.notes)
    assert f"`{i}` holds indices into `{t}`" in text, h.notes
    assert f"`{t}_`" not in text and f"`{i}_`" not in text, h.notes
