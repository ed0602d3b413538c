"""CUDA transforms: each applies where it should, refuses with a reason where it should not, and its
result parses (validated by the registry, re-checked in ``conftest.candidates``)."""

from __future__ import annotations

import re

import pytest

EW = "elementwise_variants.cu"


# ---------------------------------------------------------------- cuda.block_size
def test_block_size_literal_grid_follows(cand):
    cs = cand("cuda.block_size", EW, "saxpy_i64")
    by = {c.params["block"][0]: c for c in cs}
    assert set(by) == {128, 512, 1024}
    assert "saxpy_i64<<<(n + 511) / 512, 512>>>" in by[512].new_text


def test_block_size_macro_and_ceil_div(cand):
    cs = cand("cuda.block_size", EW, "relu_inplace")
    c = next(c for c in cs if c.params["block"] == [256])
    assert "#define BLOCK 256" in c.new_text
    assert "CEIL_DIV(n, BLOCK)" in c.new_text


def test_block_size_2d_dim3_changes_each_grid_dim(cand):
    cs = cand("cuda.block_size", "sgemm_naive.cu", "sgemm_naive")
    c = next(c for c in cs if c.params["block"] == [32, 8])
    assert "dim3 block(32, 8);" in c.new_text
    assert "dim3 grid(CEIL_DIV(M, 32), CEIL_DIV(N, 8));" in c.new_text


def test_block_size_named_constant_in_torch_string(cand):
    cs = cand("cuda.block_size", "kb_swish.py", "swish_fwd_kernel")
    assert any("const int threads = 512;" in c.new_text for c in cs)


@pytest.mark.parametrize(
    "kernel,needle",
    [("block_reverse", "literal 256"), ("scale_bias", "also configures the launch gather")],
)
def test_block_size_refusals(refuse, kernel, needle):
    assert needle in refuse("cuda.block_size", EW, kernel)


def test_block_size_refuses_shared_grid_variable(refuse):
    assert "copy2d" in refuse("cuda.block_size", "transpose_variants.cu", "transpose_f64")


# ---------------------------------------------------------------- cuda.restrict_const
def test_restrict_const_only_read_only_params(cand):
    (c,) = cand("cuda.restrict_const", EW, "scale_bias")
    assert "scale_bias(const float* __restrict__ in, float* out," in c.new_text
    assert c.params["params"] == ["in"]
    (g,) = cand("cuda.restrict_const", EW, "gather")
    assert set(g.params["params"]) == {"src", "index"}
    assert "const float *__restrict__ src, const int *__restrict__ index, float *dst" in g.new_text
    (s,) = cand("cuda.restrict_const", EW, "saxpy_i64")
    assert "const float *__restrict__ x, float *y" in s.new_text


def test_restrict_const_refuses_written_and_aliased(refuse):
    assert "written by the kernel: data" in refuse("cuda.restrict_const", EW, "relu_inplace")
    # y is written through its alias yr (``float *yr = y + row * cols``): the analysis follows the alias
    assert "written by the kernel: y" in refuse("cuda.restrict_const", "softmax_row_per_thread.cu", "softmax_row_per_thread")


# ---------------------------------------------------------------- cuda.launch_bounds
def test_launch_bounds_matches_block(cand):
    (c,) = cand("cuda.launch_bounds", "sgemm_naive.cu", "sgemm_naive")
    assert "__global__ void __launch_bounds__(256) sgemm_naive(" in c.new_text
    (c,) = cand("cuda.launch_bounds", EW, "sigmoid_poly")
    assert c.params == {"max_threads": 128}


def test_launch_bounds_refuses_when_present(refuse):
    assert "already" in refuse("cuda.launch_bounds", "bias_gelu_templates.cu", "bias_gelu_fwd")


# ---------------------------------------------------------------- cuda.unroll
def test_unroll_constant_trip_loop(cand):
    (c,) = cand("cuda.unroll", EW, "sigmoid_poly")
    assert re.search(r"#pragma unroll\n\s+for \(int r = 0; r < 8; \+\+r\)", c.new_text)
    assert c.params["loops"][0]["trip_count"] == 8


def test_unroll_refusals(refuse):
    assert "no constant trip count" in refuse("cuda.unroll", "sgemm_naive.cu", "sgemm_naive")
    assert "already unrolled" in refuse("cuda.unroll", "bias_gelu_templates.cu", "bias_gelu_fwd")
    assert "no for loop" in refuse("cuda.unroll", EW, "saxpy_i64")


