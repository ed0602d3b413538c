"""cuda.warp_per_row: thread-per-row kernels become warp-per-row (coalesced row loops, shuffle all-reduce,
32x the blocks); every shape whose rewrite would be wrong is refused with a reason."""

from __future__ import annotations

import pytest
from gpu_equivalence import call_host, torch_cuda
from transform_helpers import fixture_path

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
    ("row_prefix", "is a running sum"),
    ("row_sum_odd_block", "not a constant multiple of 32"),
    ("row_write_in_loop", "does not depend on j"),
    ("row_step_two", "does not step j by 1"),
])
def test_refusals(refuse, kernel, needle):
    assert needle in refuse("cuda.warp_per_row", F, kernel)


def test_a_sum_that_starts_at_a_bias_keeps_it_on_lane_0(cand):
    """The lanes' partial sums add up to the one thread's: only lane 0 starts at the bias (the others at 0)."""
    (c,) = cand("cuda.warp_per_row", F, "row_sum_bias")
    assert "float acc = htam_lane == 0 ? (bias) : (float)0;" in c.new_text


def test_not_a_row_kernel(refuse):
    assert "no loop over the row" in refuse("cuda.warp_per_row", "elementwise_variants.cu", "relu_inplace")


# ---------------------------------------------------------------- a block size known only at run time
RT = "row_runtime_block.cu"


def test_a_launcher_block_size_is_rounded_up_to_whole_warps(cand):
    (c,) = cand("cuda.warp_per_row", RT, "rms_rows")
    t = c.new_text
    assert c.params["rounded_blocks"] == 1 and "rounded up to a multiple of 32" in c.description
    assert "rms_rows<<<(grid_size) * 32, dim3(((block_size) + 31) / 32 * 32)>>>(out, inp, gain, rows, cols);" in t
    assert "int r = (blockIdx.x * blockDim.x + threadIdx.x) / 32;" in t
    assert t.count("j += 32") == 2 and "ss += __shfl_xor_sync(0xffffffffu, ss, htam_o);" in t


@pytest.mark.parametrize(("kernel", "needle"), [
    ("rows_reads_blockdim", "reads `blockDim.x` outside its global index (rounding the block up would change it)"),
    ("rows_with_smem", "the launch sets a shared-memory size that may follow it"),
])
def test_runtime_block_refusals(refuse, kernel, needle):
    assert needle in refuse("cuda.warp_per_row", RT, kernel)


@pytest.mark.gpu
@pytest.mark.parametrize("block", [32, 48, 100, 128, 1024])
def test_runtime_block_equivalence_on_gpu(block, tmp_path, cand):
    """Every row is normalized once, whatever block size the caller passes (48 and 100 are rounded up)."""
    torch = torch_cuda()
    rows, cols = 1003, 77
    g = torch.Generator(device="cuda").manual_seed(block)
    x, gain = torch.randn(rows, cols, device="cuda", generator=g), torch.rand(cols, device="cuda", generator=g)
    outs = []
    for i, text in enumerate([fixture_path(RT).read_text(), cand("cuda.warp_per_row", RT, "rms_rows")[0].new_text]):
        out = torch.full((rows, cols), 7.0, device="cuda")
        call_host(text, "float *out, const float *inp, const float *gain, int rows, int cols, int block",
                  "rms(out, inp, gain, rows, cols, block)", [out, x, gain, rows, cols, block], tmp_path, f"rr{i}")
        outs.append(out)
    torch.testing.assert_close(outs[1], outs[0], rtol=1e-5, atol=1e-5)  # float sums in another order
    ref = x * torch.rsqrt((x * x).mean(1, keepdim=True) + 1e-5) * gain
    torch.testing.assert_close(outs[0], ref, rtol=1e-4, atol=1e-4)
