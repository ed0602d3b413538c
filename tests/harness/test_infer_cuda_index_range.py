"""Integer index inputs of an inferred CUDA harness get the range their values index (:func:`_index_ranges`): a
buffer read as ``table[ids[t] * C + c]`` holds row numbers below ``len(table) / C``, not below the smallest
buffer's length; where no such use is found the guess stays, with a note (a comment in ``htam.toml``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.harness.base import Harness, InputSpec
from htam_core.harness.infer_cuda import harness_table, infer_cuda_harness

_MAIN = """
int main() {{
  const int V = {rows}, C = {cols}, n = {n};
  float *table, *out; {itype}* ids;
  cudaMalloc(&table, (size_t)V * C * sizeof(float));
  cudaMalloc(&out, (size_t)n * C * sizeof(float));
  cudaMalloc(&ids, n * sizeof({itype}));
  cudaMemset(table, 0, (size_t)V * C * sizeof(float));
  cudaMemset(ids, 0, n * sizeof({itype}));
  {launch};
  cudaDeviceSynchronize();
  return 0;
}}
"""

_KERNELS = {
    # one thread per output element, the row index inline (a small table: fewer rows than tokens)
    "flat": ("__global__ void gather(float* out, const int* ids, const float* table, int n, int C) {\n"
             "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
             "  if (i < n * C) out[i] = table[(size_t)ids[i / C] * C + i % C];\n}\n",
             "gather<<<(n * C + 255) / 256, 256>>>(out, ids, table, n, C)", "int"),
    # the row index through a local, and a row pointer into the table; 64-bit ids
    "row": ("__global__ void gather(float* out, const long long* ids, const float* table, int n, int C) {\n"
            "  int t = blockIdx.x;\n  long long tok = ids[t];\n  const float* row = table + tok * C;\n"
            "  for (int c = threadIdx.x; c < C; c += blockDim.x) out[(size_t)t * C + c] = row[c];\n}\n",
            "gather<<<n, 128>>>(out, ids, table, n, C)", "long long"),
}


def _infer(tmp_path: Path, which: str, rows: int, cols: int, n: int) -> Harness:
    kernel, launch, itype = _KERNELS[which]
    p = tmp_path / f"{which}.cu"
    p.write_text(kernel + _MAIN.format(rows=rows, cols=cols, n=n, itype=itype, launch=launch))
    return infer_cuda_harness(p, "gather")


def _ids(h: Harness) -> InputSpec:
    return next(i for i in h.inputs if i.name == "ids")


@pytest.mark.parametrize("which", ["flat", "row"])
@pytest.mark.parametrize("rows,cols,n", [(1000, 64, 8192), (50, 16, 30)])
def test_gather_indices_range_over_the_table_rows(tmp_path, which, rows, cols, n):
    h = _infer(tmp_path, which, rows, cols, n)
    ids = _ids(h)
    assert ids.init == "randint" and ids.low == 0 and ids.high == rows
    assert any("`ids` holds indices into `table`" in note for note in h.notes), h.notes
    assert f"high = {rows}" in harness_table(h)


def test_an_index_into_a_flat_buffer_ranges_over_its_length(tmp_path):
    p = tmp_path / "perm.cu"
    p.write_text("__global__ void permute(float* out, const int* idx, const float* src, int n) {\n"
                 "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] = src[__ldg(&idx[i])];\n}\n"
                 "int main() {\n  const int n = 4096, m = 100000; float *src, *out; int* idx;\n"
                 "  cudaMalloc(&src, m * sizeof(float)); cudaMalloc(&out, n * sizeof(float));\n"
                 "  cudaMalloc(&idx, n * sizeof(int));\n  cudaMemset(src, 0, m * sizeof(float));\n"
                 "  permute<<<(n + 255) / 256, 256>>>(out, idx, src, n);\n  return 0;\n}\n")
    h = infer_cuda_harness(p, "permute")
    assert _ids_named(h, "idx").high == 100000


def test_an_integer_input_only_computed_with_gets_a_small_value_range(tmp_path):
    p = tmp_path / "cnt.cu"
    p.write_text("__global__ void scale(float* out, const int* w, int n) {\n"
                 "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] = 0.5f * w[i];\n}\n"
                 "int main() {\n  const int n = 512; float* out; int* w;\n"
                 "  cudaMalloc(&out, n * sizeof(float)); cudaMalloc(&w, n * sizeof(int));\n"
                 "  cudaMemset(w, 0, n * sizeof(int));\n  scale<<<2, 256>>>(out, w, n);\n  return 0;\n}\n")
    h = infer_cuda_harness(p, "scale")
    w = _ids_named(h, "w")
    assert (w.low, w.high) == (-8, 8)
    assert any("`w` holds values, never an index" in note for note in h.notes), h.notes
    assert "low = -8, high = 8" in harness_table(h)


def test_an_integer_input_used_in_an_unreadable_index_keeps_the_guess_with_a_note(tmp_path):
    p = tmp_path / "hashed.cu"
    p.write_text("__global__ void pick(float* out, const int* w, const float* src, int n, int m) {\n"
                 "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                 "  if (i < n) out[i] = src[(w[i] * w[i]) % m];\n}\n"
                 "int main() {\n  const int n = 512, m = 300; float *out, *src; int* w;\n"
                 "  cudaMalloc(&out, n * sizeof(float)); cudaMalloc(&w, n * sizeof(int));\n"
                 "  cudaMalloc(&src, m * sizeof(float));\n"
                 "  pick<<<2, 256>>>(out, w, src, n, m);\n  return 0;\n}\n")
    h = infer_cuda_harness(p, "pick")
    assert _ids_named(h, "w").high == 300
    assert any("`w`: randint over [0, 300) is a guess" in note for note in h.notes), h.notes
    assert "# note: `w`: randint over [0, 300) is a guess" in harness_table(h)


def _ids_named(h: Harness, name: str) -> InputSpec:
    return next(i for i in h.inputs if i.name == name)
