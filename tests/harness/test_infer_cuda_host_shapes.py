"""Harness inference from host code shaped as users write it: ``uint16_t`` buffers, ``cudaMallocPitch`` allocations,
a host helper that computes the grid, a launch inside a stored lambda, a launch in a functor's ``operator()``. Each
gives a harness whose sizes are the program's, or one line that says what htam cannot read (regressions from a new
user's textbook pairs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.harness.base import Harness, HarnessError, InputSpec
from htam_core.harness.infer_cuda import infer_cuda_harness


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "prog.cu"
    p.write_text(text, encoding="utf-8")
    return p


def _inputs(h: Harness) -> dict[str, InputSpec]:
    return {i.name: i for i in h.inputs}


HIST_U16 = r"""
#include <cstdint>
__global__ void hist_u16(const uint16_t* samples, unsigned int* hist, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { uint16_t v = samples[i]; atomicAdd(&hist[v >> 6], 1u); }
}
int main() {
    const size_t n = (size_t)1 << 20;
    uint16_t* samples; unsigned int* hist;
    cudaMalloc(&samples, n * sizeof(uint16_t));
    cudaMalloc(&hist, 1024 * sizeof(unsigned int));
    cudaMemset(hist, 0, 1024 * sizeof(unsigned int));
    hist_u16<<<(unsigned)((n + 255) / 256), 256>>>(samples, hist, n);
    return 0;
}
"""


def test_uint16_samples_are_filled_as_16_bit_integers(tmp_path):
    h = infer_cuda_harness(_write(tmp_path, HIST_U16), "hist_u16")
    ins = _inputs(h)
    assert ins["samples"].dtype == "int16" and ins["samples"].shape == [1 << 20] and ins["samples"].init == "randint"
    assert ins["hist"].shape == [1024] and ins["hist"].init == "zeros" and h.outputs == ["hist"]
    assert (h.grid, h.block) == ("(4096, 1, 1)", "(256, 1, 1)")


PITCH = r"""
__global__ void transpose_u8(const unsigned char* src, size_t src_pitch, unsigned char* dst, size_t dst_pitch,
                             int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) dst[x * dst_pitch + y] = src[y * src_pitch + x];
}
int main() {
    const int w = WIDTH, h = 200;
    unsigned char *src, *dst;
    size_t sp, dp;
    cudaMallocPitch((void**)&src, &sp, w, h);
    cudaMallocPitch((void**)&dst, &dp, h * sizeof(unsigned char), w);
    cudaMemcpy2D(src, sp, 0, w, w, h, cudaMemcpyHostToDevice);
    dim3 block(16, 16), grid((w + 15) / 16, (h + 15) / 16);
    transpose_u8<<<grid, block>>>(src, sp, dst, dp, w, h);
    return 0;
}
"""


def test_cudamallocpitch_allocates_pitch_times_rows_and_sets_the_pitch(tmp_path):
    h = infer_cuda_harness(_write(tmp_path, PITCH.replace("WIDTH", "300")), "transpose_u8")
    ins = _inputs(h)
    # pitches: the row's bytes rounded up to 512 (300 -> 512, 200 -> 512); buffers pitch * rows bytes
    assert h.sizes == [{"src_pitch": 512, "dst_pitch": 512, "w": 300, "h": 200}]
    assert ins["src"].shape == [512 * 200] and ins["dst"].shape == [512 * 300]
    assert ins["src"].dtype == ins["dst"].dtype == "uint8"
    assert ins["src"].init != "empty"  # cudaMemcpy2D from the host filled it: an input with data
    assert h.outputs == ["dst"] and ins["dst"].init == "empty"
    assert (h.grid, h.block) == ("(19, 13, 1)", "(16, 16, 1)")


def test_cudamallocpitch_of_an_unknown_width_says_so_in_one_line(tmp_path):
    text = PITCH.replace("WIDTH", "300").replace("int main()", "size_t row_bytes(int w);\nint main()").replace(
        "cudaMallocPitch((void**)&src, &sp, w, h)", "cudaMallocPitch((void**)&src, &sp, row_bytes(w), h)")
    with pytest.raises(HarnessError) as e:
        infer_cuda_harness(_write(tmp_path, text), "transpose_u8")
    msg = e.value.message
    assert "cannot size `src`" in msg and "cudaMallocPitch width or rows `row_bytes(w), h`" in msg, msg
    assert "\n" not in msg


HELPER = r"""
#include <cstdint>
constexpr int kThreads = 512;
BODY
__global__ void scale(int64_t n, const float* x, float* y) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    for (; i < n; i += (int64_t)blockDim.x * gridDim.x) y[i] = 2.f * x[i];
}
int main() {
    const int64_t n = (int64_t(1) << 24) + 3;
    float *x, *y;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    scale<<<get_blocks(n), kThreads>>>(n, x, y);
    return 0;
}
"""


@pytest.mark.parametrize("body, grid", [
    ("static int get_blocks(int64_t n) { return (n + 255) / 256; }", 65537),
    ("inline int64_t get_blocks(int64_t numel, int64_t threads = kThreads) {\n"
     "    int64_t b = (numel + threads - 1) / threads;\n    return b < 4096 ? b : 4096;\n}", 4096),
    ("static int get_blocks(int64_t n) {\n    int b = (n + 511) / 512;\n    if (b > 1024) {\n        b = 1024;\n"
     "    }\n    return b;\n}", 1024),
    ("static int get_blocks(int64_t n) {\n    if (n < 1000) return 1;\n    else return 7;\n}", 7),
])
def test_a_host_helper_of_numbers_computes_the_grid(tmp_path, body, grid):
    h = infer_cuda_harness(_write(tmp_path, HELPER.replace("BODY", body)), "scale")
    assert (h.grid, h.block) == (f"({grid}, 1, 1)", "(512, 1, 1)")
    assert _inputs(h)["x"].shape == [(1 << 24) + 3]


def test_a_host_helper_with_a_loop_is_named_with_what_stops_it(tmp_path):
    body = "static int get_blocks(int64_t n) {\n    int b = 1;\n    while (b * 256 < n) b *= 2;\n    return b;\n}"
    with pytest.raises(HarnessError) as e:
        infer_cuda_harness(_write(tmp_path, HELPER.replace("BODY", body)), "scale")
    msg = e.value.message
    assert "calls get_blocks, which htam does not evaluate (its body has a while statement at line" in msg
    assert "\n" not in msg


LAMBDA = r"""
__global__ void dgemv_n(int m, int n, double alpha, const double* A, int lda, const double* x, double beta,
                        double* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m) { double s = 0; for (int j = 0; j < n; ++j) s += A[i * lda + j] * x[j]; y[i] = alpha * s + beta * y[i]; }
}
int main() {
    const int m = 1000, n = 300, lda = 304;
    double *A, *x, *y;
    cudaMalloc(&A, m * lda * sizeof(double));
    cudaMalloc(&x, n * sizeof(double));
    cudaMalloc(&y, m * sizeof(double));
    cudaMemcpy(y, A, m * sizeof(double), cudaMemcpyHostToDevice);
    auto launch = [&](double alpha, double beta) {
        const int threads = 128;
        dgemv_n<<<(m + threads - 1) / threads, threads>>>(m, n, alpha, A, lda, x, beta, y);
    };
    CALL
    return 0;
}
"""


def test_a_launch_inside_a_stored_lambda_reads_its_locals_and_arguments(tmp_path):
    h = infer_cuda_harness(_write(tmp_path, LAMBDA.replace("CALL", "launch(1.5, 0.5);")), "dgemv_n")
    ins = _inputs(h)
    assert (h.grid, h.block) == ("(8, 1, 1)", "(128, 1, 1)")
    assert ins["alpha"].value == 1.5 and ins["beta"].value == 0.5
    assert ins["A"].shape == [1000 * 304] and ins["x"].shape == [300] and ins["y"].shape == [1000]
    assert h.sizes == [{"m": 1000, "n": 300, "lda": 304}] and h.outputs == ["y"]


def test_a_lambda_never_called_says_so_in_one_line(tmp_path):
    with pytest.raises(HarnessError) as e:
        infer_cuda_harness(_write(tmp_path, LAMBDA.replace("CALL", "")), "dgemv_n")
    assert "inside the lambda `launch`" in e.value.message and "never called" in e.value.message
    assert "\n" not in e.value.message


FUNCTOR = r"""
#include <cstdio>
__global__ void gram(const float* A, float* G, int n, int k) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < n && c < n) { float s = 0; for (int t = 0; t < k; ++t) s += A[r * k + t] * A[c * k + t]; G[r * n + c] = s; }
}
struct GramLauncher {
    dim3 block;
    int shift = 0;
    void operator()(const float* A, float* G, int n, int k) const {
        dim3 grid((n + block.x - 1) / block.x, (n + block.y - 1) / block.y);
        gram<<<grid, block>>>(A, G, n, k);
    }
};
DRIVER
int main() {
    const int n = 500, k = 64;
    float *A, *G;
    cudaMalloc(&A, n * k * sizeof(float));
    cudaMalloc(&G, n * n * sizeof(float));
    MAIN
    return 0;
}
"""


@pytest.mark.parametrize("driver, main, grid, block", [
    ("", "GramLauncher launch{dim3(16, 16)};\n    launch(A, G, n, k);", "(32, 32, 1)", "(16, 16, 1)"),
    ("", "GramLauncher launch{{32, 8}};\n    launch(A, G, n, k);", "(16, 63, 1)", "(32, 8, 1)"),
    ("", "GramLauncher launch;\n    launch.block = dim3(8, 8);\n    launch(A, G, n, k);", "(63, 63, 1)", "(8, 8, 1)"),
    ("static void run(const float* A, float* G, int n, int k) {\n    GramLauncher go{dim3(32, 32)};\n"
     "    go(A, G, n, k);\n}", "run(A, G, n, k);", "(16, 16, 1)", "(32, 32, 1)"),
])
def test_a_launch_in_a_functors_call_operator_reads_the_objects_members(tmp_path, driver, main, grid, block):
    h = infer_cuda_harness(_write(tmp_path, FUNCTOR.replace("DRIVER", driver).replace("MAIN", main)), "gram")
    ins = _inputs(h)
    assert (h.grid, h.block) == (grid, block)
    assert ins["A"].shape == [500 * 64] and ins["G"].shape == [500 * 500] and h.outputs == ["G"]
    assert h.launcher is None  # a member of an object: run as a direct launch, not through a shim
    assert any("GramLauncher::operator()" in n for n in h.notes)


def test_a_functor_main_never_calls_says_so_in_one_line(tmp_path):
    with pytest.raises(HarnessError) as e:
        infer_cuda_harness(_write(tmp_path, FUNCTOR.replace("DRIVER", "").replace("MAIN", "")), "gram")
    assert "`GramLauncher::operator()`" in e.value.message and "\n" not in e.value.message


def test_a_lambda_inside_a_host_function_main_calls(tmp_path):
    text = LAMBDA.replace("int main() {", "static void run(double* A, double* x, double* y, int m, int n, int lda) {\n"
                          "    auto launch = [&](double alpha, double beta) {\n        const int threads = 256;\n"
                          "        dgemv_n<<<(m + threads - 1) / threads, threads>>>(m, n, alpha, A, lda, x, beta, y);\n"
                          "    };\n    launch(2.0, 0.0);\n}\nint main() {", 1).replace("CALL", "run(A, x, y, m, n, lda);")
    text = text.replace("    auto launch = [&](double alpha, double beta) {\n        const int threads = 128;\n"
                        "        dgemv_n<<<(m + threads - 1) / threads, threads>>>(m, n, alpha, A, lda, x, beta, y);\n"
                        "    };\n    run(", "    run(")
    h = infer_cuda_harness(_write(tmp_path, text), "dgemv_n")
    assert (h.grid, h.block) == ("(4, 1, 1)", "(256, 1, 1)") and h.launcher is None
    assert _inputs(h)["alpha"].value == 2.0 and _inputs(h)["A"].shape == [1000 * 304]
