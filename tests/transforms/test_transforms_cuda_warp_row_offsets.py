"""cuda.warp_per_row on loops over one row's range of an offsets array (CSR SpMV, a segment's max): the lanes
start at the row's first position plus the lane and step by 32 up to the next offset (the CSR-vector kernel of
Bell and Garland, 2008); every candidate compiles with nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from transform_helpers import assert_nvcc_compiles

F = "csr_rows.cu"


@pytest.mark.parametrize("kernel,loop,reduce", [
    ("csr_inline", "for (int k = (rptr[r]) + htam_lane; k < rptr[r + 1]; k += 32)",
     "s += __shfl_xor_sync(0xffffffffu, s, htam_o);"),
    ("csr_locals", "for (int p = (begin) + htam_lane; p < end; p += 32)",
     "acc += __shfl_xor_sync(0xffffffffu, acc, htam_o);"),
    ("segment_max", "for (long long e = (seg[s]) + htam_lane; e < seg[s + 1]; e += 32)",
     "m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, htam_o));"),
    ("segment_len_sum", "for (unsigned t = htam_lane; t < count; t += 32)",
     "total += __shfl_xor_sync(0xffffffffu, total, htam_o);"),
])
def test_lanes_split_the_row_range_from_its_offset(cand, kernel, loop, reduce, tmp_path: Path):
    (c,) = cand("cuda.warp_per_row", F, kernel)
    body = c.new_text.split(f"{kernel}(")[1].split("__global__")[0]
    assert loop in body and reduce in body and "if (htam_lane == 0) {" in body
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    assert_nvcc_compiles(c.new_text, tmp_path)
