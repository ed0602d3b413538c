"""cuda.warp_per_row: thread-per-row kernels become warp-per-row (coalesced row loops, shuffle all-reduce,
32x the blocks); every shape whose rewrite would be wrong is refused with a reason."""

from __future__ import annotations

import pytest

F = "rowwise_variants.cu"


def test_sum_with_if_guard(cand):
    (c,) = cand("cuda.warp_per_row", F, "row_sum")
    t = c.new_text
    assert "const int htam_lane = threadIdx.x & 31;\n    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;" in t
    assert "for (int j = htam_lane; j < cols; j += 32)" in t
    assert "acc += __shfl_xor_sync(0xffffffffu, acc, htam_o);" in t
    assert "if (htam_lane == 0) { out[row] = acc; }" in t
    assert "row_sum<<<(blocks) * 32, threads>>>" in t
    assert c.params["reduced"] == [{"name": "acc", "op": "+"}]


def test_layernorm_two_sums_and_a_map_loop(cand):
    (c,) = cand("cuda.warp_per_row", F, "row_layernorm")
    body = c.new_text.split("row_layernorm(")[1].split("__global__")[0]
    assert body.count("j += 32") == 3 and body.count("__shfl_xor_sync") == 2
    assert "mean += __shfl_xor_sync" in body and "var += __shfl_xor_sync" in body
    assert "htam_lane == 0" not in body  # the map loop writes per element: every lane stores its own
    assert "row_layernorm<<<((rows + 255) / 256) * 32, 256>>>" in c.new_text


def test_min_with_the_variable_second_and_dim3_launch(cand):
    (c,) = cand("cuda.warp_per_row", F, "row_min")
    assert "m = fminf(m, __shfl_xor_sync(0xffffffffu, m, htam_o));" in c.new_text
    assert "row_min<<<dim3((blocks) * 32), dim3(threads)>>>" in c.new_text


def test_suite_kernels(cand):
    (c,) = cand("cuda.warp_per_row", "softmax_row_per_thread.cu", "softmax_row_per_thread")
    assert [r["name"] for r in c.params["reduced"]] == ["m", "denom"]


@pytest.mark.parametrize("kernel,needle", [
    ("row_prefix", "reads acc while it reduces"),
    ("row_sum_bias", "does not start at 0"),
    ("row_sum_odd_block", "not a constant multiple of 32"),
    ("row_write_in_loop", "does not depend on j"),
    ("row_step_two", "does not step j by 1"),
])
def test_refusals(refuse, kernel, needle):
    assert needle in refuse("cuda.warp_per_row", F, kernel)


def test_not_a_row_kernel(refuse):
    assert "no loop over the row" in refuse("cuda.warp_per_row", "elementwise_variants.cu", "relu_inplace")
