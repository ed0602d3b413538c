#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s\n", cudaGetErrorString(e_)); return 1; } } while (0)
#define GROUP 128

// out[i] = (q[i] - zero[g]) * scale[g], g = i / GROUP.
template <typename OutT>
__global__ void dequant_u8(const uint8_t* __restrict__ q, const float* __restrict__ scale,
                           const uint8_t* __restrict__ zero, OutT* __restrict__ out, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int64_t g = i / GROUP;
    out[i] = (OutT)(((float)q[i] - (float)zero[g]) * scale[g]);
}

int main() {
    const int64_t n = (int64_t)1 << 26;
    const int64_t groups = n / GROUP;
    uint8_t *q, *zero;
    float *scale, *out;
    CHECK(cudaMalloc(&q, n));
    CHECK(cudaMalloc(&zero, groups));
    CHECK(cudaMalloc(&scale, groups * sizeof(float)));
    CHECK(cudaMalloc(&out, n * sizeof(float)));
    CHECK(cudaMemset(q, 3, n));
    CHECK(cudaMemset(zero, 1, groups));
    CHECK(cudaMemset(scale, 0, groups * sizeof(float)));
    dequant_u8<float><<<(unsigned)((n + 255) / 256), 256>>>(q, scale, zero, out, n);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(q)); CHECK(cudaFree(zero)); CHECK(cudaFree(scale)); CHECK(cudaFree(out));
    return 0;
}
