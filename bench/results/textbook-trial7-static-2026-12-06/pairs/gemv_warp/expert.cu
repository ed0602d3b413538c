#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); return 1; } } while (0)

// y = A x, A row-major rows x cols; one warp per row, coalesced loads, shuffle reduction.
template <typename T>
__global__ void gemv_rows(const T* __restrict__ A, const T* __restrict__ x, T* __restrict__ y,
                          int64_t rows, int64_t cols) {
    int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x & 31;
    if (r >= rows) return;
    const T* a = A + r * cols;
    T acc = 0;
    for (int64_t c = lane; c < cols; c += 32) acc += a[c] * x[c];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (lane == 0) y[r] = acc;
}

int main() {
    const int64_t rows = 8192, cols = 8192;
    float *A, *x, *y;
    CHECK(cudaMalloc(&A, rows * cols * sizeof(float)));
    CHECK(cudaMalloc(&x, cols * sizeof(float)));
    CHECK(cudaMalloc(&y, rows * sizeof(float)));
    CHECK(cudaMemset(A, 0, rows * cols * sizeof(float)));
    CHECK(cudaMemset(x, 0, cols * sizeof(float)));
    gemv_rows<float><<<(unsigned)((rows * 32 + 127) / 128), 128>>>(A, x, y, rows, cols);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(A)); CHECK(cudaFree(x)); CHECK(cudaFree(y));
    return 0;
}
