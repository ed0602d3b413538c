// log_softmax over the last dimension, framework style: int64_t sizes, C10-like macros and a type-dispatch macro
// written here. One thread per row, three passes over the row (max, sum of exp, write).
#include <cstdio>
#include <cstdint>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>

#define MY_C10_RESTRICT __restrict__
#define MY_C10_LAUNCH_BOUNDS_1(max_threads) __launch_bounds__((max_threads))
#define MY_CUDA_CHECK(expr) do { cudaError_t e_ = (expr); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); return 1; } } while (0)

enum class ScalarType { Float, Double };
#define MY_PRIVATE_CASE_TYPE(enum_type, type, ...) \
    case enum_type: { using scalar_t = type; __VA_ARGS__(); break; }
#define MY_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...)                              \
    [&] {                                                                          \
        switch (TYPE) {                                                            \
            MY_PRIVATE_CASE_TYPE(ScalarType::Float, float, __VA_ARGS__)            \
            MY_PRIVATE_CASE_TYPE(ScalarType::Double, double, __VA_ARGS__)          \
            default: fprintf(stderr, "%s: unsupported type\n", NAME);             \
        }                                                                          \
    }()

constexpr int kThreads = 128;

template <typename scalar_t, typename accscalar_t>
__global__ void MY_C10_LAUNCH_BOUNDS_1(kThreads)
log_softmax_forward_kernel(scalar_t* MY_C10_RESTRICT output, const scalar_t* MY_C10_RESTRICT input,
                           int64_t outer_size, int64_t dim_size) {
    int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= outer_size) return;
    const scalar_t* in = input + row * dim_size;
    scalar_t* out = output + row * dim_size;
    accscalar_t max_input = -INFINITY;
    for (int64_t d = 0; d < dim_size; ++d) max_input = max(max_input, (accscalar_t)in[d]);
    accscalar_t sum = 0;
    for (int64_t d = 0; d < dim_size; ++d) sum += exp((accscalar_t)in[d] - max_input);
    accscalar_t log_sum = log(sum);
    for (int64_t d = 0; d < dim_size; ++d) out[d] = (scalar_t)((accscalar_t)in[d] - max_input - log_sum);
}

int main() {
    const int64_t outer = 16384, dim = 1024;
    const int64_t numel = outer * dim;
    std::vector<float> h(numel), r(numel);
    for (int64_t i = 0; i < numel; ++i) h[i] = (float)((i * 17) % 97) / 13.0f - 3.0f;
    void *in = nullptr, *out = nullptr;
    MY_CUDA_CHECK(cudaMalloc(&in, numel * sizeof(float)));
    MY_CUDA_CHECK(cudaMalloc(&out, numel * sizeof(float)));
    MY_CUDA_CHECK(cudaMemcpy(in, h.data(), numel * sizeof(float), cudaMemcpyHostToDevice));
    ScalarType dtype = ScalarType::Float;
    MY_DISPATCH_FLOATING_TYPES(dtype, "log_softmax", [&] {
        using accscalar_t = scalar_t;
        int64_t blocks = (outer + kThreads - 1) / kThreads;
        log_softmax_forward_kernel<scalar_t, accscalar_t><<<(unsigned)blocks, kThreads>>>(
            static_cast<scalar_t*>(out), static_cast<const scalar_t*>(in), outer, dim);
    });
    MY_CUDA_CHECK(cudaGetLastError());
    MY_CUDA_CHECK(cudaMemcpy(r.data(), out, numel * sizeof(float), cudaMemcpyDeviceToHost));
    double sum = 0.0;
    for (int64_t i = 0; i < numel; ++i) sum += r[i] * (double)((i % 5) + 1);
    printf("checksum = %.6f\n", sum);
    MY_CUDA_CHECK(cudaFree(in));
    MY_CUDA_CHECK(cudaFree(out));
    return 0;
}
