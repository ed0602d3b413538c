"""``cuda.vectorize_float4`` on loops whose loads go through ``__ldg(&p[i])``: the wrapper does not hide the access.

A read-only load intrinsic is a load of ``p[i]``, so a loop gets the decision its plain form gets: a matmul's
``__ldg(&B[k * N + col])`` moves by N along k (not contiguous) and refuses the loop with the same reason as
``B[k * N + col]``; a row sum's ``__ldg(&x[row * n + k])`` moves by 1 and is widened, to ``__ldg`` of a ``float4``.
The CPU run checks the widened row sum against the original (aligned rows take the float4 path, ragged ones the
scalar loop).
"""

from __future__ import annotations

import pytest
from cpu_emulation import compiler, run_rows
from transform_helpers import fixture_path

FILE = "ldg_loop_variants.cu"
TID = "cuda.vectorize_float4"


@pytest.mark.parametrize("kernel", ["mm_plain", "mm_ldg", "mm_ldg_b", "mm_ldcs_b"])
def test_a_stride_n_read_refuses_the_loop_plain_or_through_ldg(refuse, kernel):
    assert "`B[k * N + col]` in the loop on line" in refuse(TID, FILE, kernel)
    assert "is not a stride-1 access in k" in refuse(TID, FILE, kernel)


def test_a_stride_one_read_is_widened_plain_or_through_ldg(cand):
    (plain,) = cand(TID, FILE, "rowsum_plain")
    (ldg,) = cand(TID, FILE, "rowsum_ldg")
    assert "reinterpret_cast<const float4 *>(x + (row * n))[htam_v4]" in plain.new_text
    body = ldg.new_text[ldg.new_text.index("__global__ void rowsum_ldg"):]
    assert "float4 htam_q04 = __ldg(reinterpret_cast<const float4 *>(x + (row * n)) + htam_v4);" in body
    vector_loop = body[body.index("htam_v4 +="):body.index("htam_tail = htam_n4")]
    assert "__ldg(&" not in vector_loop  # the lanes read the float4's components, not a local's address
    assert "s += __ldg(&x[row * n + k]);" in body  # the scalar tail keeps the original load


@pytest.mark.skipif(compiler() is None, reason="needs a host C++ compiler")
@pytest.mark.parametrize("cols", [64, 37])
def test_the_widened_ldg_row_sum_computes_the_same_on_the_cpu(cand, tmp_path, cols):
    (c,) = cand(TID, FILE, "rowsum_ldg")
    (tmp_path / "o").mkdir()
    (tmp_path / "n").mkdir()
    want = run_rows(fixture_path(FILE).read_text(), "rowsum_ldg", 29, cols, 8, tmp_path / "o")
    got = run_rows(c.new_text, "rowsum_ldg", 29, cols, 8, tmp_path / "n")
    assert got == want and any(v != 0 for v in want[:29])
