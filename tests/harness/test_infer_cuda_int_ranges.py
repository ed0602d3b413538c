"""The values an inferred CUDA harness draws for integer inputs (:mod:`htam_core.harness.int_ranges`): an offsets
array (CSR's ``row_ptr``) gets sorted positions bounded by the buffers its loop indexes; values the kernel only
compares get a small range around zero (never a single value); the index guess ignores 1-element buffers; a range
of one value is widened or noted; ``main()``'s one-byte fill is noted. The generator of ``init = "offsets"`` gives
non-decreasing values from ``low`` to ``high``."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.harness.base import Harness, InputSpec
from htam_core.harness.infer_cuda import harness_table, infer_cuda_harness

CSR_MAIN = """
int main() {{
  const int m = {rows}, nnz = {nnz}, ncols = {ncols};
  {itype} *rp; int *ci; float *vals, *x, *y;
  cudaMalloc(&rp, (m + 1) * sizeof({itype})); cudaMalloc(&ci, nnz * sizeof(int));
  cudaMalloc(&vals, nnz * sizeof(float)); cudaMalloc(&x, ncols * sizeof(float)); cudaMalloc(&y, m * sizeof(float));
  cudaMemset(rp, 0, (m + 1) * sizeof({itype}));
  spmv<<<(m + 127) / 128, 128>>>(rp, ci, vals, x, y, m);
  return 0;
}}
"""

CSR_KERNELS = {
    "inline": "__global__ void spmv(const {itype} *rp, const int *ci, const float *vals, const float *x, float *y,"
              " int m) {{\n  int r = blockIdx.x * blockDim.x + threadIdx.x;\n  if (r < m) {{\n    float s = 0;\n"
              "    for ({itype} j = rp[r]; j < rp[r + 1]; ++j) s += vals[j] * x[ci[j]];\n    y[r] = s;\n  }}\n}}\n",
    "locals": "__global__ void spmv(const {itype} *__restrict__ rp, const int *ci, const float *vals, const float *x,"
              " float *y, int m) {{\n  const int r = threadIdx.x + blockIdx.x * blockDim.x;\n  if (r >= m) return;\n"
              "  {itype} lo = __ldg(&rp[r]), hi = __ldg(&rp[r + 1]);\n  float s = 0;\n"
              "  for ({itype} j = lo; j != hi; j++) {{ s += vals[j] * x[ci[j]]; }}\n  y[r] = s;\n}}\n",
    "length": "__global__ void spmv(const {itype} *rp, const int *ci, const float *vals, const float *x, float *y,"
              " int m) {{\n  int r = blockIdx.x * blockDim.x + threadIdx.x;\n  if (r >= m) return;\n"
              "  const {itype} first = rp[r], n = rp[r + 1] - rp[r];\n  float s = 0;\n"
              "  for ({itype} t = 0; t < n; ++t) s += vals[first + t] * x[ci[first + t]];\n  y[r] = s;\n}}\n",
}


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / f"{name}.cu"
    p.write_text(text)
    return p


def _spec(h: Harness, name: str) -> InputSpec:
    return next(i for i in h.inputs if i.name == name)


@pytest.mark.parametrize("which", sorted(CSR_KERNELS))
@pytest.mark.parametrize("itype,dtype", [("int", "int32"), ("long long", "int64")])
@pytest.mark.parametrize("rows,nnz,ncols", [(1000, 9000, 700), (64, 50, 64)])
def test_a_csr_row_pointer_is_an_offsets_array_into_the_nonzeros(tmp_path, which, itype, dtype, rows, nnz, ncols):
    text = CSR_KERNELS[which].format(itype=itype) + CSR_MAIN.format(rows=rows, nnz=nnz, ncols=ncols, itype=itype)
    h = infer_cuda_harness(_write(tmp_path, which, text), "spmv")
    rp = _spec(h, "rp")
    assert (rp.init, rp.dtype, rp.shape, rp.low, rp.high) == ("offsets", dtype, [rows + 1], 0, nnz)
    assert any(n.startswith("`rp` is an offsets array") and "`rp[r + 1]`" in n for n in h.notes), h.notes
    assert (_spec(h, "ci").low, _spec(h, "ci").high) == (0, ncols)  # a gather into x
    assert f'init = "offsets", low = 0, high = {nnz}' in harness_table(h)


COUNTER = """__global__ void count_pos({itype} *v, unsigned long long *count, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && v[i] {cmp}) atomicAdd(count, 1ULL);
}}
int main() {{
  const int n = 4096; {itype} *v; unsigned long long *count;
  cudaMalloc(&v, n * sizeof({itype})); cudaMalloc(&count, sizeof(unsigned long long));
  cudaMemset(v, {fill}, n * sizeof({itype})); cudaMemset(count, 0, sizeof(unsigned long long));
  count_pos<<<(n + 255) / 256, 256>>>(v, count, n);
  return 0;
}}
"""


@pytest.mark.parametrize("itype,cmp,fill,expect", [
    ("int", "!= 0", 1, (-8, 8)),
    ("const int", "> 3", 0, (-8, 8)),
    ("unsigned int", "== 7u", 2, (0, 16)),
    ("short", "< 0", 0, (-8, 8)),
])
def test_values_only_compared_get_a_range_that_exercises_the_kernel(tmp_path, itype, cmp, fill, expect):
    h = infer_cuda_harness(_write(tmp_path, "cnt", COUNTER.format(itype=itype, cmp=cmp, fill=fill)), "count_pos")
    v = _spec(h, "v")
    assert (v.init, v.low, v.high) == ("randint", *expect)
    assert v.high - v.low > 1
    assert any(n.startswith("`v` holds values, never an index") for n in h.notes), h.notes
    filled = [n for n in h.notes if "main() sets every byte" in n]
    assert (len(filled), fill and f"every byte to {fill}" in filled[0]) == ((1, True) if fill else (0, 0))


def test_the_index_guess_ignores_a_one_element_counter(tmp_path):
    text = """__global__ void pick(const int *idx, const float *src, float *out, int *hits, int n, int m) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { out[i] = src[(idx[i] * 7) % m]; atomicAdd(hits, 1); }
}
int main() {
  const int n = 300, m = 50; int *idx, *hits; float *src, *out;
  cudaMalloc(&idx, n * sizeof(int)); cudaMalloc(&hits, sizeof(int));
  cudaMalloc(&src, m * sizeof(float)); cudaMalloc(&out, n * sizeof(float));
  pick<<<(n + 127) / 128, 128>>>(idx, src, out, hits, n, m);
  return 0;
}
"""
    h = infer_cuda_harness(_write(tmp_path, "pick", text), "pick")
    assert (_spec(h, "idx").low, _spec(h, "idx").high) == (0, 50)
    assert any("`idx`: randint over [0, 50) is a guess" in n for n in h.notes), h.notes


def test_a_single_value_range_is_noted_when_the_use_proves_it(tmp_path):
    text = """__global__ void lut(const int *idx, const float *table, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = table[idx[i]];
}
int main() {
  const int n = 256; int *idx; float *table, *out;
  cudaMalloc(&idx, n * sizeof(int)); cudaMalloc(&table, sizeof(float)); cudaMalloc(&out, n * sizeof(float));
  lut<<<1, 256>>>(idx, table, out, n);
  return 0;
}
"""
    h = infer_cuda_harness(_write(tmp_path, "lut", text), "lut")
    assert (_spec(h, "idx").low, _spec(h, "idx").high) == (0, 1)
    assert any("`idx`: its only valid index is 0" in n for n in h.notes), h.notes


@pytest.mark.parametrize("shape,low,high", [([9], 0, 40), ([1001], 0, 64), ([5, 3], 2, 2), ([2], 0, 0)])
def test_offsets_are_sorted_from_low_to_high(shape, low, high):
    torch = pytest.importorskip("torch")
    from htam_core.harness.runner import offsets_tensor

    gen = torch.Generator(device="cpu").manual_seed(7)
    t = offsets_tensor(shape, low, high, gen, "cpu").flatten()
    assert list(t.shape) == [int(torch.tensor(shape).prod())]
    assert int(t[0]) == low and int(t[-1]) == high
    assert bool((t[1:] >= t[:-1]).all()) and int(t.min()) >= low and int(t.max()) <= high


def test_a_guessed_single_value_range_is_widened(tmp_path):
    text = """__global__ void one(const int *idx, const float *src, float *out) {
  if (threadIdx.x == 0) out[0] = src[(idx[0] * 3) % 1];
}
int main() {
  int *idx; float *src, *out;
  cudaMalloc(&idx, sizeof(int)); cudaMalloc(&src, sizeof(float)); cudaMalloc(&out, sizeof(float));
  one<<<1, 32>>>(idx, src, out);
  return 0;
}
"""
    h = infer_cuda_harness(_write(tmp_path, "one", text), "one")
    assert (_spec(h, "idx").low, _spec(h, "idx").high) == (0, 2)
    assert any("`idx`: a range of one value would make every element 0" in n for n in h.notes), h.notes


def test_the_saved_table_reads_back_as_offsets(tmp_path):
    import tomllib

    from htam_core.harness.spec import parse_kernel_table

    text = CSR_KERNELS["inline"].format(itype="int") + CSR_MAIN.format(rows=10, nnz=77, ncols=5, itype="int")
    p = _write(tmp_path, "rt", text)
    h = infer_cuda_harness(p, "spmv")
    table = tomllib.loads(harness_table(h))["kernel"]["spmv"]
    back = parse_kernel_table(table, kernel="spmv", spec_path=tmp_path / "htam.toml", file_path=p)
    rp = _spec(back, "rp")
    assert (rp.init, rp.low, rp.high) == ("offsets", 0, 77)
