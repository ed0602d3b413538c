#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); return 1; } } while (0)

// y = A x, A row-major rows x cols; one thread per row.
template <typename T>
__global__ void gemv_rows(const T* __restrict__ A, const T* __restrict__ x, T* __restrict__ y,
                          int64_t rows, int64_t cols) {
    int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    T acc = 0;
    for (int64_t c = 0; c < cols; ++c) acc += A[r * cols + c] * x[c];
    y[r] = acc;
}

int main() {
    const int64_t rows = 8192, cols = 8192;
    float *A, *x, *y;
    CHECK(cudaMalloc(&A, rows * cols * sizeof(float)));
    CHECK(cudaMalloc(&x, cols * sizeof(float)));
    CHECK(cudaMalloc(&y, rows * sizeof(float)));
    CHECK(cudaMemset(A, 0, rows * cols * sizeof(float)));
    CHECK(cudaMemset(x, 0, cols * sizeof(float)));
    gemv_rows<float><<<(unsigned)((rows + 127) / 128), 128>>>(A, x, y, rows, cols);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(A)); CHECK(cudaFree(x)); CHECK(cudaFree(y));
    return 0;
}
