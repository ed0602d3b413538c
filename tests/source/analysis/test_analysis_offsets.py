"""Offsets arrays and index sources (:mod:`htam_core.source.analysis.offsets`): reads whose value bounds a loop
(CSR's ``row_ptr[r]``, ``row_ptr[r + 1]``, inline, through locals, through ``__ldg``), the loops that run from one
loaded offset to the next, and which buffers' values reach an index; a stencil's neighbouring reads are none of
these."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.source.analysis import KernelFacts, analyze
from htam_core.source.analysis.offsets import index_sources, loop_bound_reads, offsets_loops
from htam_core.source.api import parse_text

CSR = (Path(__file__).resolve().parents[2] / "fixtures" / "transforms" / "csr_rows.cu").read_text()


def _facts(text: str, kernel: str) -> KernelFacts:
    model = parse_text(text, "cuda")
    return analyze(model, model.kernel(kernel))


@pytest.mark.parametrize("kernel,pointer,targets", [
    ("csr_inline", "rptr", ("vals", "cols")),
    ("csr_locals", "row_offsets", ("a", "col_ids")),
    ("segment_max", "seg", ("data",)),
    ("segment_len_sum", "starts", ("data",)),
])
def test_a_loop_from_one_offset_to_the_next(kernel, pointer, targets):
    f = _facts(CSR, kernel)
    reads = loop_bound_reads(f.loops, f.accesses, f.pointer_aliases)
    assert {a.pointer for a in reads} == {pointer} and len(reads) >= 2
    (lp,) = offsets_loops(f)
    assert lp.pointer == pointer and lp.targets == targets
    assert lp.last.endswith("+ 1]") and lp.first.startswith(pointer)
    assert pointer in (index_sources(f) or ())


@pytest.mark.parametrize("loop", ["for (int j = ptr[s]; j <= ptr[s + 1] - 1; ++j) acc += w[j];",
                                  "for (int t = 0; t < ptr[s + 1] - ptr[s]; t += 1) acc += w[ptr[s] + t];",
                                  "int b = ptr[s], e = ptr[s + 1];\n  for (int j = b; j != e; j++) acc += w[j];"])
def test_other_spellings_of_the_row_range(loop):
    f = _facts("__global__ void k(const int *ptr, const float *w, float *o, int n) {\n"
               "  int s = blockIdx.x * blockDim.x + threadIdx.x;\n  if (s >= n) return;\n  float acc = 0.f;\n"
               f"  {loop}\n  o[s] = acc;\n}}", "k")
    (lp,) = offsets_loops(f)
    assert (lp.pointer, lp.targets, lp.first, lp.last, lp.thread_rows) == ("ptr", ("w",), "ptr[s]", "ptr[s + 1]", True)


def test_a_range_of_two_apart_or_of_two_arrays_is_no_offsets_loop():
    for loop in ("for (int j = ptr[s]; j < ptr[s + 2]; ++j) acc += w[j];",
                 "for (int j = ptr[s]; j < end[s]; ++j) acc += w[j];",
                 "for (int j = ptr[s]; j < ptr[s + 1]; j += 0) acc += w[j];"):
        f = _facts("__global__ void k(const int *ptr, const int *end, const float *w, float *o, int n) {\n"
                   "  int s = blockIdx.x * blockDim.x + threadIdx.x;\n  if (s >= n) return;\n  float acc = 0.f;\n"
                   f"  {loop}\n  o[s] = acc;\n}}", "k")
        assert offsets_loops(f) == (), loop


def test_through_ldg_and_a_pointer_offset_local():
    f = _facts("""__global__ void k(const int *ptr, const float *w, float *o, int n) {
  int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= n) return;
  const int *p = ptr + s;
  float acc = 0.f;
  for (int e = __ldg(&p[0]); e != __ldg(&p[1]); ++e) acc += w[e];
  o[s] = acc;
}""", "k")
    (lp,) = offsets_loops(f)
    assert lp.pointer == "ptr" and lp.targets == ("w",)


def test_one_bound_read_is_no_offsets_loop_and_a_stencil_has_no_bound_reads():
    counts = _facts("""__global__ void k(const int *cnt, const float *x, float *o, int n, int w) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float s = 0.f;
  for (int j = 0; j < cnt[i]; ++j) s += x[i * w + j];
  o[i] = s;
}""", "k")
    assert [a.pointer for a in loop_bound_reads(counts.loops, counts.accesses)] == ["cnt"]
    assert offsets_loops(counts) == ()
    stencil = _facts("""__global__ void k(const float *in, float *o, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i > 0 && i < n - 1) o[i] = in[i - 1] + in[i] + in[i + 1];
}""", "k")
    assert loop_bound_reads(stencil.loops, stencil.accesses) == ()
    assert index_sources(stencil) == frozenset()


def test_values_only_compared_are_no_index_source():
    f = _facts("""__global__ void k(const int *v, const int *idx, unsigned long long *count, float *o,
                  const float *t, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && v[i] != 0) atomicAdd(count, 1ULL);
  if (i < n) o[i] = t[min(idx[i], n - 1)];
}""", "k")
    assert index_sources(f) == frozenset({"idx"})


#: A lane's (or a block's threads') share of one row's range, in several spellings: the row from a warp id or from
#: ``blockIdx.x``, the bounds inline or in locals, 32-bit or 64-bit offsets, a step of 32, warpSize or blockDim.x.
LANE_SHARES = {
    "warp_shift_locals": "int row = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; int lane = threadIdx.x & 31;\n"
                         "  if (row >= n) return;\n  T start = ptr[row], end = ptr[row + 1];\n"
                         "  for (T j = start + lane; j < end; j += 32) acc += w[j] * x[ci[j]];",
    "warp_div_inline": "int wid = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;\n"
                       "  int lane = threadIdx.x % warpSize;\n  if (wid >= n) return;\n"
                       "  for (T j = ptr[wid] + lane; j < ptr[wid + 1]; j += warpSize) acc += w[j] * x[ci[j]];",
    "block_row": "const int row = blockIdx.x;\n  const T b = ptr[row];\n  const T e = ptr[row + 1];\n"
                 "  for (T j = b + threadIdx.x; j < e; j += blockDim.x) acc += w[j] * x[ci[j]];",
}


def _lane_kernel(body: str, itype: str) -> str:
    return ("__global__ void k(const T *ptr, const int *ci, const float *w, const float *x, float *o, int n) {\n"
            f"  float acc = 0.f;\n  {body}\n  o[blockIdx.x] = acc;\n}}").replace("T ", f"{itype} ")


@pytest.mark.parametrize("which", sorted(LANE_SHARES))
@pytest.mark.parametrize("itype", ["int", "long long", "int64_t"])
def test_a_lanes_share_of_the_row_range_is_an_offsets_loop(which, itype):
    (lp,) = offsets_loops(_facts(_lane_kernel(LANE_SHARES[which], itype), "k"))
    assert (lp.pointer, lp.targets) == ("ptr", ("w", "ci"))
    assert lp.last == lp.first.replace("]", " + 1]") and lp.first.startswith("ptr[")


@pytest.mark.parametrize("loop", [
    "for (int j = ptr[r]; j < ptr[r + 1] + n; ++j) acc += w[j];",  # past the row's end by a parameter
    "for (int j = ptr[r]; j < ptr[r + 1]; j += n) acc += w[j];",  # a step of unknown sign
    "for (int j = ptr[r] - n; j < ptr[r + 1]; j += 32) acc += w[j];",  # starts before the row
    "for (int j = ptr[r] + threadIdx.x; j < ptr[r + 1]; j -= blockDim.x) acc += w[j];",  # counts down
])
def test_a_range_beyond_the_row_or_of_unknown_step_is_no_offsets_loop(loop):
    f = _facts("__global__ void k(const int *ptr, const float *w, float *o, int n) {\n  int r = blockIdx.x;\n"
               f"  float acc = 0.f;\n  {loop}\n  o[r] = acc;\n}}", "k")
    assert offsets_loops(f) == (), loop