# ---------------------------------------------------------------- cuda.ldg
def test_ldg_is_refused_with_the_read_only_reason(refuse, cand):
    assert "the loads of x already take the read-only path" in refuse("cuda.ldg", "kb_swish.py", "swish_fwd_kernel")
    assert "no overload" in refuse("cuda.ldg", "bias_gelu_templates.cu", "bias_grad_colsum")
    # a read-only input that is not const __restrict__: its indexed loads go through __ldg (nvcc would not)
    (c,) = cand("cuda.ldg", EW, "scale_bias")
    body = c.new_text.split("scale_bias", 1)[1].split("__global__", 1)[0]
    assert "__ldg(&" in body and c.params["params"]
    assert all(not p.startswith("out") for p in c.params["params"])


# ---------------------------------------------------------------- cuda.grid_stride
def test_grid_stride_if_form_and_launch(cand):
    cs = cand("cuda.grid_stride", EW, "saxpy_i64")
    assert {c.params["blocks_per_sm"] for c in cs} == {8, 32}
    t = cs[1].new_text
    assert "for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < n; " \
           "idx += (int64_t)blockDim.x * gridDim.x)" in t
    assert "saxpy_i64<<<htam_sm_grid((n + 255) / 256, 32), 256>>>" in t
    assert t.count("static inline unsigned int htam_sm_grid") == 1


def test_grid_stride_early_return_form(cand):
    (c, _) = cand("cuda.grid_stride", EW, "relu_inplace")
    assert "if (tid >= count) return;" not in c.new_text
    # the unsigned index is declared from a 64-bit counter, which cannot wrap below count near UINT_MAX
    assert "htam_gi < count; htam_gi += (long long)blockDim.x * gridDim.x) {" in c.new_text
    assert "unsigned int tid = (unsigned int)htam_gi;" in c.new_text


def test_grid_stride_inline_dim3_grid(cand):
    (c, _) = cand("cuda.grid_stride", EW, "sigmoid_poly")
    assert "dim3(htam_sm_grid((n + 127) / 128, 8))" in c.new_text


@pytest.mark.parametrize(
    "file,kernel,needle",
    [(EW, "block_reverse", "threadIdx"), ("sgemm_naive.cu", "sgemm_naive", "bound check"),
     ("reduce_sum_smem.cu", "block_sum_interleaved", "before its bound check")],
)
def test_grid_stride_refusals(refuse, file, kernel, needle):
    assert needle in refuse("cuda.grid_stride", file, kernel)


# ---------------------------------------------------------------- cuda.vectorize_float4
def test_vectorize_float4_structure(cand):
    (c,) = cand("cuda.vectorize_float4", EW, "scale_bias")
    t = c.new_text
    assert "reinterpret_cast<const float4 *>(in)[htam_v]" in t
    assert "& 15ull) == 0ull" in t  # alignment check
    assert "htam_j < htam_n" in t  # scalar tail
    assert "scale_bias<<<((blocks) + 3) / 4, threads>>>" in t


def test_vectorize_float4_read_modify_write_loads_output(cand):
    (c,) = cand("cuda.vectorize_float4", EW, "saxpy_i64")
    assert "float4 htam_y4 = reinterpret_cast<const float4 *>(y)[htam_v];" in c.new_text


def test_vectorize_gather_reads_the_table_per_lane(cand):
    """``dst[i] = src[index[i]]``: ``index`` and ``dst`` move as vectors; the read-only table ``src``, read at
    another address, is read by each lane as written."""
    (c,) = cand("cuda.vectorize_float4", EW, "gather")
    assert c.params["pointers"] == ["index", "dst"] and "htam_dst = src[htam_index];" in c.new_text


@pytest.mark.parametrize(
    "file,kernel,needle",
    [("elementwise_lanes.cu", "row_flags", "flag is written or escapes at an address other than flag[idx]"),
     ("transpose_variants.cu", "transpose_f64", "not an elementwise kernel")],
)
def test_vectorize_refusals(refuse, file, kernel, needle):
    assert needle in refuse("cuda.vectorize_float4", file, kernel)


