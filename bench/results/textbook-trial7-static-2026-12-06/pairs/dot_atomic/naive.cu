#include <cuda_runtime.h>
#include <cstdio>
#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s\n", cudaGetErrorString(e_)); return 1; } } while (0)

// *result += sum_i a[i] * b[i]; every thread adds its product atomically.
__global__ void dot_atomic(const float* __restrict__ a, const float* __restrict__ b, float* result, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(result, a[i] * b[i]);
}

int main() {
    size_t n = (size_t)1 << 24;
    float *a, *b, *r;
    CHECK(cudaMalloc(&a, n * sizeof(float)));
    CHECK(cudaMalloc(&b, n * sizeof(float)));
    CHECK(cudaMalloc(&r, sizeof(float)));
    CHECK(cudaMemset(a, 0, n * sizeof(float)));
    CHECK(cudaMemset(b, 0, n * sizeof(float)));
    CHECK(cudaMemset(r, 0, sizeof(float)));
    dot_atomic<<<(unsigned)((n + 255) / 256), 256>>>(a, b, r, n);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(a)); CHECK(cudaFree(b)); CHECK(cudaFree(r));
    return 0;
}