# ---------------------------------------------------------------- cuda.smem_tiling_matmul
def test_smem_tiling_matmul_both_layouts(cand):
    cs = cand("cuda.smem_tiling_matmul", "sgemm_naive.cu", "sgemm_naive")
    assert {c.params["tile"] for c in cs} == {16, 32}
    t32 = next(c for c in cs if c.params["tile"] == 32).new_text
    assert "__shared__ float htam_As[32][32];" in t32 and "dim3 block(32, 32);" in t32
    assert "C[row * N + col] = alpha * acc + beta * C[row * N + col];" in t32
    cs = cand("cuda.smem_tiling_matmul", "matmul_variants.cu", "matmul_rowy")
    assert {c.params["tile"] for c in cs} == {16, 32}
    assert "a[i * k + htam_ka]" in cs[0].new_text and "b[htam_kb * n + j]" in cs[0].new_text


def test_smem_tiling_refuses_non_matmul(refuse):
    assert "not the naive matmul pattern" in refuse("cuda.smem_tiling_matmul", "matmul_variants.cu", "matadd")
    assert "not the naive matmul pattern" in refuse("cuda.smem_tiling_matmul", EW, "saxpy_i64")


# ---------------------------------------------------------------- cuda.transpose_smem_tile
def test_transpose_tile(cand):
    (c,) = cand("cuda.transpose_smem_tile", "transpose_naive.cu", "transpose_naive")
    assert "__shared__ float htam_tile[32][33];" in c.new_text
    cs = cand("cuda.transpose_smem_tile", "transpose_variants.cu", "transpose_f64")
    assert "__shared__ double htam_tile[32][33];" in cs[0].new_text
    narrow = next(c for c in cs if c.params["block"] == [32, 8])
    assert "transpose_f64<<<grid, dim3(32, 8)>>>" in narrow.new_text
    assert "copy2d<<<grid, dim3(32, 32)>>>" in narrow.new_text


def test_transpose_refuses_copy(refuse):
    assert "not a transpose" in refuse("cuda.transpose_smem_tile", "transpose_variants.cu", "copy2d")


# ---------------------------------------------------------------- cuda.fast_math
def test_fast_math(cand, refuse):
    (c,) = cand("cuda.fast_math", EW, "sigmoid_poly")
    assert c.changes_numerics
    assert "__sinf(" in c.new_text and "__expf(-x[i])" in c.new_text
    assert "__fdividef(1.0f, (1.0f + __expf(-x[i])))" in c.new_text
    assert "__fdividef(acc, 8.0f)" in c.new_text
    assert "no single-precision math call" in refuse("cuda.fast_math", EW, "saxpy_i64")


def test_incomplete_and_broken_kernels_are_refused(refuse):
    assert "incomplete" in refuse("cuda.block_size", "broken_partial_kernels.cu", "row_l2_normalize")


def test_block_size_retune_follows_launch_bounds_written_through_a_macro():
    """ATen's spelling, ``C10_LAUNCH_BOUNDS_1(128)`` over a 128-thread launch: a larger block raises the macro
    call's argument with it (the limit was the old block size); one larger than a named constant is refused."""
    from htam_core.source import parse_text
    from htam_core.transforms import registry
    from htam_core.transforms.base import NotApplicable

    text = ("#define C10_LAUNCH_BOUNDS_1(n) __launch_bounds__((n))\n"
            "__global__ void C10_LAUNCH_BOUNDS_1(128) scale(float *x, int n) {\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) x[i] *= 2.0f;\n}\n"
            "void run(float *x, int n) { scale<<<(n + 127) / 128, 128>>>(x, n); }\n")
    model = parse_text(text, "cuda")
    res = registry.propose("cuda.block_size", model, model.kernel("scale"))
    assert not isinstance(res, NotApplicable), res
    bigger = [c for c in res if c.params.get("block", [0])[0] > 128]
    assert bigger and all(f"C10_LAUNCH_BOUNDS_1({c.params['block'][0]}) scale" in c.new_text for c in bigger)
    named = text.replace("C10_LAUNCH_BOUNDS_1(128) scale", "C10_LAUNCH_BOUNDS_1(LIMIT) scale")
    model = parse_text("#define LIMIT 128\n" + named, "cuda")
    res = registry.propose("cuda.block_size", model, model.kernel("scale"))
    kept = [] if isinstance(res, NotApplicable) else res
    assert all(c.params.get("block", [0])[0] <= 128 for c in kept)
